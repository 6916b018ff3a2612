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
import json
import os
import sys
import time

from keras_pretrain import training
from keras_pretrain.data.packing import GPT
from keras_pretrain.data.packing import truncate  # noqa: F401 (recipes.finetune.truncate, as before)
from keras_pretrain.tasks.classification import training as classification
from recipes import common
from recipes import finetune_data
from recipes import finetune_ner
from recipes import finetune_squad
from recipes import finetune_tasks

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "corpus")
DEFAULT_DATA = {"classify": os.path.join(CORPUS, "classify.tsv"), "pair": os.path.join(CORPUS, "pairs.tsv")}
DEFAULT_SEQ_LENGTH = 128


def build_parser():
    parser = common.ArgumentParser(prog="python -m recipes.finetune", description=__doc__,
                                   formatter_class=common.HelpFormatter)
    parser.add_argument("--from", dest="source", required=True, help="pretraining run folder, module folder, or a published release (folder, archive or checkpoint in any format keras_pretrain.convert.load reads)")
    parser.add_argument("--task", default="classify", choices=list(finetune_data.TASKS) + list(finetune_squad.TASKS) + list(finetune_ner.TASKS),
                        help="classify / pair / regression / multi-label (a table, --data), a GLUE task, swag or race (a task folder, --data-dir), squad-v1.1 / squad-v2.0 (JSON) or ner (CoNLL files) (--train-file, --predict-file)")
    parser.add_argument("--data", default=None, help="table tasks: TSV/CSV with a header (None: the bundled dataset of classify / pair)")
    parser.add_argument("--validation-data", default=None, help="table tasks: a validation table (None: --validation-fraction of --data)")
    parser.add_argument("--data-dir", default=None, help="GLUE / SWAG / RACE: the task folder as the download lays it out")
    parser.add_argument("--features-only", action="store_true", help="GLUE, SQuAD: write train.tf_record and eval.tf_record (the authors' features) to --out and stop")
    finetune_squad.add_arguments(parser)
    finetune_ner.add_arguments(parser)
    parser.add_argument("--epochs", type=int, default=3, help="training epochs")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size")
    parser.add_argument("--seq-length", type=int, default=None, help="packed length (default: 128, SQuAD 384; the tiny models 64; at most the model's positions)")
    parser.add_argument("--learning-rate", type=float, default=None, help="peak AdamW rate (default: 1e-3 for the tiny models, hidden < 256; 3e-5 for larger ones, as the papers)")
    parser.add_argument("--warmup-ratio", type=float, default=0.1, help="fraction of the steps of linear warmup (then linear decay to 0)")
    parser.add_argument("--weight-decay", type=float, default=0.01, help="AdamW weight decay (never on LayerNorm and biases)")
    parser.add_argument("--layer-decay", type=float, default=None, help="layer-wise learning-rate decay (XLNet / ELECTRA), e.g. 0.75; None: off")
    parser.add_argument("--patience", type=int, default=None, help="stop after this many epochs without a better validation score (None: train every epoch; the best epoch is kept either way)")
    parser.add_argument("--threshold", type=float, default=0.5, help="multi-label: a label is predicted at this probability or above")
    parser.add_argument("--validation-fraction", type=float, default=0.2, help="table tasks without --validation-data: held-out fraction")
    parser.add_argument("--seed", type=int, default=0, help="random seed")
    parser.add_argument("--out", default=None, help="output folder, must be new (None: <from>/finetune-<task>-<time> for a run or module, runs/finetune-<task>-<time> for a release)")
    parser.add_argument("--no-export", action="store_true", help="skip the serving SavedModel (classifier.keras is still saved)")
    parser.add_argument("--verbose", type=int, default=2, help="Keras progress: 0 silent, 1 bar, 2 a line per epoch")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=None,
                        help="override the tokenizer's casing (default: as the run or module saved it)")
    return parser


GPT_SPECIAL_TOKENS = list(GPT.special_tokens)


