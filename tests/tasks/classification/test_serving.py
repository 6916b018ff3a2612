"""Serving SavedModels: strings in, the classifier's outputs out (issue 23, item 1).

Exported from every backend (under JAX / PyTorch through a TensorFlow
subprocess) and run in a fresh process that imports only tensorflow and
tensorflow_text; the Keras classifier on this backend, fed by the fine-tuning
recipe's Python encoding of the same strings, is the reference. Every family
is covered end to end by tests/recipes/test_finetune_families.py.
"""

import json
import os

import keras
import numpy as np
import pytest

from tests.export.serving_check import serve_many
from tests.hub_modules.fixtures import TRANSFORMER
from tests.hub_modules.fixtures import WORDPIECE

TEXT_A = ["The cat sat on the mat.", "猫坐在垫子上 unknownword!", "the the the cat cat cat sat sat sat on on on mat mat"]
TEXT_B = ["on the mat", "the", "猫坐在垫子上"]
LABELS = ["negative", "neutral", "positive"]
SEQ_LENGTH = 12  # the third pair is trimmed round-robin


def _classifier():
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertClassifier
    from keras_pretrain.models.bert import BertTokenizer

    keras.utils.set_random_seed(3)
    backbone = BertBackbone(vocabulary_size=len(WORDPIECE), max_sequence_length=16, **TRANSFORMER)
    classifier = BertClassifier(backbone, num_classes=len(LABELS))
    rng = np.random.default_rng(0)
    for weight in classifier.weights:  # logits far apart: a wrong token or position shows
        weight.assign(rng.normal(0, 0.3, weight.shape).astype("float32"))
    return classifier, BertTokenizer(vocabulary=WORDPIECE, lowercase=True)


def _expected(classifier, tokenizer, columns):
    """The Keras classifier on the recipe's (Python) packing of `columns`."""
    from recipes import finetune

    special = (tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]"))
    x = finetune.encode("bert", tokenizer, columns, SEQ_LENGTH, special)
    return np.asarray(classifier.predict({name: x[name] for name in classifier.input}, verbose=0))


def _check(served, expected):
    assert set(served) == {"logits", "probabilities", "label_ids", "labels"}
    assert np.abs(served["logits"] - expected).max() < 1e-4, (served["logits"], expected)
    probabilities = np.exp(expected) / np.exp(expected).sum(-1, keepdims=True)
    assert np.abs(served["probabilities"] - probabilities).max() < 1e-5
    assert served["label_ids"].tolist() == expected.argmax(-1).tolist()
    assert served["labels"].tolist() == [LABELS[i] for i in expected.argmax(-1)]


def test_classifier_serves_strings_from_any_backend(tmp_path):
    import hub_modules
    from hub_modules.exporting import export_serving

    classifier, tokenizer = _classifier()
    # A module of the classifier: the head is in it (classifier/1), not only the encoder.
    module = str(tmp_path / "module")
    hub_modules.export(classifier, module, tokenizer=tokenizer, seq_length=SEQ_LENGTH, labels=LABELS, pair=True)
    with open(os.path.join(module, "metadata.json")) as f:
        metadata = json.load(f)
    assert metadata["exported_from_backend"] == keras.config.backend()
    assert metadata["serving"]["path"] == os.path.join("classifier", "1")
    assert metadata["serving"]["inputs"] == ["text_a", "text_b"]
    assert metadata["serving"]["labels"] == LABELS
    for name in ("saved_model.pb", "variables"):
        assert os.path.exists(os.path.join(module, "classifier", "1", name))
    # What recipes.finetune writes (one text per example here).
    single = tmp_path / "served" / "1"
    spec = export_serving(classifier, single, tokenizer=tokenizer, labels=LABELS, seq_length=SEQ_LENGTH)
    assert spec["inputs"] == ["text"] and os.path.exists(single / "saved_model.pb")

    (pair_out, single_out), imported = serve_many([
        (os.path.join(module, "classifier", "1"), {"text_a": TEXT_A, "text_b": TEXT_B}),
        (single, {"text": TEXT_A}),
    ])
    assert imported == []  # tensorflow + tensorflow_text only
    _check(pair_out, _expected(classifier, tokenizer, [TEXT_A, TEXT_B]))
    _check(single_out, _expected(classifier, tokenizer, [TEXT_A]))


def test_labels_must_match_the_classes(tmp_path):
    import hub_modules
    from keras_pretrain.export import ExportError

    classifier, tokenizer = _classifier()
    with pytest.raises(ExportError, match="3 classes but 2 labels"):
        hub_modules.export(classifier, str(tmp_path / "m"), tokenizer=tokenizer, labels=["a", "b"])


TRICKY = ["Gold, surely!", "It's 3.14 -- isn't it?", "naïve café résumé", "猫坐在垫子上。你好，世界！", "snake_case x²",
          "tabs\tand\nnewlines  ", "", "¿Qué? «Oui» — 'yes'", "emoji 🙂 here", "A|||B"]


@pytest.mark.tf_only
def test_elmo_words_in_graph_equal_split_words():
    """The ELMo serving graph splits words as the recipe's Python `split_words`."""
    import tensorflow as tf

    from keras_pretrain.tasks.preprocessing import elmo_words
    from keras_pretrain.models.elmo import split_words

    words = elmo_words(tf, tf.constant(TRICKY)).to_list()
    got = [[w.decode() for w in row] for row in words]
    expected = [split_words(t) for t in TRICKY]
    same = sum(g == e for g, e in zip(got, expected))
    assert same == len(TRICKY), [(t, g, e) for t, g, e in zip(TRICKY, got, expected) if g != e]
