"""`python -m recipes.finetune --task ner --train-file train.txt --predict-file dev.txt`: named-entity recognition on
CoNLL files (issue 42). Argument checks and the run; the work is in the package
(`keras_pretrain.tasks.token_classification.training`).

The files are read by `keras_pretrain.tasks.token_classification.conll.read_conll` (CoNLL-2003's
`token POS chunk NER` columns or `token tag`, `-DOCSTART-`, blank lines between sentences), their tags converted
to IOB2 (the scheme found is printed: IOB1, IOB2 or IOBES) and the label set is the training file's ("O" first, then sorted). Each word is
tokenized alone, its label on its first piece (`keras_pretrain.tasks.token_classification.features`: tf-models'
`tagging_data_lib`; a sentence longer than `--seq-length` is cut between words into several windows,
`--window-overlap` words repeated between neighbours, merged back per word from its best-context window). `keras_pretrain.tasks.TokenClassifier` is fine-tuned (transformers' loss: cross-entropy over the
labelled pieces), then writes to `--out`:

- `predictions.txt`: `token gold predicted`, a blank line between sentences (conlleval's input; the tags in
  IOB2), the prediction of each word its first piece's (`--aggregation first`, or `average` / `max` of its
  pieces, as transformers' strategies);
- `eval_results.json`: `keras_pretrain.tasks.token_classification.metrics.entity_scores` of that file (seqeval's
  default mode, which `python -m recipes.evaluate conll --predictions predictions.txt` prints too);
- `tagger.keras` (the task, ids in) and `labels.json` (the tag of each class id);
- `ner/1/`, the serving SavedModel (TensorFlow Serving's layout; skipped with `--no-export`): `text` in (words
  separated by whitespace), its entities (text, type, character offsets, score) and each word's tag out, equal to
  the Python predictions (`keras_pretrain.tasks.token_classification.serving`).

BERT, ALBERT, ERNIE, RoBERTa, DistilBERT and XLNet train `TokenClassifier`; ELMo trains its paper's tagger,
`keras_pretrain.tasks.ElmoTagger` (the frozen biLM's scalar mix -> BiLSTM -> CRF) on whole words (`<S>` / `</S>`
around each window; its predictions the CRF's Viterbi tags). GPT-1 trains `TokenClassifier` on its BPE pieces
without special tokens (its BPE runs in Python: no serving SavedModel).
"""

import json
import os

from keras_pretrain.tasks.token_classification import training as tagging
from recipes import common
from recipes.finetune_data import usage_errors

TASKS = ("ner",)
AGGREGATIONS = ("first", "average", "max")


def add_arguments(parser):
    parser.add_argument("--aggregation", choices=AGGREGATIONS, default="first",
                        help="NER: how a word's pieces give its tag (first piece, or the average / max of their "
                             "probabilities)")
    parser.add_argument("--window-overlap", type=int, default=0,
                        help="NER: words a window of a sentence longer than --seq-length repeats from the one "
                             "before (0: consecutive windows, as tf-models' tagging_data_lib)")


def check_arguments(parser, args):
    if not args.train_file or not args.predict_file:
        parser.error(f"--task {args.task} needs --train-file and --predict-file (CoNLL files: token ... tag)")
    for flag, path in (("--train-file", args.train_file), ("--predict-file", args.predict_file)):
        if not os.path.isfile(path):
            parser.error(f"{flag}: no such file {path!r}")
    if args.window_overlap < 0:
        parser.error("--window-overlap must be >= 0")


def read(parser, args):
    """(train sentences, predict sentences, labels): IOB2 tags; the label list "O" first, then sorted
    (`keras_pretrain.tasks.token_classification.training`; a bad file: `parser.error`, exit 2)."""
    sets = []
    for name, path in (("train_file", args.train_file), ("predict_file", args.predict_file)):
        with usage_errors(parser):
            sentences, scheme = tagging.read_sentences(path, name)
        print(f"{path}: {len(sentences)} sentences, {sum(len(s.tokens) for s in sentences)} words, tags in "
              f"{scheme} (converted to IOB2)")
        sets.append(sentences)
    train, predict = sets
    with usage_errors(parser):
        return train, predict, tagging.label_list(train, predict, args.train_file, args.predict_file)


features = tagging.piece_features  # the windows of the family's pieces: (features, x, label ids, word ids)
python_features = tagging.python_features  # GPT-1's (its BPE in Python, no special tokens)
word_features = tagging.word_features  # ELMo's (whole words)


def main(parser, args, out, family, backbone, tokenizer, seq_length, text):
    """The run (see the module docstring); returns its summary."""
    from keras_pretrain.tasks.token_classification import conll
    from keras_pretrain.tasks.token_classification import metrics
    from recipes import finetune_tasks

    characters = tagging.reads_words(family)  # ELMo: ElmoTagger on whole words
    python_bpe = tagging.python_pieces(family, text)  # GPT-1: its BPE in Python, no special tokens
    train, predict, labels = read(parser, args)
    try:
        make = tagging.features_of(family, text)
        windows, x, y, _ = make(train, text, seq_length, labels, args.window_overlap)
        predict_windows, x_predict, _, words = make(predict, text, seq_length, labels, args.window_overlap)
    except ValueError as e:
        parser.error(f"--task ner: {e}")
    split = len(predict_windows) - len(predict)
    print(f"NER: {len(labels)} tags ({', '.join(labels)}); {len(train)} training sentences -> {len(windows)} "
          f"windows, {len(predict)} to predict -> {len(predict_windows)} windows (length {seq_length}"
          + (f"; {split} more windows where sentences were longer" if split else "") + ")")
    model = tagging.build_tagger(family, backbone, len(labels))
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(windows)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) on the tags; rate {args.learning_rate:g}")
    tagging.fit(model, x, y, args.batch_size, args.epochs, args.seed, args.verbose)

    predicted = tagging.predict_tags(model, predict_windows, x_predict, words, predict, labels, args.batch_size,
                                     args.aggregation, viterbi=characters)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "predictions.txt")
    conll.write_predictions(path, predict, [s.tags for s in predict], predicted)
    scores = metrics.entity_scores([s.tags for s in predict], predicted)
    common.write_json(os.path.join(out, "eval_results.json"), scores)
    print("eval results: " + json.dumps({k: scores[k] for k in ("precision", "recall", "f1")}))
    common.write_json(os.path.join(out, "labels.json"), labels)
    keras_path = os.path.join(out, "tagger.keras")
    model.save(keras_path)
    print(f"saved: {keras_path}, labels.json, predictions.txt (token gold predicted) in {out}")
    serving = None
    if python_bpe:
        print(f"no serving SavedModel: {family}'s BPE runs in Python (no in-graph tokenizer to serve strings)")
    elif not args.no_export:
        from hub_modules.exporting import export_tagging_serving

        serving = export_tagging_serving(model, os.path.join(out, "ner", "1"), tokenizer, labels,
                                         seq_length=seq_length, overlap=args.window_overlap,
                                         aggregation=args.aggregation)
        print(f"serving SavedModel (text in: entities and tags out): {out}/ner/1")
    summary = {"family": family, "task": args.task, "eval": scores, "seq_length": seq_length, "labels": labels,
               "train_windows": len(windows), "predict_windows": len(predict_windows),
               "learning_rate": args.learning_rate, "aggregation": args.aggregation, "serving": serving}
    common.write_json(os.path.join(out, "summary.json"), summary)
    return summary
