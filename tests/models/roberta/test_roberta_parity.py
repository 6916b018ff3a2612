"""Parity with the independent `transformers` RoBERTa (random tiny weights)."""

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaPretrainer
from tests.testing import TOLERANCE
from tests.testing import masked_lm_diffs
from tests.testing import max_abs_diff
from tests.testing import saved_random_torch_model
from tests.testing import to_numpy
from tests.testing import torch_outputs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB_SIZE = 64
PAD = 1


def hf_config(hidden_act="gelu"):
    return transformers.RobertaConfig(
        vocab_size=VOCAB_SIZE, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=20, type_vocab_size=1, pad_token_id=PAD,
        hidden_act=hidden_act, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def inputs(batch=2, length=12, pad_from=8, seed=0):
    """Padding (id 1, mask 0) at the end of row 0; real tokens never use the padding id."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(3, VOCAB_SIZE, (batch, length)).astype("int32")
    token_ids[:, 0] = 0  # <s>
    padding_mask = np.ones((batch, length), "int32")
    padding_mask[0, pad_from:] = 0
    token_ids[0, pad_from:] = PAD
    return {"token_ids": token_ids, "padding_mask": padding_mask}


@pytest.mark.parametrize("hidden_act", ["gelu", "relu"])
def test_masked_lm_parity(tmp_path, hidden_act):
    folder = str(tmp_path / "hf")
    model = saved_random_torch_model(transformers.RobertaForMaskedLM(hf_config(hidden_act)), folder)
    data = inputs()
    positions = np.array([[1, 3, 7], [0, 6, 11]], "int32")
    out = torch_outputs(model, data, output_hidden_states=True)
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, RobertaPretrainer) and tokenizer is None
    assert not pretrainer.backbone.use_pooler
    diff_hidden, diff_mlm = masked_lm_diffs(pretrainer, out, data, positions)
    print("max abs diff", diff_hidden, diff_mlm)
    assert diff_hidden <= TOLERANCE and diff_mlm <= TOLERANCE


def test_model_with_pooler_parity(tmp_path):
    folder = str(tmp_path / "hf")
    model = saved_random_torch_model(transformers.RobertaModel(hf_config()), folder)
    data = inputs()
    out = torch_outputs(model, data)
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, RobertaBackbone) and backbone.use_pooler
    ours = backbone(data)
    real = data["padding_mask"].astype(bool)
    diff_seq = max_abs_diff(to_numpy(ours["sequence_output"])[real], out.last_hidden_state.numpy()[real])
    diff_pool = max_abs_diff(ours["pooled_output"], out.pooler_output.numpy())
    print("max abs diff", diff_seq, diff_pool)
    assert diff_seq <= TOLERANCE and diff_pool <= TOLERANCE
