"""`keras_pretrain.tasks.token_classification.training`, called directly: CoNLL files read and checked (a bad
file raises `TaskDataError` naming it), the label list, the family's feature kind, and the windows' predictions
merged back into each word's tag (the whole run through the recipe: test_finetune_ner.py)."""

import numpy as np
import pytest

from keras_pretrain.errors import TaskDataError
from keras_pretrain.tasks.token_classification import training
from keras_pretrain.tasks.token_classification.conll import Sentence
from keras_pretrain.tasks.token_classification.features import IGNORE

# CoNLL-2003's layout, IOB1 (an entity starts with I- unless one of its type precedes).
CONLL = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP I-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP I-PER\nBlackburn NNP I-NP I-PER\n\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.one_backend
def test_a_conll_file_reads_as_iob2_sentences(tmp_path):
    sentences, scheme = training.read_sentences(write(tmp_path, "train.txt", CONLL))
    assert scheme == "IOB1"
    assert [s.tokens for s in sentences] == [("EU", "rejects"), ("Peter", "Blackburn")]
    assert [s.tags for s in sentences] == [("B-ORG", "O"), ("B-PER", "I-PER")]
    assert [s.line for s in sentences] == [3, 6]


@pytest.mark.one_backend
@pytest.mark.parametrize("text, argument, expected", [
    ("", "train_file", "no sentences"),
    ("a x x 3\nb x x 5\n\n", "predict_file", "line 1"),
])
def test_a_bad_conll_file_raises_naming_it(tmp_path, text, argument, expected):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(TaskDataError) as info:
        training.read_sentences(path, argument)
    assert path in str(info.value) and expected in str(info.value), str(info.value)
    assert info.value.argument == argument
    with pytest.raises(TaskDataError, match="no such file|cannot read"):
        training.read_sentences(str(tmp_path / "missing.txt"))


@pytest.mark.one_backend
def test_the_label_list_is_o_then_the_training_tags_sorted():
    train = [Sentence(("a", "b"), ("B-PER", "O"), 1), Sentence(("c",), ("B-LOC",), 4)]
    assert training.label_list(train, [Sentence(("d",), ("O",), 1)], "t.txt", "p.txt") == ["O", "B-LOC", "B-PER"]
    with pytest.raises(TaskDataError) as info:
        training.label_list(train, [Sentence(("d", "e"), ("O", "I-MISC"), 7)], "t.txt", "p.txt")
    assert info.value.argument == "predict_file"
    assert str(info.value) == "p.txt: the sentence at line 7 has the tag 'I-MISC', which the training file t.txt never uses"
    with pytest.raises(TaskDataError) as info:
        training.label_list([Sentence(("a",), ("O",), 1)], [], "t.txt", "p.txt")
    assert info.value.argument == "train_file" and str(info.value) == "t.txt: every word is tagged O: nothing to learn"


@pytest.mark.one_backend
def test_each_family_reads_words_or_pieces():
    assert training.reads_words("elmo") and not training.reads_words("bert")


class Model:
    """A stand-in tagger: its logits put each window's gold label on the labelled (first) pieces."""

    def __init__(self, x, y, num_labels):
        self.input = {name: None for name in x}
        logits = np.zeros(y.shape + (num_labels,), "float32")
        rows, columns = np.nonzero(y != IGNORE)
        logits[rows, columns, y[rows, columns]] = 5.0
        self.logits = logits

    def predict(self, x, batch_size=None, verbose=0):
        assert sorted(x) == sorted(self.input)
        return self.logits


@pytest.mark.tf_only
def test_the_windows_of_wordpieces_predict_each_words_tag(tmp_path):
    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.tasks.classification.training import preprocessor

    vocab = write(tmp_path, "vocab.txt", "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "eu", "rejects",
                                                       "peter", "black", "##burn"]) + "\n")
    text = preprocessor("bert", BertTokenizer(vocabulary=vocab, lowercase=True))
    sentences, _ = training.read_sentences(write(tmp_path, "train.txt", CONLL))
    labels = training.label_list(sentences, sentences, "train.txt", "train.txt")
    assert training.features_of("bert", text) is training.piece_features and not training.python_pieces("bert", text)
    windows, x, y, words = training.piece_features(sentences, text, 4, labels)
    assert len(windows) == 3  # two pieces a window: "peter" and "black ##burn" apart
    assert sorted(x) == ["padding_mask", "segment_ids", "token_ids"] and y.shape == words.shape == (3, 4)
    model = Model(x, y, len(labels))
    predicted = training.predict_tags(model, windows, x, words, sentences, labels, batch_size=2)
    assert predicted == [list(s.tags) for s in sentences]
