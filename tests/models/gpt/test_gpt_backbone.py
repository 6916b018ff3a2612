import numpy as np
import pytest

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt import GPTBackbone
from keras_pretrain.models.gpt import expand_vocabulary
from tests.testing import run_encoder_backbone_test
from tests.testing import to_numpy

TINY = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


def decoder_inputs(batch=2, length=10, vocabulary_size=50, pad_from=7, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, vocabulary_size, (batch, length)).astype("int32")
    padding_mask = np.ones((batch, length), "int32")
    if pad_from is not None:
        token_ids[0, pad_from:] = 0
        padding_mask[0, pad_from:] = 0
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def test_backbone_basics(tmp_path):
    run_encoder_backbone_test(
        GPTBackbone, TINY, decoder_inputs(), tmp_path, expected_output_shape={"sequence_output": (2, 10, 16)},
    )


def gpt_params(vocabulary_size, num_layers, hidden_dim, intermediate_dim, max_sequence_length, **_):
    """GPT-1's parameter count written out (embeddings, blocks; no final LayerNorm)."""
    h, i = hidden_dim, intermediate_dim
    block = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    return (vocabulary_size + max_sequence_length) * h + num_layers * block


def test_gpt1_parameter_count():
    assert GPTBackbone.preset_configs["gpt1"]["params"] == 116_534_784
    assert gpt_params(**GPTBackbone.preset_configs["gpt1"]["config"]) == 116_534_784
    assert GPTBackbone.from_preset("gpt1").count_params() == 116_534_784


def test_small_presets():
    config = GPTBackbone.preset_configs["gpt_tiny"]["config"]
    assert GPTBackbone.from_preset("gpt_tiny").count_params() == gpt_params(**config)
    small = GPTBackbone.preset_configs["gpt_small"]["config"]
    assert (small["num_layers"], small["hidden_dim"], small["num_heads"]) == (4, 256, 4)
    with pytest.raises(ConfigError, match="unknown preset"):
        GPTBackbone.from_preset("gpt_huge")


def test_causality():
    """Changing token t never changes outputs before t (and does change t on)."""
    backbone = GPTBackbone(**TINY, dropout=0.0)
    data = decoder_inputs(batch=2, length=12, pad_from=None)
    base = to_numpy(backbone(data))
    for t in (0, 5, 11):
        changed = {k: v.copy() for k, v in data.items()}
        changed["token_ids"][:, t] = (changed["token_ids"][:, t] % 49) + 1
        out = to_numpy(backbone(changed))
        for ours, ref in zip(out["encoder_outputs"], base["encoder_outputs"]):
            np.testing.assert_array_equal(ours[:, :t], ref[:, :t])
            assert np.max(np.abs(ours[:, t:] - ref[:, t:])) > 1e-3


def test_right_padding_does_not_change_real_positions():
    backbone = GPTBackbone(**TINY, dropout=0.0)
    data = decoder_inputs(batch=1, length=10, pad_from=None)
    padded = {k: np.concatenate([v, np.zeros((1, 4), "int32")], axis=1) for k, v in data.items()}
    a = to_numpy(backbone(data))["sequence_output"]
    b = to_numpy(backbone(padded))["sequence_output"][:, :10]
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_expand_vocabulary_keeps_weights():
    backbone = GPTBackbone(**TINY)
    bigger = expand_vocabulary(backbone, 3, seed=0)
    assert bigger.vocabulary_size == 53
    old = to_numpy(backbone.token_embedding.embeddings)
    new = to_numpy(bigger.token_embedding.embeddings)
    np.testing.assert_array_equal(new[:50], old)
    data = decoder_inputs(pad_from=None)
    np.testing.assert_allclose(
        to_numpy(bigger(data)["sequence_output"]), to_numpy(backbone(data)["sequence_output"]), atol=1e-6
    )