def load_pretrained(parser, source, lowercase=None):
    """(family, backbone, tokenizer) from a pretraining run folder or a module folder.

    `lowercase` (None: as saved) overrides the tokenizer's casing.
    """
    import keras

    import hub_modules
    from keras_pretrain import families

    from keras_pretrain.errors import KerasPretrainError

    families.import_all()
    if os.path.exists(os.path.join(source, "metadata.json")):
        if not os.path.isfile(os.path.join(source, "model.keras")):  # before reading anything of it
            parser.error(f"--from: {os.path.join(source, 'model.keras')}: missing; {source!r} is not a whole module "
                         "folder (hub_modules.export writes metadata.json and model.keras)")
        try:
            model = hub_modules.loading.load_model(source)
            _, metadata = hub_modules.read_metadata(source)
            tokenizer = hub_modules.load_tokenizer(source, lowercase) if metadata.get("tokenizer") else None
        except KerasPretrainError as e:
            parser.error(f"--from: {e}")
        return metadata["family"], getattr(model, "backbone", model), tokenizer
    model_path = os.path.join(source, "pretrainer.keras")
    run_path = os.path.join(source, training.RUN_FILE)
    if os.path.exists(model_path) and os.path.exists(os.path.join(source, "vocab.txt")):  # before the model loads
        common.check_vocabulary(parser, "--from", os.path.join(source, "vocab.txt"))
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
    common.check_vocabulary(parser, "--from", vocab)
    from keras_pretrain.casing import choose_lowercase

    lowercase = choose_lowercase(vocab, lowercase, stated=stated[0], stated_by=stated[1], vocab=vocab)
    return BertTokenizer(vocabulary=vocab, lowercase=lowercase)


preprocessor = classification.preprocessor  # the family's text preprocessor: tokenizer + packing
attach_keras_preprocessor = classification.attach_keras_preprocessor
pack = classification.pack
authors_style = classification.authors_style
glue_features = classification.glue_features
model_inputs = classification.model_inputs


def encode(family, tokenizer, columns, seq_length, special=None):
    """Model inputs (NumPy arrays) for the text columns (one, or two for pairs)."""
    return preprocessor(family, tokenizer).encode(columns, seq_length, special)


def build_classifier(family, backbone, tokenizer, num_classes, task, seed):
    """(classifier, special-token ids for `encode`) for the family."""
    return preprocessor(family, tokenizer).build_classifier(backbone, num_classes, task == "pair", seed)


def accuracy(metrics):
    """The classification accuracy among `evaluate`'s results (GPT names it per output)."""
    return next(v for k, v in metrics.items() if k.endswith("accuracy"))


def export_classifier(classifier, out_path, tokenizer, labels, pair, seq_length, threshold=0.5):
    """The serving SavedModel (strings in, in TensorFlow Serving's `NAME/1` layout), from any backend.

    Written by `hub_modules.exporting.export_serving` (a TensorFlow
    subprocess under JAX or PyTorch); returns its description.
    """
    from hub_modules.exporting import export_serving

    return export_serving(classifier, out_path, tokenizer=tokenizer, labels=labels, pair=pair,
                          seq_length=seq_length, threshold=threshold)


