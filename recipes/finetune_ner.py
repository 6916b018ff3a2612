"""`python -m recipes.finetune --task ner --train-file train.txt --predict-file dev.txt`: named-entity recognition on
CoNLL files (issue 42). Argument checks and the run; the work is in the package.

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

from recipes import common

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
    """(train sentences, predict sentences, labels): IOB2 tags; the label list "O" first, then sorted."""
    from keras_pretrain.errors import CorpusFormatError
    from keras_pretrain.tasks.token_classification import conll as tagging

    sets = []
    for flag, path in (("--train-file", args.train_file), ("--predict-file", args.predict_file)):
        try:
            sentences, scheme = tagging.as_iob2(tagging.read_conll(path))
        except (CorpusFormatError, ValueError) as e:
            parser.error(f"{flag}: {e}")
        print(f"{path}: {len(sentences)} sentences, {sum(len(s.tokens) for s in sentences)} words, tags in "
              f"{scheme} (converted to IOB2)")
        sets.append(sentences)
    train, predict = sets
    tags = {t for s in train for t in s.tags}
    labels = ["O"] + sorted(tags - {"O"})
    for sentence in predict:
        unknown = [t for t in sentence.tags if t not in tags]
        if unknown:
            parser.error(f"--predict-file: {args.predict_file}: the sentence at line {sentence.line} has the tag "
                         f"{unknown[0]!r}, which the training file {args.train_file} never uses")
    if len(labels) < 2:
        parser.error(f"--train-file: {args.train_file}: every word is tagged O: nothing to learn")
    return train, predict, labels


def features(sentences, text, seq_length, labels, overlap=0):
    """The windows and their NumPy arrays: `(features, x, label ids, word ids)`."""
    from keras_pretrain.tasks.token_classification import alignment
    from keras_pretrain.tasks.token_classification import features as tagging_features

    tokenizer = text.tokenizer
    ids = text.special_ids()
    tokenize = alignment.word_tokenizer(tokenizer, [s.tokens for s in sentences])
    index = {tag: i for i, tag in enumerate(labels)}
    tag_ids = [[index[t] for t in s.tags] for s in sentences]
    unk = tagging_features.unknown_id(tokenizer)
    windows = tagging_features.convert_sentences_to_features([s.tokens for s in sentences], tag_ids, tokenize,
                                                             seq_length, text.packing, ids, unk, overlap)
    x, y, words = tagging_features.to_arrays(windows, seq_length, text.packing, ids["pad"])
    return windows, x, y, words


def python_features(sentences, text, seq_length, labels, overlap=0):
    """GPT-1's windows: each word's BPE pieces (its Python tokenizer, `</w>` word ends), no special tokens (the
    causal model reads the pieces from the left), padded on the right; `(features, x, labels, word ids)`."""
    from keras_pretrain.data.packing import Packing
    from keras_pretrain.tasks.token_classification import features as tagging_features

    class Plain(Packing):
        name = "plain"

        def layout(self, num_segments):
            return tuple((i, 0) for i in range(num_segments))

    tokenizer = text.tokenizer
    index = {tag: i for i, tag in enumerate(labels)}
    unk = tokenizer.token_to_id(tokenizer.unk_token)
    windows = tagging_features.convert_sentences_to_features(
        [list(s.tokens) for s in sentences], [[index[t] for t in s.tags] for s in sentences],
        tokenizer.tokenize, seq_length, Plain(), {"cls": None, "sep": None}, unk, overlap)
    x, y, words = tagging_features.to_arrays(windows, seq_length, Plain(), 0)
    return windows, x, y, words


def word_features(sentences, text, seq_length, labels, overlap=0):
    """ELMo's windows (one position a word, `<S>` / `</S>` around) and arrays: `(features, x, labels, word ids)`."""
    from keras_pretrain.tasks.token_classification import features as tagging_features

    index = {tag: i for i, tag in enumerate(labels)}
    words = [list(s.tokens) for s in sentences]
    windows = tagging_features.word_windows(words, [[index[t] for t in s.tags] for s in sentences], seq_length,
                                            text.packing, overlap)
    _, y, word_ids = tagging_features.to_arrays(windows, seq_length, text.packing, 0)
    return windows, tagging_features.character_inputs(windows, words, seq_length), y, word_ids


def main(parser, args, out, family, backbone, tokenizer, seq_length, text):
    """The run (see the module docstring); returns its summary."""
    import numpy as np
    import tensorflow as tf

    from keras_pretrain.tasks import TokenClassifier
    from keras_pretrain.tasks.token_classification import conll as tagging
    from keras_pretrain.tasks.token_classification import features as tagging_features
    from keras_pretrain.tasks.token_classification import metrics
    from recipes import finetune_tasks

    from keras_pretrain import families
    from keras_pretrain.tasks import ElmoTagger

    characters = families.get(family).token_states.characters  # ELMo: ElmoTagger on whole words
    python_bpe = not characters and not text.packing.in_graph  # GPT-1: its BPE in Python, no special tokens
    train, predict, labels = read(parser, args)
    try:
        make = word_features if characters else python_features if python_bpe else features
        windows, x, y, _ = make(train, text, seq_length, labels, args.window_overlap)
        predict_windows, x_predict, _, words = make(predict, text, seq_length, labels, args.window_overlap)
    except ValueError as e:
        parser.error(f"--task ner: {e}")
    split = len(predict_windows) - len(predict)
    print(f"NER: {len(labels)} tags ({', '.join(labels)}); {len(train)} training sentences -> {len(windows)} "
          f"windows, {len(predict)} to predict -> {len(predict_windows)} windows (length {seq_length}"
          + (f"; {split} more windows where sentences were longer" if split else "") + ")")
    model = ElmoTagger(backbone, len(labels)) if characters else TokenClassifier(backbone, len(labels))
    names = list(model.input)
    model.compile(optimizer=finetune_tasks.optimizer(model, args, len(windows)))
    print(f"fine-tuning {family} ({type(backbone).__name__}) on the tags; rate {args.learning_rate:g}")
    rows = tf.data.Dataset.from_tensor_slices(({n: x[n] for n in names}, y)).shuffle(len(windows), seed=args.seed)
    model.fit(rows.batch(args.batch_size), epochs=args.epochs, verbose=args.verbose)

    logits = model.predict({n: x_predict[n] for n in names}, batch_size=args.batch_size, verbose=0)
    if characters:  # the CRF's Viterbi tags (probability 1 each: its decode scores no word alone)
        logits = np.where(np.eye(len(labels), dtype=bool)[np.asarray(logits["tags"])], 0.0, -1e9)
    predicted, _ = tagging_features.word_predictions(predict_windows, np.asarray(logits, "float32"), words,
                                                     [len(s.tokens) for s in predict], args.aggregation)
    predicted = [[labels[i] for i in row] for row in predicted]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "predictions.txt")
    tagging.write_predictions(path, predict, [s.tags for s in predict], predicted)
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
