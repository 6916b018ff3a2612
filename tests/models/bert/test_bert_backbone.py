import numpy as np
import pytest

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.bert import BertBackbone
from tests.testing import random_encoder_inputs
from tests.testing import run_encoder_backbone_test
from tests.testing import to_numpy

TINY = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


def test_backbone_basics(tmp_path):
    data = random_encoder_inputs(2, 10, 50, pad_from=7)
    run_encoder_backbone_test(
        BertBackbone, TINY, data, tmp_path,
        expected_output_shape={"sequence_output": (2, 10, 16), "pooled_output": (2, 16)},
    )


@pytest.mark.tf_only  # counts do not depend on the backend; big models are slow to build
@pytest.mark.parametrize(
    "preset, params",
    [("bert_base_en_uncased", 109_482_240), pytest.param("bert_large_en_uncased", 335_141_888, marks=pytest.mark.large), ("bert_base_zh", 102_267_648)],
)
def test_published_parameter_counts(preset, params):
    assert BertBackbone.from_preset(preset).count_params() == params


@pytest.mark.tf_only
def test_small_presets_shapes():
    shapes = {
        "bert_tiny_en_uncased": (2, 128, 2),
        "bert_mini_en_uncased": (4, 256, 4),
        "bert_small_en_uncased": (4, 512, 8),
        "bert_medium_en_uncased": (8, 512, 8),
    }
    for name, (layers, hidden, heads) in shapes.items():
        config = BertBackbone.preset_configs[name]["config"]
        assert (config["num_layers"], config["hidden_dim"], config["num_heads"]) == (layers, hidden, heads)
        assert BertBackbone.from_preset(name).count_params() == bert_params(**config)


def bert_params(vocabulary_size, num_layers, hidden_dim, intermediate_dim, max_sequence_length, num_segments, **_):
    """BERT's parameter count written out (embeddings, blocks, pooler)."""
    h, i = hidden_dim, intermediate_dim
    embeddings = (vocabulary_size + max_sequence_length + num_segments) * h + 2 * h
    block = 4 * (h * h + h) + 2 * h + (h * i + i) + (i * h + h) + 2 * h
    return embeddings + num_layers * block + h * h + h


def test_formula_matches_published_base():
    config = BertBackbone.preset_configs["bert_base_en_uncased"]["config"]
    assert bert_params(**config) == 109_482_240


def test_unknown_preset_and_activation():
    with pytest.raises(ConfigError, match="unknown preset"):
        BertBackbone.from_preset("bert_gigantic")
    with pytest.raises(ConfigError, match="Unknown activation"):
        BertBackbone(**TINY, activation="gelu_fancy")


def test_padding_does_not_change_real_tokens():
    backbone = BertBackbone(**TINY)
    data = random_encoder_inputs(1, 8, 50)
    padded = {k: np.concatenate([v, np.zeros((1, 4), "int32")], axis=1) for k, v in data.items()}
    a = to_numpy(backbone(data)["sequence_output"])
    b = to_numpy(backbone(padded)["sequence_output"])[:, :8]
    np.testing.assert_allclose(a, b, atol=1e-5)
