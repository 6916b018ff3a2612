"""Fine-tune a pretrained model on a labelled dataset and export the classifier.

    python -m recipes.finetune --from runs/albert-... --task classify
    python -m recipes.finetune --from runs/bert-... --task pair --data my_pairs.tsv

`--from` is a pretraining run folder (from `recipes.pretrain`, any family), a
module folder (from `hub_modules.export`), or a published release in any format
`keras_pretrain.convert.load` reads (a Hugging Face folder, Google's TF1 BERT /
ALBERT / XLNet checkpoints or archives, bilm-tf ELMo, OpenAI GPT-1, fairseq
RoBERTa; the family and format are printed). Each family gets its own head and
input format: BERT / ERNIE (pooled [CLS]), ALBERT (pooled [CLS]), RoBERTa and
DistilBERT (their first-token heads; RoBERTa pairs `<s> A </s></s> B </s>`),
XLNet (last-token summary, left padding, `A <sep> B <sep> <cls>`), GPT-1
(start / delimiter / extract tokens added to the vocabulary, the auxiliary LM
loss, lambda 0.5), ELMo (frozen biLM, trained scalar mix, mean over tokens,
linear layer; a pair is read as `A ||| B`). Data: a TSV/CSV file with a header,
`label,text` for `classify` and `label,text_a,text_b` for `pair`; by default
the bundled `corpus/classify.tsv` (4 topics) or `corpus/pairs.tsv`
(next-sentence pairs). The classifier is saved as `.keras` and exported as a
serving SavedModel in TensorFlow Serving's layout, `classifier/1/`: its
`serving_default` takes strings (`text`, or `text_a` and `text_b`), tokenizes
them in the same graph (tensorflow-text ops: `import tensorflow_text` before
loading) and returns `logits`, `probabilities`, `label_ids` and `labels`
(GPT's takes the token ids of `transform_inputs`: its BPE runs in Python).
"""

import argparse
import csv
import json
import os
import sys
import time

from keras_pretrain.data.packing import GPT
from keras_pretrain.data.packing import truncate  # noqa: F401 (recipes.finetune.truncate, as before)
from recipes import common

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "corpus")
DEFAULT_DATA = {"classify": os.path.join(CORPUS, "classify.tsv"), "pair": os.path.join(CORPUS, "pairs.tsv")}
COLUMNS = {"classify": ["label", "text"], "pair": ["label", "text_a", "text_b"]}


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m recipes.finetune", description=__doc__,
                                     formatter_class=common.HelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="pretraining run folder, module folder, or a published release (folder, archive or checkpoint in any format keras_pretrain.convert.load reads)")
    parser.add_argument("--task", default="classify", choices=["classify", "pair"], help="one text per row, or a pair")
    parser.add_argument("--data", default=None, help="TSV/CSV with a header (None: the bundled dataset of the task)")
    parser.add_argument("--epochs", type=int, default=3, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size")
    parser.add_argument("--seq-length", type=int, default=64, help="packed length (at most the model's positions)")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="AdamW rate (1e-3 suits the tiny models; ~3e-5 for base-sized ones)")
    parser.add_argument("--validation-fraction", type=float, default=0.2, help="held-out fraction")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--out", default=None, help="output folder, must be new (None: <from>/finetune-<task>-<time> for a run or module, runs/finetune-<task>-<time> for a release)")
    parser.add_argument("--verbose", type=int, default=2, help="Keras progress: 0 silent, 1 bar, 2 a line per epoch")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="override the tokenizer's casing (default: as the run or module saved it)")
    return parser


def read_table(parser, path, task):
    """Rows of the labelled file as dicts; exits 2 with a clear message on bad input."""
    if not os.path.isfile(path):
        parser.error(f"--data: no such file {path!r}")
    delimiter = "\t" if path.endswith((".tsv", ".txt")) else ","
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f, delimiter=delimiter))
    except UnicodeDecodeError as e:
        parser.error(f"--data: {path} is not UTF-8 ({e})")
    if not rows:
        parser.error(f"--data: {path} holds no rows")
    missing = [c for c in COLUMNS[task] if c not in rows[0]]
    if missing:
        parser.error(f"--data: {path} lacks column(s) {missing}; found {list(rows[0])} (task {task} needs {COLUMNS[task]})")
    for i, row in enumerate(rows, start=2):
        if any(not (row.get(c) or "").strip() for c in COLUMNS[task]):
            parser.error(f"--data: {path} line {i}: empty field")
    return rows


