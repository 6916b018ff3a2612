"""Fine-tune a pretrained model on a labelled dataset and export the classifier.

    python -m recipes.finetune --from runs/albert-... --task classify
    python -m recipes.finetune --from runs/bert-... --task pair --data my_pairs.tsv

`--from` is a pretraining run folder (from `recipes.pretrain`) or a module
folder (from `hub_modules.export`). Data: a TSV/CSV file with a header,
`label,text` for `classify` and `label,text_a,text_b` for `pair`; by default
the bundled `corpus/classify.tsv` (4 topics) or `corpus/pairs.tsv`
(next-sentence pairs). The classifier is saved as `.keras` and exported as a
SavedModel (token ids in, logits out).
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import time

from recipes import common

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "corpus")
DEFAULT_DATA = {"classify": os.path.join(CORPUS, "classify.tsv"), "pair": os.path.join(CORPUS, "pairs.tsv")}
COLUMNS = {"classify": ["label", "text"], "pair": ["label", "text_a", "text_b"]}


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m recipes.finetune", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="pretraining run folder or module folder")
    parser.add_argument("--task", default="classify", choices=["classify", "pair"], help="default: classify")
    parser.add_argument("--data", default=None, help="TSV/CSV with a header (default: the bundled dataset of the task)")
    parser.add_argument("--epochs", type=int, default=3, help="default: 3")
    parser.add_argument("--batch-size", type=int, default=32, help="default: 32")
    parser.add_argument("--seq-length", type=int, default=64, help="default: 64")
    parser.add_argument("--learning-rate", type=float, default=1e-3, help="default: 1e-3 (tiny models); ~3e-5 for base-sized ones")
    parser.add_argument("--validation-fraction", type=float, default=0.2, help="held-out fraction (default: 0.2)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="output folder (default: <from>/finetune-<task>-<time>); must be new")
    parser.add_argument("--verbose", type=int, default=2)
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


def load_pretrained(parser, source):
    """(backbone, tokenizer) from a run folder or a module folder."""
    import keras

    import hub_modules
    from keras_pretrain.models.bert import BertTokenizer

    if os.path.exists(os.path.join(source, "metadata.json")):
        model = hub_modules.loading.load_model(source)
        return getattr(model, "backbone", model), hub_modules.load_tokenizer(source)
    model_path = os.path.join(source, "pretrainer.keras")
    vocab = os.path.join(source, "vocab.txt")
    if not (os.path.exists(model_path) and os.path.exists(vocab)):
        parser.error(f"--from: {source!r} is neither a pretraining run (pretrainer.keras + vocab.txt) nor a module folder (metadata.json)")
    lowercase = True
    run_path = os.path.join(source, common.RUN_FILE)
    if os.path.exists(run_path):
        with open(run_path) as f:
            lowercase = json.load(f)["config"].get("lowercase", True)
    import keras_pretrain.models.albert  # noqa: F401  (registers the classes)

    model = keras.models.load_model(model_path, compile=False)
    return model.backbone, BertTokenizer(vocabulary=vocab, lowercase=lowercase)


def classifier_class(backbone):
    from keras_pretrain.models.albert import AlbertBackbone
    from keras_pretrain.models.albert import AlbertClassifier
    from keras_pretrain.models.bert import BertClassifier

    return AlbertClassifier if isinstance(backbone, AlbertBackbone) else BertClassifier


def export_classifier(keras_path, out_path):
    """A SavedModel of the classifier (TensorFlow subprocess on other backends)."""
    code = (
        "import sys, keras, keras_pretrain.models.albert, keras_pretrain.models.bert;"
        "m = keras.models.load_model(sys.argv[1], compile=False); m.preprocessor = None;"
        "m.export(sys.argv[2], format='tf_saved_model', verbose=False)"
    )
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    result = subprocess.run([sys.executable, "-c", code, keras_path, out_path], env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"exporting {keras_path} failed:\n{result.stderr[-2000:]}")
    return out_path


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    for name in ("epochs", "batch_size", "seq_length"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if not 0 < args.validation_fraction < 1:
        parser.error("--validation-fraction must be between 0 and 1")
    if not os.path.isdir(args.source):
        parser.error(f"--from: no such folder {args.source!r}")
    rows = read_table(parser, args.data or DEFAULT_DATA[args.task], args.task)
    out = args.out or os.path.join(args.source, f"finetune-{args.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if os.path.exists(out) and os.listdir(out):
        parser.error(f"--out: {out!r} already holds files; choose a new folder (nothing is overwritten)")

    import keras
    import numpy as np
    import tensorflow as tf

    from keras_pretrain.models.bert import BertPreprocessor

    keras.utils.set_random_seed(args.seed)
    backbone, tokenizer = load_pretrained(parser, args.source)
    labels = sorted({r["label"] for r in rows})
    label_ids = np.array([labels.index(r["label"]) for r in rows], "int32")
    order = np.random.default_rng(args.seed).permutation(len(rows))
    split = max(1, int(len(rows) * args.validation_fraction))
    texts = [[r[c] for r in rows] for c in COLUMNS[args.task][1:]]

    def dataset(indices, shuffle):
        x = tuple(tf.constant([t[i] for i in indices]) for t in texts)
        x = x[0] if len(x) == 1 else x
        ds = tf.data.Dataset.from_tensor_slices((x, label_ids[indices]))
        if shuffle:
            ds = ds.shuffle(len(indices), seed=args.seed)
        return ds.batch(args.batch_size)

    train, valid = dataset(order[split:], True), dataset(order[:split], False)
    preprocessor = BertPreprocessor(tokenizer, sequence_length=min(args.seq_length, backbone.max_sequence_length))
    classifier = classifier_class(backbone)(backbone, num_classes=len(labels), preprocessor=preprocessor)
    classifier.compile(optimizer=keras.optimizers.AdamW(args.learning_rate, weight_decay=0.01))
    print(f"fine-tuning {type(backbone).__name__} on {len(rows)} rows ({args.task}, {len(labels)} labels: {labels})")
    before = classifier.evaluate(valid, verbose=0, return_dict=True)
    classifier.fit(train, validation_data=valid, epochs=args.epochs, verbose=args.verbose)
    after = classifier.evaluate(valid, verbose=0, return_dict=True)
    print(f"validation accuracy: before {before['accuracy']:.3f}, after {after['accuracy']:.3f}")
    os.makedirs(out, exist_ok=True)
    keras_path = os.path.join(out, "classifier.keras")
    classifier.save(keras_path)
    export_classifier(keras_path, os.path.join(out, "savedmodel"))
    summary = {"task": args.task, "labels": labels, "before": before, "after": after, "rows": len(rows)}
    common.write_json(os.path.join(out, "summary.json"), summary)
    print(f"saved: {keras_path}; SavedModel (token ids in, logits out): {out}/savedmodel")
    return summary


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
