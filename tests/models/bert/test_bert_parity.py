"""Parity with the independent `transformers` BERT (random tiny weights)."""

import json
import os

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs
from tests.testing import randomize_torch_module
from tests.testing import saved_random_torch_model
from tests.testing import torch_outputs
from tests.testing import write_tf1_checkpoint

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(59)]


def hf_config(hidden_act="gelu"):
    return transformers.BertConfig(
        vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=40, type_vocab_size=2,
        hidden_act=hidden_act, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def hf_reference(hidden_act, folder):
    return saved_random_torch_model(transformers.BertForPreTraining(hf_config(hidden_act)), folder, VOCAB)


def reference_outputs(model, data, positions):
    out = torch_outputs(model, data, segments=True, output_hidden_states=True)
    sequence = torch_outputs(model.bert, data, segments=True)
    mlm = np.take_along_axis(out.prediction_logits.numpy(), positions[..., None], axis=1)
    return {
        "sequence_output": sequence.last_hidden_state.numpy(),
        "pooled_output": sequence.pooler_output.numpy(),
        "mlm": mlm,
        "nsp": out.seq_relationship_logits.numpy(),
    }


def compare(pretrainer, reference, data, positions):
    ours_backbone = pretrainer.backbone(data)
    ours = pretrainer({**data, "masked_lm_positions": positions})
    diffs = {
        "sequence_output": max_abs_diff(ours_backbone["sequence_output"], reference["sequence_output"]),
        "pooled_output": max_abs_diff(ours_backbone["pooled_output"], reference["pooled_output"]),
        "mlm": max_abs_diff(ours["mlm"], reference["mlm"]),
        "nsp": max_abs_diff(ours["nsp"], reference["nsp"]),
    }
    print("max abs diff", diffs)
    for key, diff in diffs.items():
        assert diff <= TOLERANCE, f"{key}: {diff}"
    return diffs


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_new", "relu"])
def test_huggingface_parity(tmp_path, hidden_act):
    folder = str(tmp_path / "hf")
    model = hf_reference(hidden_act, folder)
    data = random_encoder_inputs(2, 12, len(VOCAB), pad_from=8)
    positions = np.array([[1, 3, 5], [0, 6, 11]], "int32")
    reference = reference_outputs(model, data, positions)
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, BertPretrainer)
    assert tokenizer.vocabulary_size() == len(VOCAB)
    compare(pretrainer, reference, data, positions)
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, BertBackbone)
    assert max_abs_diff(backbone(data)["pooled_output"], reference["pooled_output"]) <= TOLERANCE


def hf_to_tf1_names(state):
    """A Google-layout TF1 variable dict built from an HF state dict (test side)."""
    out = {}
    v = lambda k: state[k].numpy()  # noqa: E731

    def dense(tf, hf):  # torch's Linear weight is [out, in], a TF1 kernel [in, out]
        out[tf + "/kernel"] = v(hf + ".weight").T
        out[tf + "/bias"] = v(hf + ".bias")

    def layer_norm(tf, hf):
        out[tf + "/gamma"] = v(hf + ".weight")
        out[tf + "/beta"] = v(hf + ".bias")

    for name in ("word_embeddings", "position_embeddings", "token_type_embeddings"):
        out["bert/embeddings/" + name] = v("bert.embeddings." + name + ".weight")
    layer_norm("bert/embeddings/LayerNorm", "bert.embeddings.LayerNorm")
    for i in range(2):
        p, q = f"bert.encoder.layer.{i}.", f"bert/encoder/layer_{i}/"
        for hf, tf in [("attention.self.query", "attention/self/query"), ("attention.self.key", "attention/self/key"),
                       ("attention.self.value", "attention/self/value"), ("attention.output.dense", "attention/output/dense"),
                       ("intermediate.dense", "intermediate/dense"), ("output.dense", "output/dense")]:
            dense(q + tf, p + hf)
        for hf, tf in [("attention.output.LayerNorm", "attention/output/LayerNorm"), ("output.LayerNorm", "output/LayerNorm")]:
            layer_norm(q + tf, p + hf)
    dense("bert/pooler/dense", "bert.pooler.dense")
    dense("cls/predictions/transform/dense", "cls.predictions.transform.dense")
    layer_norm("cls/predictions/transform/LayerNorm", "cls.predictions.transform.LayerNorm")
    out["cls/predictions/output_bias"] = v("cls.predictions.bias")
    out["cls/seq_relationship/output_weights"] = v("cls.seq_relationship.weight")
    out["cls/seq_relationship/output_bias"] = v("cls.seq_relationship.bias")
    return out


def write_google_bert(model, folder, extra=None):
    arrays = hf_to_tf1_names(model.state_dict())
    # Optimizer slots and the step counter, as in released checkpoints.
    arrays["bert/pooler/dense/kernel/adam_m"] = np.zeros((32, 32), "float32")
    arrays["global_step"] = np.array(1000, "int64")
    arrays.update(extra or {})
    os.makedirs(folder, exist_ok=True)
    write_tf1_checkpoint(arrays, os.path.join(folder, "bert_model.ckpt"))
    config = hf_config().to_dict()
    config["hidden_act"] = "gelu"  # Google's "gelu" is the tanh form
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump({k: config[k] for k in ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                                         "intermediate_size", "hidden_act", "max_position_embeddings",
                                         "type_vocab_size", "initializer_range"]}, f)
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    return arrays


@pytest.mark.tf_only
def test_google_tf1_checkpoint_parity(tmp_path):
    model = randomize_torch_module(transformers.BertForPreTraining(hf_config("gelu_new")))
    folder = str(tmp_path / "uncased_L-2_H-32")
    write_google_bert(model, folder)
    data = random_encoder_inputs(2, 12, len(VOCAB), pad_from=8)
    positions = np.array([[1, 3, 5], [0, 6, 11]], "int32")
    pretrainer, tokenizer = convert.from_tf1_checkpoint(folder, pretrainer=True)
    assert pretrainer.backbone.activation == "gelu_approximate"
    compare(pretrainer, reference_outputs(model, data, positions), data, positions)
    assert tokenizer is not None


@pytest.mark.tf_only
def test_pytorch_bin_folder(tmp_path):
    """Folders with `pytorch_model.bin` (no safetensors) load the same way."""
    model = randomize_torch_module(transformers.BertModel(hf_config("gelu")))
    folder = str(tmp_path / "bin")
    model.config.save_pretrained(folder)  # config.json
    torch.save(model.state_dict(), os.path.join(folder, "pytorch_model.bin"))
    data = random_encoder_inputs(2, 12, len(VOCAB), pad_from=8)
    expected = torch_outputs(model, data, segments=True).last_hidden_state.numpy()
    backbone, tokenizer = convert.from_huggingface(folder)
    assert tokenizer is None  # no vocab.txt in this folder
    assert max_abs_diff(backbone(data)["sequence_output"], expected) <= TOLERANCE