GPT_SPECIAL_TOKENS = list(GPT.special_tokens)


def load_pretrained(parser, source, lowercase=None):
    """(family, backbone, tokenizer) from a pretraining run folder or a module folder.

    `lowercase` (None: as saved) overrides the tokenizer's casing.
    """
    import keras

    import hub_modules
    from keras_pretrain import families

    families.import_all()
    if os.path.exists(os.path.join(source, "metadata.json")):
        model = hub_modules.loading.load_model(source)
        _, metadata = hub_modules.read_metadata(source)
        tokenizer = hub_modules.load_tokenizer(source, lowercase) if metadata.get("tokenizer") else None
        return metadata["family"], getattr(model, "backbone", model), tokenizer
    model_path = os.path.join(source, "pretrainer.keras")
    run_path = os.path.join(source, common.RUN_FILE)
    if not os.path.exists(model_path):
        return load_release(parser, source, lowercase)
    config = {}
    if os.path.exists(run_path):
        with open(run_path) as f:
            config = json.load(f)["config"]
    model = keras.models.load_model(model_path, compile=False)
    family = families.family_of(model).name
    stated = (config.get("lowercase"), run_path)
    return family, model.backbone, run_tokenizer(parser, source, family, lowercase, stated)


def load_release(parser, source, lowercase=None):
    """(family, backbone, tokenizer) of a published release (`keras_pretrain.convert.load`, printed)."""
    from keras_pretrain import convert
    from keras_pretrain import families
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.errors import ConfigError

    from keras_pretrain.checkpoints.formats import detect

    try:
        family = detect(source).family
        if lowercase is not None and not (families.get(family).casing and not families.get(family).vocabulary.characters):
            parser.error(f"--from: --lowercase does not apply to {source!r} (its {family} tokenizer has no "
                         "casing option)")
        model, tokenizer = convert.load(source, task=False, **({} if lowercase is None else {"lowercase": lowercase}))
    except (CheckpointFormatError, ConfigError) as e:
        parser.error(f"--from: {source!r} is not a pretraining run (pretrainer.keras), a module folder "
                     f"(metadata.json) or a release keras_pretrain.convert.load reads: {e}")
    if families.get(family).vocabulary.characters:
        tokenizer = None  # ELMo reads characters: words are split in `encode`
    elif tokenizer is None:
        parser.error(f"--from: {source!r} holds no tokenizer files (vocabulary) beside the weights")
    return family, getattr(model, "backbone", model), tokenizer


def run_tokenizer(parser, source, family, lowercase, stated=(None, None)):
    """The tokenizer a pretraining run saved beside its model (casing: `lowercase`, else the run's)."""
    from keras_pretrain import families

    vocabulary = families.get(family).vocabulary
    if vocabulary.characters:
        return None  # ELMo reads characters: words are split in `encode`
    if vocabulary.from_folder:
        return families.get(family).tokenizer_class.from_folder(source)
    from keras_pretrain.models.bert import BertTokenizer

    vocab = os.path.join(source, "vocab.txt")
    if not os.path.exists(vocab):
        parser.error(f"--from: {source!r} has no vocab.txt")
    from keras_pretrain.casing import choose_lowercase

    lowercase = choose_lowercase(vocab, lowercase, stated=stated[0], stated_by=stated[1], vocab=vocab)
    return BertTokenizer(vocabulary=vocab, lowercase=lowercase)


def preprocessor(family, tokenizer):
    """The family's text preprocessor (`keras_pretrain.tasks.preprocessing`): tokenizer + packing."""
    from keras_pretrain import families

    family = families.get(family)
    return family.preprocessor_class(family, tokenizer)


def pack(family, segments, special, seq_length):
    """One row: (token ids, segment ids) in the family's packing, unpadded (segments trimmed round-robin, as
    the serving SavedModel does)."""
    from keras_pretrain import families

    return families.get(family).packing.pack_lists(segments, *special, seq_length=seq_length)


def encode(family, tokenizer, columns, seq_length, special=None):
    """Model inputs (NumPy arrays) for the text columns (one, or two for pairs)."""
    return preprocessor(family, tokenizer).encode(columns, seq_length, special)


def build_classifier(family, backbone, tokenizer, num_classes, task, seed):
    """(classifier, special-token ids for `encode`) for the family."""
    return preprocessor(family, tokenizer).build_classifier(backbone, num_classes, task == "pair", seed)


