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
import errno
import os
import shutil
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
    p = common.ArgumentParser(
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
    p.add_argument("--num_shards", type=int, default=1,
                   help="Shards for a pattern output_file. With --runner, 0 lets the runner choose: each worker "
                        "writes the records it builds to its own files (no regrouping of the records: the "
                        "fastest on a cluster; the file count is the runner's).")
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
    p.add_argument("--runner",
                   help="Build with an Apache Beam pipeline on this runner (DirectRunner, DataflowRunner, "
                        "FlinkRunner, SparkRunner ...; needs the [beam] extra); other Beam pipeline options "
                        "(--direct_num_workers 2, --project ...) are passed on. Default: in this process, "
                        "shard by shard.")
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
    if args.num_shards < 1 and not (args.num_shards == 0 and args.runner):
        parser.error(f"--num_shards must be >= 1 (or 0 with --runner: the runner's choice), got {args.num_shards}")
    if args.ngram < 1:
        parser.error(f"--ngram must be >= 1, got {args.ngram}")
    if not os.path.isfile(args.vocab_file):
        parser.error(f"--vocab_file not found: {args.vocab_file}")
    common.check_vocabulary(parser, "--vocab_file", args.vocab_file)
    if args.max_line_chars < 1:
        parser.error(f"--max_line_chars must be >= 1, got {args.max_line_chars}")
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
    common.check_corpus(parser, args.input_files, "--input_file", max_line_chars=args.max_line_chars)
    check_outputs(parser, args)


def check_outputs(parser, args):
    """Every output file must be new and its folder writable (exit 2 before any work)."""
    if args.num_shards == 0:  # the runner names the files: none of any shard count may exist yet
        import glob

        from keras_pretrain.data.tfrecords import shard_glob

        args.output_files = []
        existing = sorted(glob.glob(shard_glob(args.output_file)))
        if existing:
            parser.error(f"--output_file: {existing[0]} already exists ({len(existing)} files match "
                         f"{args.output_file}); nothing is overwritten (remove them or choose another name)")
        folders = {os.path.dirname(os.path.abspath(args.output_file))}
    else:
        try:
            args.output_files = output_files(args)
        except (KeyError, IndexError, ValueError) as e:
            parser.error(f"--output_file: bad pattern {args.output_file!r} ({e!r}); use {{shard}} and {{num_shards}}")
        if len(set(args.output_files)) != len(args.output_files):
            parser.error(f"--output_file: the same file appears twice in {args.output_files}")
        for path in args.output_files:
            if os.path.lexists(path):
                parser.error(f"--output_file: {path} already exists; nothing is overwritten (remove it or choose another name)")
        folders = dict.fromkeys(os.path.dirname(os.path.abspath(path)) for path in args.output_files)
    for folder in folders:
        try:
            os.makedirs(folder, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
                pass
        except OSError as e:
            parser.error(f"--output_file: cannot write in {folder} ({e.strerror or e})")


def output_files(args):
    from keras_pretrain.data.tfrecords import shard_paths

    if "," in args.output_file:
        return [p for p in args.output_file.split(",") if p]
    return shard_paths(args.output_file, args.num_shards)


def settings_from(args):
    from keras_pretrain.data.shards import StaticDataSettings

    return StaticDataSettings(
        vocab_file=args.vocab_file, lowercase=args.do_lower_case, objective=args.objective,
        masking=args.masking, max_seq_length=args.max_seq_length,
        max_predictions_per_seq=args.max_predictions_per_seq, masked_lm_prob=args.masked_lm_prob,
        dupe_factor=args.dupe_factor, short_seq_prob=args.short_seq_prob, random_seed=args.random_seed,
        ngram=args.ngram, segmenter=args.segmenter, phrases_file=args.phrases_file,
        entities_file=args.entities_file, sentence_split=args.sentence_split, strict=args.strict,
        max_line_chars=args.max_line_chars,
    )


def summary(counts, args, seconds):
    """The closing line of a run (in-process or Beam), from the counts of `keras_pretrain.data.shards`."""
    return (
        f"Wrote {counts['instances']} instances (files={counts['files']}, empty_files={counts['empty_files']}, "
        f"documents={counts['documents']}, empty_documents={counts['empty_documents']}, "
        f"invalid_utf8_lines={counts['invalid_utf8_lines']}, overlong_lines={counts['overlong_lines']}, "
        f"dupe_factor={args.dupe_factor}, objective={args.objective}, masking={args.masking}; "
        f"label 1: {counts['random_next']}, masked positions: {counts['masked_positions']}) in {seconds:.1f} s"
    )


def build_in_process(parser, args, start):
    """Shard by shard: each input file read, built and written (round-robin over the outputs) before the
    next; `.partial` files renamed at the end, so a failed run leaves no output and replaces nothing."""
    import tensorflow as tf

    from keras_pretrain.data.corpus import CorpusStats
    from keras_pretrain.data.shards import COUNTERS, ShardBuilder, describe_record
    from keras_pretrain.errors import ConfigError

    try:
        builder = ShardBuilder(settings_from(args), common.wordpiece_tokenizer)
    except ConfigError as e:
        parser.error(f"--vocab_file {e}")
    files = args.output_files
    partial = [f"{path}.partial-{os.getpid()}" for path in files]
    counts = dict.fromkeys(COUNTERS, 0)
    stats = CorpusStats()
    printed = 0
    def full_or_failed(error, path):  # TensorFlow's write errors as the OSError they are, naming the file
        code = errno.ENOSPC if isinstance(error, tf.errors.ResourceExhaustedError) else errno.EIO
        return OSError(code, os.strerror(code) if code == errno.ENOSPC else (error.message or type(error).__name__),
                       path)

    try:
        try:
            writers = [tf.io.TFRecordWriter(path) for path in partial]
        except tf.errors.OpError as e:
            raise full_or_failed(e, os.path.dirname(os.path.abspath(partial[0]))) from None
        try:
            for index, path in enumerate(args.input_files):
                result = builder.build(index, path)
                stats.merge(result.stats)
                for name, value in result.counts().items():
                    counts[name] += value
                print(f"shard {index + 1}/{len(args.input_files)} {path}: {result.instances} instances "
                      f"({result.stats.documents} documents)", flush=True)
                for record in result.records[: max(0, args.num_examples_to_print - printed)]:
                    print("*** Example ***")
                    print(describe_record(record, builder.vocabulary), end="")
                    printed += 1
                for i, record in enumerate(result.records, start=counts["instances"] - result.instances):
                    try:
                        writers[i % len(writers)].write(record)
                    except tf.errors.OpError as e:
                        raise full_or_failed(e, partial[i % len(writers)]) from None
        finally:
            closing = None
            for writer, path in zip(writers, partial):
                try:
                    writer.close()
                except tf.errors.OpError as e:  # the last buffered records are written here
                    closing = closing or full_or_failed(e, path)
            if closing is not None and sys.exc_info()[0] is None:
                raise closing
        print(f"*** Read corpus: {stats} ***")
        for issue in stats.issues[:10]:
            print(f"skipped {issue}")
        if not counts["instances"]:
            parser.error(f"--input_file: no instance could be built from {args.input_files} "
                         f"(documents={stats.documents}, sentences={stats.sentences}); use more text or a "
                         f"smaller --max_seq_length")
        print(f"*** Writing to output files ({len(files)}) ***")
        for tmp, path in zip(partial, files):
            print(f"  {path}")
            if os.path.lexists(path):
                raise FileExistsError(f"{path} appeared while writing; it was left as it is")
            os.replace(tmp, path)
    finally:
        for tmp in partial:
            with contextlib.suppress(OSError):
                os.remove(tmp)
    print(summary(counts, args, time.time() - start))
    return 0


def build_with_beam(parser, args, beam_args, start):
    """The same shards, built by an Apache Beam pipeline on `--runner`; refuses to overwrite as in-process."""
    try:
        import apache_beam as beam
        from apache_beam.io.filesystems import FileSystems
        from apache_beam.options.pipeline_options import PipelineOptions
    except ImportError:
        parser.error("--runner needs Apache Beam: pip install 'keras-pretrain[beam]'")
    from keras_pretrain.data import beam as static_beam
    from keras_pretrain.data.tfrecords import shard_glob, shard_paths
    from keras_pretrain.errors import ConfigError

    local = not any("://" in p for a in args.input_file for p in a.split(","))
    if local:
        check_args(parser, args)  # also every local output is new and its folder writable
    else:
        try:
            args.input_files = static_beam.match_files([p for a in args.input_file for p in a.split(",") if p])
        except (OSError, ValueError) as e:
            parser.error(f"--input_file: {e}")
        if args.num_shards < 0:
            parser.error(f"--num_shards must be >= 0 with --runner (0: the runner's choice), got {args.num_shards}")
        args.output_files = shard_paths(args.output_file, args.num_shards)
    if "," in args.output_file:
        parser.error("--output_file: with --runner, give a pattern ({shard}, {num_shards}) or a prefix, not a list")
    for path in args.output_files:
        if FileSystems.exists(path):
            parser.error(f"--output_file: {path} already exists; nothing is overwritten (remove it or choose another name)")
    if not args.num_shards:
        existing = FileSystems.match([shard_glob(args.output_file)])[0].metadata_list
        if existing:
            parser.error(f"--output_file: {existing[0].path} already exists ({len(existing)} files match "
                         f"{args.output_file}); nothing is overwritten (remove them or choose another name)")
    try:
        static_beam.output_layout(args.output_file, args.num_shards)
        settings = settings_from(args)
    except ConfigError as e:
        parser.error(f"--output_file: {e}")
    options = list(beam_args) + ["--runner", args.runner]
    if (args.runner == "DirectRunner" and "--direct_running_mode" not in " ".join(beam_args)
            and any(a.startswith("--direct_num_workers") for a in beam_args)):
        options += ["--direct_running_mode", "multi_processing"]  # real parallelism, not threads
    outputs = f"{len(args.output_files)} files" if args.num_shards else "the runner's files"
    print(f"*** Beam pipeline on {args.runner}: {len(args.input_files)} shards -> {outputs} ***", flush=True)
    folder = os.path.dirname(os.path.abspath((args.output_files or [args.output_file])[0])) if local else None
    before = set(os.listdir(folder)) if folder else set()
    try:
        pipeline = beam.Pipeline(options=PipelineOptions(options))
        static_beam.static_data(pipeline, args.input_files, settings, args.output_file, args.num_shards,
                                common.wordpiece_tokenizer)
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as e:  # a worker's error (bad input with --strict, a missing file) ends the run
        if folder:  # the sink's temporary files of this run; finished outputs are only renamed on success
            for name in set(os.listdir(folder)) - before:
                if name.startswith("beam-temp-"):
                    shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
        message = str(e).strip().splitlines()
        print(f"create_pretraining_data: the Beam pipeline failed: {message[-1] if message else type(e).__name__}",
              file=sys.stderr)
        return 1
    counts = static_beam.counters(result)
    missing = [p for p in args.output_files if not FileSystems.exists(p)]
    if not args.num_shards:
        args.output_files = sorted(m.path for m in FileSystems.match([shard_glob(args.output_file)])[0].metadata_list)
        missing = [] if args.output_files else [args.output_file]
    if missing:
        print(f"create_pretraining_data: the pipeline did not write {missing}", file=sys.stderr)
        return 1
    for path in args.output_files:
        print(f"  {path}")
    print(summary(counts, args, time.time() - start))
    return 0


def main(argv=None):
    # Arguments are parsed and checked before anything imports TensorFlow (`--help` and usage errors answer at
    # once); the signal handling (keras_pretrain.training) comes with the run.
    parser = build_parser()
    args, beam_args = parser.parse_known_args(argv)
    if beam_args and not args.runner:
        parser.error(f"unrecognized arguments: {' '.join(beam_args)} (Beam pipeline options need --runner)")
    if not args.runner:
        check_args(parser, args)
    with common.stop_on_signals():
        try:
            return _main(parser, args, beam_args)
        except common.Interrupted as e:
            print(f"create_pretraining_data: stopped by {e.name}; no output file was written", file=sys.stderr)
            return common.interrupted_exit_code(e)
        except Exception as e:  # a full disk, a folder made read-only after the checks: one line, outputs untouched
            e = common.as_os_error(e)  # TensorFlow's TFRecord writer raises its own errors
            if e is None:
                raise
            problem = f"{e.filename}: {common.os_error_reason(e)}" if e.filename else common.os_error_reason(e)
            print(f"create_pretraining_data: error: {problem}; no output file was written or replaced", file=sys.stderr)
            return 1


def _main(parser, args, beam_args):
    start = time.time()
    if args.runner:
        return build_with_beam(parser, args, beam_args, start)
    from keras_pretrain.errors import KerasPretrainError

    try:
        return build_in_process(parser, args, start)
    except KerasPretrainError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