def check_arguments(parser, args):
    for name in ("epochs", "batch_size", "seq_length", "patience"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if not 0 < args.validation_fraction < 1:
        parser.error("--validation-fraction must be between 0 and 1")
    if not 0 <= args.warmup_ratio < 1:
        parser.error("--warmup-ratio must be in [0, 1)")
    if not 0 < args.threshold < 1:
        parser.error("--threshold must be between 0 and 1")
    if args.layer_decay is not None and not 0 < args.layer_decay <= 1:
        parser.error("--layer-decay must be in (0, 1]")
    if not os.path.exists(args.source):
        parser.error(f"--from: no such folder or file {args.source!r}")
    table = args.task in finetune_data.TABLE_TASKS
    if table and args.data_dir:
        parser.error(f"--data-dir: --task {args.task} reads a table (--data), not a task folder")
    if not table and (args.data or args.validation_data):
        parser.error(f"--data: --task {args.task} reads a task folder: give --data-dir")
    squad = args.task in finetune_squad.TASKS
    if squad:
        finetune_squad.check_arguments(parser, args)
    elif args.task in finetune_ner.TASKS:
        finetune_ner.check_arguments(parser, args)
    elif args.train_file or args.predict_file:
        parser.error(f"--train-file / --predict-file are SQuAD's and NER's; --task {args.task} reads "
                     + ("--data" if table else "--data-dir"))
    if args.features_only and args.task not in finetune_data.GLUE_TASKS and not squad:
        parser.error("--features-only writes the features of the authors' scripts: a GLUE or SQuAD --task only")
    if table and args.data is None:
        if args.task not in DEFAULT_DATA:
            parser.error(f"--data: --task {args.task} has no bundled dataset; give a table")
        args.data = DEFAULT_DATA[args.task]


def output_folder(parser, args):
    ours = any(os.path.exists(os.path.join(args.source, n)) for n in ("pretrainer.keras", "metadata.json"))
    runs = args.source if ours else "runs"  # a published release's folder is left as it is
    out = args.out or os.path.join(runs, f"finetune-{args.task}-{time.strftime('%Y%m%d-%H%M%S')}")
    if os.path.lexists(out) and not os.path.isdir(out):
        parser.error(f"--out: {out!r} is a file, not a folder; choose a new folder (nothing is overwritten)")
    if os.path.exists(out) and os.listdir(out):
        parser.error(f"--out: {out!r} already holds files; choose a new folder (nothing is overwritten)")
    # Writable? Checked now, without creating anything: the folder is made when the results are written.
    existing = os.path.abspath(out)
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        parser.error(f"--out: {existing!r} is a file, not a folder; cannot create {out!r}")
    if not os.access(existing, os.W_OK | os.X_OK):
        parser.error(f"--out: cannot write in {existing!r} (read-only or not permitted); choose another folder")
    return out


def write_features_only(parser, family, tokenizer, data, seq_length, out):
    style = authors_style(family)
    if style is None:
        parser.error(f"--features-only: the authors' GLUE features are BERT-style or XLNet-style; {family}'s "
                     "packing is neither (fine-tune without --features-only)")
    counts = classification.write_glue_features(family, tokenizer, data, seq_length, out)
    print(f"wrote {counts['train']} train and {counts['eval']} eval records ({style} style, length {seq_length}) "
          f"to {out}")
    return {"features": counts, "style": style, "seq_length": seq_length}


def save_model(model, path):
    """`model.save(path)` through a temporary name: a failed save (a full disk) leaves no half-written file."""
    partial = os.path.join(os.path.dirname(path), ".partial-" + os.path.basename(path))
    try:
        model.save(partial)
        os.replace(partial, path)
    finally:
        if os.path.lexists(partial):
            os.remove(partial)


def main(argv=None):
    """Runs the recipe; exit codes: 2 bad arguments or input, 1 a file that cannot be written (a full disk:
    one line naming it; the files already written are whole)."""
    try:
        return _main(argv)
    except Exception as e:  # an OSError, or TensorFlow's for a SavedModel written on a full disk
        e = training.as_os_error(e)
        if e is None:
            raise
        where = f"{e.filename}: " if getattr(e, "filename", None) else ""
        print(f"finetune: error: {where}{training.os_error_reason(e)}; the files written before are whole", file=sys.stderr)
        raise SystemExit(1) from None


def _main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    files = args.task in finetune_squad.TASKS or args.task in finetune_ner.TASKS  # --train-file, --predict-file
    data = None if files else finetune_data.read_task(parser, args)
    out = output_folder(parser, args)

    import keras
    import tensorflow  # noqa: F401 (loaded before the model, as always)

    keras.utils.set_random_seed(args.seed)
    family, backbone, tokenizer = load_pretrained(parser, args.source, args.lowercase)
    from keras_pretrain import families

    if family not in families.FAMILIES:
        parser.error(f"--from: {args.source!r} holds a {family!r} model; fine-tuning supports {families.names()}")
    limit = getattr(backbone, "max_sequence_length", None)
    if args.seq_length is not None and limit and args.seq_length > limit:
        parser.error(f"--seq-length {args.seq_length} exceeds the {limit} positions of the model in {args.source}")
    seq_length = args.seq_length or min(classification.default_seq_length(backbone), limit or 10**9)
    if args.learning_rate is None:
        args.learning_rate = classification.default_learning_rate(backbone)
    if args.task in finetune_ner.TASKS:
        return finetune_ner.main(parser, args, out, family, backbone, tokenizer, seq_length,
                                 preprocessor(family, tokenizer))
    if data is None:  # SQuAD
        if args.seq_length is None:
            seq_length = min(finetune_squad.DEFAULT_SEQ_LENGTH, limit or 10**9)
        return finetune_squad.main(parser, args, out, family, backbone, tokenizer, seq_length)
    if args.features_only:
        summary = write_features_only(parser, family, tokenizer, data, seq_length, out)
        training.write_json(os.path.join(out, "summary.json"), {"family": family, "task": args.task, **summary})
        return summary
    finetune_data.split_validation(data, args.seed, args.validation_fraction)
    if data.problem_type == finetune_data.CHOICE and not hasattr(preprocessor(family, tokenizer), "encode_choices"):
        parser.error(f"--task {args.task}: {family} has no multiple-choice task")
    text = preprocessor(family, tokenizer)
    model, special = classification.build_model(text, backbone, data, args.seed)
    style = authors_style(family) if data.glue_task else None  # GLUE: the authors' features, as --features-only

    def inputs(examples):  # the inputs this model takes
        x = classification.task_inputs(family, tokenizer, text, data, examples, seq_length, special, style)
        return {n: x[n] for n in (list(model.input) if isinstance(model.input, dict) else [model.input.name])}

    x, x_valid = inputs(data.train), inputs(data.valid)
    y, y_valid = finetune_data.label_array(data, data.train), finetune_data.label_array(data, data.valid)
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(y)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) on {len(data.train)} + {len(data.valid)} examples "
          f"({args.task}: {data.problem_type}" + (f", {len(data.labels)} labels: {data.labels}" if data.labels else "")
          + f"; rate {args.learning_rate:g}, length {seq_length})")
    fitted = classification.fit(model, data, (x, y), (x_valid, y_valid), args.epochs, args.batch_size, args.seed,
                                args.threshold, args.patience, args.verbose)
    before, after, baseline, metric = fitted.before, fitted.after, fitted.baseline, fitted.metric
    print(f"validation {metric}: before {before[metric]:.3f}, after {after[metric]:.3f} (best epoch "
          f"{fitted.best_epoch}); trivial baseline {baseline[metric]:.3f} ({classification.BASELINE[data.problem_type]})")
    print("eval results: " + json.dumps(after))
    os.makedirs(out, exist_ok=True)
    training.write_json(os.path.join(out, "eval_results.json"), after)
    keras_path = os.path.join(out, "classifier.keras")
    summary = {"family": family, "task": args.task, "problem_type": data.problem_type, "labels": data.labels,
               "before": before, "after": after, "baseline": baseline, "metric": metric,
               "best_epoch": fitted.best_epoch, "epochs": fitted.history, "rows": len(data.train) + len(data.valid),
               "seq_length": seq_length, "learning_rate": args.learning_rate}
    if data.problem_type == finetune_data.SINGLE:  # as before: the accuracies
        summary.update(accuracy_before=before.get("accuracy"), accuracy_after=after.get("accuracy"))
    if data.test:
        summary["submission"] = classification.write_test_predictions(model, data, inputs(data.test), out,
                                                                      args.batch_size)
        print(f"test predictions (GLUE submission format): {summary['submission']}")
    summary["keras_takes_strings"] = attach_keras_preprocessor(model, family, tokenizer, seq_length)
    save_model(model, keras_path)
    summary["serving"] = None if args.no_export else export_task(model, out, family, tokenizer, data, seq_length,
                                                                 args.threshold)
    training.write_json(os.path.join(out, "summary.json"), summary)
    return summary


def export_task(model, out, family, tokenizer, data, seq_length, threshold):
    """The serving SavedModel of the task (classification, regression, multi-label, multiple choice)."""
    choice = data.problem_type == finetune_data.CHOICE
    serving = export_classifier(model, os.path.join(out, "classifier", "1"), tokenizer,
                                None if choice else (data.labels or ["score"]), data.pair, seq_length, threshold)
    takes = "strings" if preprocessor(family, tokenizer).takes_strings else "token ids"
    print(f"saved: {os.path.join(out, 'classifier.keras')}; serving SavedModel ({takes} in: "
          f"{', '.join(serving['inputs'])}; {', '.join(serving['outputs'])} out): {out}/classifier/1")
    return serving


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