def accuracy(metrics):
    """The classification accuracy among `evaluate`'s results (GPT names it per output)."""
    return next(v for k, v in metrics.items() if k.endswith("accuracy"))


def export_classifier(classifier, out_path, tokenizer, labels, pair, seq_length):
    """The serving SavedModel (strings in, in TensorFlow Serving's `NAME/1` layout), from any backend.

    Written by `hub_modules.exporting.export_serving` (a TensorFlow
    subprocess under JAX or PyTorch); returns its description.
    """
    from hub_modules.exporting import export_serving

    return export_serving(classifier, out_path, tokenizer=tokenizer, labels=labels, pair=pair,
                          seq_length=seq_length)


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "seq_length"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if not 0 < args.validation_fraction < 1:
        parser.error("--validation-fraction must be between 0 and 1")
    if not os.path.exists(args.source):
        parser.error(f"--from: no such folder or file {args.source!r}")
    rows = read_table(parser, args.data or DEFAULT_DATA[args.task], args.task)
    ours = any(os.path.exists(os.path.join(args.source, n)) for n in ("pretrainer.keras", "metadata.json"))
    runs = args.source if ours else "runs"  # a published release's folder is left as it is
    out = args.out or os.path.join(runs, f"finetune-{args.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if os.path.exists(out) and os.listdir(out):
        parser.error(f"--out: {out!r} already holds files; choose a new folder (nothing is overwritten)")

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_pretrain.optimizers import AdamW

    keras.utils.set_random_seed(args.seed)
    family, backbone, tokenizer = load_pretrained(parser, args.source, args.lowercase)
    from keras_pretrain import families

    if family not in families.FAMILIES:
        parser.error(f"--from: {args.source!r} holds a {family!r} model; fine-tuning supports {families.names()}")
    labels = sorted({r["label"] for r in rows})
    label_ids = np.array([labels.index(r["label"]) for r in rows], "int32")
    order = np.random.default_rng(args.seed).permutation(len(rows))
    split = max(1, int(len(rows) * args.validation_fraction))
    classifier, special = build_classifier(family, backbone, tokenizer, len(labels), args.task, args.seed)
    seq_length = min(args.seq_length, getattr(backbone, "max_sequence_length", None) or args.seq_length)
    columns = [[r[c] for r in rows] for c in COLUMNS[args.task][1:]]
    x = encode(family, tokenizer, columns, seq_length, special)
    x = {name: x[name] for name in classifier.input}  # the inputs this classifier takes

    def dataset(indices, shuffle):
        ds = tf.data.Dataset.from_tensor_slices(({k: v[indices] for k, v in x.items()}, label_ids[indices]))
        if shuffle:
            ds = ds.shuffle(len(indices), seed=args.seed)
        return ds.batch(args.batch_size)

    train, valid = dataset(order[split:], True), dataset(order[:split], False)
    classifier.compile(optimizer=AdamW(args.learning_rate, weight_decay=0.01))
    print(f"fine-tuning {family} ({type(backbone).__name__}) on {len(rows)} rows "
          f"({args.task}, {len(labels)} labels: {labels})")
    before = classifier.evaluate(valid, verbose=0, return_dict=True)
    classifier.fit(train, validation_data=valid, epochs=args.epochs, verbose=args.verbose)
    after = classifier.evaluate(valid, verbose=0, return_dict=True)
    print(f"validation accuracy: before {accuracy(before):.3f}, after {accuracy(after):.3f}")
    os.makedirs(out, exist_ok=True)
    keras_path = os.path.join(out, "classifier.keras")
    classifier.save(keras_path)
    serving = export_classifier(classifier, os.path.join(out, "classifier", "1"), tokenizer, labels,
                                args.task == "pair", seq_length)
    summary = {"family": family, "task": args.task, "labels": labels, "before": before, "after": after,
               "accuracy_before": accuracy(before), "accuracy_after": accuracy(after), "rows": len(rows),
               "serving": serving}
    common.write_json(os.path.join(out, "summary.json"), summary)
    takes = "strings" if preprocessor(family, tokenizer).takes_strings else "token ids (its tokenizer runs in Python)"
    print(f"saved: {keras_path}; serving SavedModel ({takes} in: {', '.join(serving['inputs'])}; "
          f"logits, probabilities, label_ids, labels out): {out}/classifier/1")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
