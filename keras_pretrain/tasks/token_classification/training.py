"""Fine-tuning a tagger (NER) on CoNLL files: reading and checking them, the label list, the windows of each
family's inputs, the model, training and the word-level predictions.

The files are read by `conll.read_conll` (CoNLL-2003's `token POS chunk NER` columns or `token tag`,
`-DOCSTART-`, blank lines between sentences), their tags converted to IOB2; the label set is the training
file's ("O" first, then sorted). Each word is tokenized alone, its label on its first piece (`features`:
tf-models' `tagging_data_lib`; a sentence longer than the sequence is cut between words into several windows,
`overlap` words repeated between neighbours, merged back per word from its best-context window).

BERT, ALBERT, ERNIE, RoBERTa, DistilBERT and XLNet train `TokenClassifier` on their pieces (`piece_features`);
ELMo trains its paper's tagger, `ElmoTagger` (the frozen biLM's scalar mix -> BiLSTM -> CRF), on whole words
(`word_features`: `<S>` / `</S>` around each window; its predictions the CRF's Viterbi tags). GPT-1 trains
`TokenClassifier` on its BPE pieces without special tokens (`python_features`: its BPE runs in Python).

Bad files raise `keras_pretrain.errors.TaskDataError` naming the file (its `argument`: `train_file` or
`predict_file`).
"""

import numpy as np

from keras_pretrain.errors import CorpusFormatError
from keras_pretrain.errors import TaskDataError


# === The files and their labels ===


def read_sentences(path, argument="train_file"):
    """(sentences with IOB2 tags, the scheme found: IOB1, IOB2 or IOBES) of the CoNLL file `path`."""
    from keras_pretrain.tasks.token_classification import conll

    try:
        return conll.as_iob2(conll.read_conll(path))
    except (CorpusFormatError, ValueError) as e:
        raise TaskDataError(str(e), argument) from e


def label_list(train, predict, train_path, predict_path):
    """The tags of the training sentences, "O" first, then sorted; a tag of `predict` the training file never
    uses, or training tags all "O", raise `TaskDataError`."""
    tags = {t for s in train for t in s.tags}
    labels = ["O"] + sorted(tags - {"O"})
    for sentence in predict:
        unknown = [t for t in sentence.tags if t not in tags]
        if unknown:
            raise TaskDataError(f"{predict_path}: the sentence at line {sentence.line} has the tag {unknown[0]!r}, "
                                f"which the training file {train_path} never uses", "predict_file")
    if len(labels) < 2:
        raise TaskDataError(f"{train_path}: every word is tagged O: nothing to learn", "train_file")
    return labels


# === The windows and their arrays ===


def piece_features(sentences, text, seq_length, labels, overlap=0):
    """The windows of the family's pieces and their NumPy arrays: `(features, x, label ids, word ids)`."""
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


def reads_words(family):
    """Whether the family's tagger reads whole words (ELMo's characters: `ElmoTagger`)."""
    from keras_pretrain import families

    return families.get(family).token_states.characters


def python_pieces(family, text):
    """Whether the family's pieces come from a Python tokenizer with no in-graph packing (GPT-1's BPE): no
    special tokens, and no serving SavedModel of strings."""
    return not reads_words(family) and not text.packing.in_graph


def features_of(family, text):
    """The feature function of the family: `word_features`, `python_features` or `piece_features`."""
    return word_features if reads_words(family) else python_features if python_pieces(family, text) else piece_features


# === The model, training and predictions ===


def build_tagger(family, backbone, num_labels):
    """ELMo's `ElmoTagger` (BiLSTM + CRF on the frozen biLM), else a `TokenClassifier`, of `num_labels` tags."""
    from keras_pretrain.tasks.token_classification.elmo_tagger import ElmoTagger
    from keras_pretrain.tasks.token_classification.head import TokenClassifier

    return ElmoTagger(backbone, num_labels) if reads_words(family) else TokenClassifier(backbone, num_labels)


def fit(model, x, y, batch_size, epochs, seed=0, verbose=0):
    """Trains the compiled tagger on the windows' arrays (`x` by input name, `y` the label ids), shuffled with
    `seed`."""
    import tensorflow as tf

    names = list(model.input)
    rows = tf.data.Dataset.from_tensor_slices(({n: x[n] for n in names}, y)).shuffle(len(y), seed=seed)
    model.fit(rows.batch(batch_size), epochs=epochs, verbose=verbose)


def predict_tags(model, windows, x, words, sentences, labels, batch_size, aggregation="first", viterbi=False):
    """Each word's predicted tag, per sentence: its pieces' (`aggregation`: first, average, max) merged from its
    best-context window; `viterbi` (`ElmoTagger`): the CRF's Viterbi tags (probability 1 each: its decode scores
    no word alone)."""
    from keras_pretrain.tasks.token_classification import features as tagging_features

    names = list(model.input)
    logits = model.predict({n: x[n] for n in names}, batch_size=batch_size, verbose=0)
    if viterbi:
        logits = np.where(np.eye(len(labels), dtype=bool)[np.asarray(logits["tags"])], 0.0, -1e9)
    predicted, _ = tagging_features.word_predictions(windows, np.asarray(logits, "float32"), words,
                                                     [len(s.tokens) for s in sentences], aggregation)
    return [[labels[i] for i in row] for row in predicted]
