"""Create static pretraining data (TFRecord shards) for BERT, ALBERT, RoBERTa-style and ERNIE objectives.

The counterpart of the original Google `create_pretraining_data.py`, with the objective and the masking
chosen on the command line. Input: text files, one sentence per line, a blank line between documents.
Output: TFRecord shards with the original features (input_ids, input_mask, segment_ids,
masked_lm_positions, masked_lm_ids, masked_lm_weights, next_sentence_labels).

Example:
    python -m recipes.create_pretraining_data --input_file corpus/*.txt --vocab_file vocab.txt \\
        --output_file out/train-{shard:05d}-of-{num_shards:05d}.tfrecord --num_shards 4 \\
        --objective sop --masking ngram --max_seq_length 128 --dupe_factor 10
"""

import argparse
import contextlib
import os
import random
import sys
import tempfile
import time

from recipes import common

OBJECTIVES = ("nsp", "sop", "full_sentences", "doc_sentences")
# The most positions of the models these records are for (BERT, ALBERT,
# RoBERTa, ERNIE: 512); every instance is padded to --max_seq_length.
MAX_SEQ_LENGTH = 512
MASKINGS = ("token", "whole_word", "ngram", "knowledge")


def build_parser():
    p = argparse.ArgumentParser(
        prog="python -m recipes.create_pretraining_data",
        description="Create masked-LM pretraining TFRecords (static masking, dupe_factor copies).",
        formatter_class=common.HelpFormatter,
    )
    p.add_argument("--input_file", nargs="+", required=True,
                   help="Input text files, folders or globs (comma-separated lists allowed).")
    p.add_argument("--vocab_file", required=True, help="WordPiece vocab.txt.")
    p.add_argument("--output_file", required=True,
                   help="Output file, or a pattern with {shard} and {num_shards} fields; "
                        "comma-separated list allowed (as the original). Existing files are never overwritten.")
    p.add_argument("--num_shards", type=int, default=1, help="Shards for a pattern output_file.")
    p.add_argument("--do_lower_case", action=argparse.BooleanOptionalAction, default=True,
                   help="Lower-case (and strip accents) the input: uncased vocabularies.")
    p.add_argument("--objective", choices=OBJECTIVES, default="nsp",
                   help="nsp (BERT), sop (ALBERT), full_sentences / doc_sentences (RoBERTa, no pair task).")
    p.add_argument("--masking", choices=MASKINGS, default="token",
                   help="token (BERT), whole_word (BERT-wwm), ngram (ALBERT), knowledge (ERNIE 1.0).")
    p.add_argument("--max_seq_length", type=int, default=128, help=f"tokens per instance, at most {MAX_SEQ_LENGTH}")
    p.add_argument("--max_predictions_per_seq", type=int, default=20, help="at most this many masked positions per instance")
    p.add_argument("--masked_lm_prob", type=float, default=0.15, help="fraction of the tokens masked")
    p.add_argument("--dupe_factor", type=int, default=10,
                   help="Number of times to duplicate the input data (with different masks).")
    p.add_argument("--short_seq_prob", type=float, default=0.1, help="probability of a shorter target length (as the original)")
    p.add_argument("--random_seed", type=int, default=12345, help="seeds instances and masks")
    p.add_argument("--ngram", type=int, default=3, help="Longest n-gram for --masking ngram.")
    p.add_argument("--segmenter", choices=("none", "jieba"), default="none",
                   help="Chinese word segmenter for whole-word / knowledge masking (jieba is optional).")
    p.add_argument("--phrases_file", help="Knowledge masking: phrases, one per line.")
    p.add_argument("--entities_file", help="Knowledge masking: entities, one per line.")
    p.add_argument("--sentence_split", action="store_true",
                   help="Input lines are plain text: split them into sentences (English and Chinese).")
    p.add_argument("--strict", action="store_true",
                   help="Fail on bad input (invalid UTF-8, empty documents, overlong lines) instead of "
                        "skipping and counting it.")
    p.add_argument("--max_line_chars", type=int, default=10000, help="longer lines are bad input (skipped and counted, or refused with --strict)")
    p.add_argument("--num_examples_to_print", type=int, default=5, help="instances printed in the original readable form")
    return p


