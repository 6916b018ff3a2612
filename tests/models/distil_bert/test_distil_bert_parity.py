"""Parity with the independent `transformers` DistilBERT (random tiny weights)."""

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertClassifier
from keras_pretrain.models.distil_bert import DistilBertPretrainer
from tests.testing import TOLERANCE
from tests.testing import masked_lm_diffs
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs
from tests.testing import saved_random_torch_model
from tests.testing import torch_outputs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]


def hf_config(activation="gelu"):
    return transformers.DistilBertConfig(
        vocab_size=len(VOCAB), dim=32, n_layers=2, n_heads=4, hidden_dim=37, max_position_embeddings=20,
        activation=activation, dropout=0.0, attention_dropout=0.0, seq_classif_dropout=0.0, num_labels=3,
    )


def data():
    d = random_encoder_inputs(2, 12, len(VOCAB), pad_from=8)
    return {"token_ids": d["token_ids"], "padding_mask": d["padding_mask"]}


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_masked_lm_parity(tmp_path, activation):
    folder = str(tmp_path / "hf")
    model = saved_random_torch_model(transformers.DistilBertForMaskedLM(hf_config(activation)), folder, VOCAB)
    d = data()
    positions = np.array([[1, 3, 7], [0, 6, 11]], "int32")
    out = torch_outputs(model, d, output_hidden_states=True)
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, DistilBertPretrainer) and tokenizer.vocabulary_size() == len(VOCAB)
    diffs = masked_lm_diffs(pretrainer, out, d, positions)
    print("max abs diff", diffs)
    assert max(diffs) <= TOLERANCE
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, DistilBertBackbone)


def test_classifier_head_parity(tmp_path):
    folder = str(tmp_path / "hf")
    model = saved_random_torch_model(transformers.DistilBertForSequenceClassification(hf_config()), folder)
    d = data()
    expected = torch_outputs(model, d).logits.numpy()
    backbone, _ = convert.from_huggingface(folder)  # the head's weights are set by hand below
    classifier = DistilBertClassifier(backbone, num_classes=3, dropout=0.0)
    state = model.state_dict()
    for dense, name in ((classifier.head_dense, "pre_classifier"), (classifier.output_dense, "classifier")):
        dense.kernel.assign(state[name + ".weight"].numpy().T)
        dense.bias.assign(state[name + ".bias"].numpy())
    diff = max_abs_diff(classifier(d), expected)
    print("max abs diff", diff)
    assert diff <= TOLERANCE
