import keras
import numpy as np
import pytest

from keras_pretrain.models.elmo import ElmoBackbone
from keras_pretrain.models.elmo import backbone_presets
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo import layer_stack
from tests.testing import run_backbone_test
from tests.testing import to_numpy

TINY = dict(num_layers=2, hidden_dim=8, lstm_dim=16, filters=[[1, 4], [2, 4], [3, 8]], num_highway=1,
            max_characters=12, cell_clip=3.0, proj_clip=3.0)
SENTENCES = [["the", "rain", "had", "only", "ceased", "."], ["gold", ",", "surely"]]


@pytest.fixture(scope="module")
def char_ids():
    return character_ids(SENTENCES, max_characters=12)  # (2, 8, 12), row 1 padded


def test_backbone_basics(tmp_path, char_ids):
    run_backbone_test(
        ElmoBackbone,
        TINY,
        {"char_ids": char_ids},
        tmp_path,
        expected_output_shape={
            "sequence_output": (2, 8, 16),
            "token_output": (2, 8, 8),
            "forward_output": (2, 8, 8),
            "backward_output": (2, 8, 8),
        },
    )


def test_layer_stack_and_padding(char_ids):
    backbone = ElmoBackbone(**TINY)
    outputs = backbone({"char_ids": char_ids})
    stack = to_numpy(layer_stack(outputs))
    assert stack.shape == (3, 2, 8, 16)
    # The token layer is duplicated to [x; x].
    np.testing.assert_array_equal(stack[0, :, :, :8], stack[0, :, :, 8:])
    np.testing.assert_array_equal(stack[0, :, :, :8], to_numpy(outputs["token_output"]))
    # Padding positions are zero and do not change the real ones: row 1 alone
    # (no padding) gives the same vectors, so the backward LM starts at its end.
    assert np.all(stack[:, 1, 5:] == 0)
    alone = to_numpy(layer_stack(backbone({"char_ids": char_ids[1:, :5]})))
    np.testing.assert_allclose(stack[:, 1, :5], alone[:, 0], atol=1e-5)


def test_directions_see_only_their_side(char_ids):
    backbone = ElmoBackbone(**{**TINY, "use_residual": True})
    base = backbone({"char_ids": char_ids})
    rng = np.random.default_rng(0)
    t = 3
    changed = char_ids.copy()
    changed[:, t, 1:5] = rng.integers(1, 257, (2, 4))
    after = backbone({"char_ids": changed})
    for j in range(1, 3):
        before_layer = to_numpy(base["encoder_outputs"][j])
        after_layer = to_numpy(after["encoder_outputs"][j])
        fwd_b, fwd_a = before_layer[..., :8], after_layer[..., :8]
        bwd_b, bwd_a = before_layer[..., 8:], after_layer[..., 8:]
        # Forward: positions before t never see token t; t and later do.
        np.testing.assert_array_equal(fwd_b[:, :t], fwd_a[:, :t])
        assert np.abs(fwd_b[:, t] - fwd_a[:, t]).max() > 1e-6
        assert np.abs(fwd_b[0, t + 1 :] - fwd_a[0, t + 1 :]).max() > 1e-6
        # Backward: positions after t never see token t; t and earlier do.
        np.testing.assert_array_equal(bwd_b[:, t + 1 :], bwd_a[:, t + 1 :])
        assert np.abs(bwd_b[:, t] - bwd_a[:, t]).max() > 1e-6
        assert np.abs(bwd_b[:, :t] - bwd_a[:, :t]).max() > 1e-6


@pytest.mark.skipif(
    keras.config.backend() != "tensorflow",
    reason="shapes do not depend on the backend: counted once, in the TF run (building 93.6M random weights is slow)",
)
@pytest.mark.parametrize("name,published", [("elmo_original", 93.6e6), ("elmo_medium", 28.0e6), ("elmo_small", 13.6e6)])
def test_preset_parameter_counts(name, published):
    # Backbone only (char CNN, highway, projection, both LSTMP stacks), no
    # word softmax: see elmo_presets.py. allennlp.org/elmo publishes 93.6M,
    # 28.0M and 13.6M (the reference sheet's "14.6M" for small is a typo).
    backbone = ElmoBackbone.from_preset(name)
    count = backbone.count_params()
    assert count == backbone_presets[name]["params"]
    assert abs(count - published) / published < 1e-3