def check_args(parser, args):
    """Reject bad arguments with a clear message (exit code 2)."""
    if not 5 <= args.max_seq_length <= MAX_SEQ_LENGTH:
        parser.error(f"--max_seq_length must be in [5, {MAX_SEQ_LENGTH}] (the positions of BERT, ALBERT, "
                     f"RoBERTa and ERNIE), got {args.max_seq_length}")
    if not 1 <= args.max_predictions_per_seq <= args.max_seq_length:
        parser.error(
            f"--max_predictions_per_seq must be in [1, max_seq_length={args.max_seq_length}], "
            f"got {args.max_predictions_per_seq}"
        )
    if not 0.0 < args.masked_lm_prob <= 1.0:
        parser.error(f"--masked_lm_prob must be in (0, 1], got {args.masked_lm_prob}")
    if not 0.0 <= args.short_seq_prob <= 1.0:
        parser.error(f"--short_seq_prob must be in [0, 1], got {args.short_seq_prob}")
    if args.dupe_factor < 1:
        parser.error(f"--dupe_factor must be >= 1, got {args.dupe_factor}")
    if args.num_shards < 1:
        parser.error(f"--num_shards must be >= 1, got {args.num_shards}")
    if args.ngram < 1:
        parser.error(f"--ngram must be >= 1, got {args.ngram}")
    if not os.path.isfile(args.vocab_file):
        parser.error(f"--vocab_file not found: {args.vocab_file}")
    for flag in ("phrases_file", "entities_file"):
        path = getattr(args, flag)
        if path and not os.path.isfile(path):
            parser.error(f"--{flag} not found: {path}")
    if args.segmenter == "jieba":
        try:
            import jieba  # noqa: F401
        except ImportError:
            parser.error("--segmenter jieba needs the optional package jieba (pip install jieba)")
    from keras_pretrain.data.corpus import expand_paths

    inputs = [p for arg in args.input_file for p in arg.split(",") if p]
    try:
        args.input_files = expand_paths(inputs)
    except (FileNotFoundError, ValueError) as e:
        parser.error(f"--input_file: {e}")
    common.check_corpus(parser, args.input_files, "--input_file")
    check_outputs(parser, args)


def check_outputs(parser, args):
    """Every output file must be new and its folder writable (exit 2 before any work)."""
    try:
        args.output_files = output_files(args)
    except (KeyError, IndexError, ValueError) as e:
        parser.error(f"--output_file: bad pattern {args.output_file!r} ({e!r}); use {{shard}} and {{num_shards}}")
    if len(set(args.output_files)) != len(args.output_files):
        parser.error(f"--output_file: the same file appears twice in {args.output_files}")
    for path in args.output_files:
        if os.path.lexists(path):
            parser.error(f"--output_file: {path} already exists; nothing is overwritten (remove it or choose another name)")
        folder = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
                pass
        except OSError as e:
            parser.error(f"--output_file: cannot write in {folder} ({e.strerror or e})")


def build_tokenizer(vocab_file, lowercase):
    try:
        from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

        return BertTokenizer(vocabulary=vocab_file, lowercase=lowercase)
    except ImportError:
        import keras_hub

        return keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=vocab_file, lowercase=lowercase, strip_accents=lowercase, split_on_cjk=True
        )


def build_masking(args, vocabulary, tokenize):
    from keras_pretrain.data.masking import DEFAULT_SPECIAL_TOKENS, get_masking

    kwargs = dict(
        rate=args.masked_lm_prob,
        max_predictions=args.max_predictions_per_seq,
        vocabulary=vocabulary,
        special_tokens=DEFAULT_SPECIAL_TOKENS,
    )
    segmenter = None
    if args.segmenter == "jieba":
        import jieba

        segmenter = jieba.lcut
    if args.masking == "whole_word":
        kwargs["segmenter"] = segmenter
    elif args.masking == "ngram":
        kwargs.update(segmenter=segmenter, max_n=args.ngram)
    elif args.masking == "knowledge":
        def lexicon(path):
            if not path:
                return []
            with open(path, encoding="utf-8") as f:
                return [line.strip() for line in f if line.strip()]

        kwargs.update(
            segmenter=segmenter,
            phrases=lexicon(args.phrases_file),
            entities=lexicon(args.entities_file),
            tokenize=tokenize,
        )
    return get_masking(args.masking, **kwargs)


