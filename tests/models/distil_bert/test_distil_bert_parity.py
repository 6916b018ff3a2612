"""Parity with the independent `transformers` DistilBERT (random tiny weights)."""

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertClassifier
from keras_pretrain.models.distil_bert import DistilBertPretrainer
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs
from tests.testing import randomize_torch_module
from tests.testing import to_numpy

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


def torch_inputs(d):
    return {"input_ids": torch.tensor(d["token_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(d["padding_mask"], dtype=torch.long)}


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_masked_lm_parity(tmp_path, activation):
    folder = str(tmp_path / "hf")
    model = randomize_torch_module(transformers.DistilBertForMaskedLM(hf_config(activation)))
    model.save_pretrained(folder)
    with open(f"{folder}/vocab.txt", "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    d = data()
    positions = np.array([[1, 3, 7], [0, 6, 11]], "int32")
    with torch.no_grad():
        out = model(**torch_inputs(d), output_hidden_states=True)
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, DistilBertPretrainer) and tokenizer.vocabulary_size() == len(VOCAB)
    real = d["padding_mask"].astype(bool)
    hidden = to_numpy(pretrainer.backbone(d)["sequence_output"])[real]
    logits = pretrainer({**d, "masked_lm_positions": positions})["mlm"]
    diffs = (max_abs_diff(hidden, out.hidden_states[-1].numpy()[real]),
             max_abs_diff(logits, np.take_along_axis(out.logits.numpy(), positions[..., None], axis=1)))
    print("max abs diff", diffs)
    assert max(diffs) <= TOLERANCE
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, DistilBertBackbone)


def test_classifier_head_parity(tmp_path):
    folder = str(tmp_path / "hf")
    model = randomize_torch_module(transformers.DistilBertForSequenceClassification(hf_config()))
    model.save_pretrained(folder)
    d = data()
    with torch.no_grad():
        expected = model(**torch_inputs(d)).logits.numpy()
    backbone, _ = convert.from_huggingface(folder)  # the head's weights are set by hand below
    classifier = DistilBertClassifier(backbone, num_classes=3, dropout=0.0)
    state = model.state_dict()
    for dense, name in ((classifier.head_dense, "pre_classifier"), (classifier.output_dense, "classifier")):
        dense.kernel.assign(state[name + ".weight"].numpy().T)
        dense.bias.assign(state[name + ".bias"].numpy())
    diff = max_abs_diff(classifier(d), expected)
    print("max abs diff", diff)
    assert diff <= TOLERANCE