def output_files(args):
    from keras_pretrain.data.tfrecords import shard_paths

    if "," in args.output_file:
        return [p for p in args.output_file.split(",") if p]
    return shard_paths(args.output_file, args.num_shards)


def write_new_files(instances, files, vocabulary, args):
    """Writes `.partial` files, then renames each to its name if that is still
    free: an interrupted or failed run leaves no half-written output, and no
    existing file is replaced (a file created meanwhile is an error)."""
    from keras_pretrain.data.tfrecords import write_instances

    partial = [f"{path}.partial-{os.getpid()}" for path in files]
    try:
        count = write_instances(instances, partial, vocabulary, args.max_seq_length, args.max_predictions_per_seq)
        for tmp, path in zip(partial, files):
            if os.path.lexists(path):
                raise FileExistsError(f"{path} appeared while writing; it was left as it is")
            os.replace(tmp, path)
        return count
    finally:
        for tmp in partial:
            with contextlib.suppress(OSError):
                os.remove(tmp)


def main(argv=None):
    with common.stop_on_signals():
        try:
            return _main(argv)
        except common.Interrupted as e:
            print(f"create_pretraining_data: stopped by {e.name}; no output file was written", file=sys.stderr)
            return common.interrupted_exit_code(e)
        except OSError as e:
            print(f"create_pretraining_data: error: {e}", file=sys.stderr)
            return 1


def _main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)

    from keras_pretrain.data.corpus import CorpusStats, read_documents
    from keras_pretrain.data.pipeline import (
        create_training_instances,
        tokenize_documents,
        tokenizer_vocabulary,
    )
    from keras_pretrain.errors import KerasPretrainError

    start = time.time()
    tokenizer = build_tokenizer(args.vocab_file, args.do_lower_case)
    vocabulary = tokenizer_vocabulary(tokenizer)
    missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocabulary]
    if missing:
        parser.error(f"--vocab_file {args.vocab_file} lacks the special tokens {missing}")

    def tokenize(text):
        return [vocabulary[i] for i in tokenizer.tokenize(text)]

    stats = CorpusStats()
    try:
        documents = tokenize_documents(
            read_documents(args.input_files, strict=args.strict, sentence_split=args.sentence_split,
                           max_line_chars=args.max_line_chars, stats=stats),
            tokenizer,
        )
        masking = build_masking(args, vocabulary, tokenize)
        instances = create_training_instances(
            documents,
            objective=args.objective,
            masking=masking,
            max_seq_length=args.max_seq_length,
            dupe_factor=args.dupe_factor,
            short_seq_prob=args.short_seq_prob,
            rng=random.Random(args.random_seed),
        )
    except KerasPretrainError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"*** Read corpus: {stats} ***")
    for issue in stats.issues[:10]:
        print(f"skipped {issue}")
    if not instances:
        parser.error(f"--input_file: no instance could be built from {args.input_files} "
                     f"(documents={stats.documents}, sentences={stats.sentences}); use more text or a smaller --max_seq_length")

    for instance in instances[: args.num_examples_to_print]:
        print("*** Example ***")
        print(str(instance), end="")

    files = args.output_files
    print(f"*** Writing to output files ({len(files)}) ***")
    for path in files:
        print(f"  {path}")
    count = write_new_files(instances, files, {t: i for i, t in enumerate(vocabulary)}, args)
    labels = sum(i.is_random_next for i in instances)
    predictions = sum(len(i.masked_lm_positions) for i in instances)
    print(
        f"Wrote {count} instances (documents={stats.documents}, dupe_factor={args.dupe_factor}, "
        f"objective={args.objective}, masking={args.masking}; label 1: {labels}, "
        f"masked positions: {predictions}) in {time.time() - start:.1f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
