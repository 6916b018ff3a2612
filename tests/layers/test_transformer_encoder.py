"""Our TransformerEncoder against keras-hub's: same variables, same function, same gradients."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_pretrain.layers.transformer_encoder import TransformerEncoder
from tests.block_parity import assert_config_round_trip
from tests.block_parity import assert_dropout_in_training_only
from tests.block_parity import assert_one_step_gives_the_same_weights
from tests.block_parity import assert_same_variables
from tests.block_parity import block_inputs
from tests.block_parity import relative
from tests.block_parity import same_weights
from tests.testing import assert_all_close

HIDDEN, HEADS, INTERMEDIATE = 16, 2, 32


def pair(normalize_first=False, dropout=0.0, ours_dropout=None, seed=0):
    """keras-hub's layer and ours with identical (random, non-trivial) weights."""
    kwargs = dict(intermediate_dim=INTERMEDIATE, num_heads=HEADS, normalize_first=normalize_first,
                  activation=keras_hub.layers.TransformerEncoder(1, 1).activation)
    reference = keras_hub.layers.TransformerEncoder(dropout=dropout, **kwargs)
    ours = TransformerEncoder(dropout=dropout if ours_dropout is None else ours_dropout, **kwargs)
    return same_weights(reference, ours, (2, 7, HIDDEN), seed)


def inputs(seed=0):
    return block_inputs(7, HIDDEN, seed)


def test_same_variables_as_keras_hub():
    reference, ours = pair()
    assert_same_variables(reference, ours)
    assert len(ours.non_trainable_weights) == len(reference.non_trainable_weights)
    assert "query" in relative(ours.weights[0].path)


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("use_attention_mask", [False, True])
def test_inference_matches_keras_hub(normalize_first, use_attention_mask):
    """Fused attention path (no active dropout), padding and fully masked rows included."""
    reference, ours = pair(normalize_first, dropout=0.1)
    x, padding, attention = inputs()
    attention = attention if use_attention_mask else None
    expected = reference(x, padding_mask=padding, attention_mask=attention)
    actual = ours(x, padding_mask=padding, attention_mask=attention)
    assert_all_close(actual, expected, atol=1e-5, what="inference outputs")


@pytest.mark.parametrize("normalize_first", [False, True])
def test_training_path_matches_keras_hub(normalize_first):
    """The explicit attention path (taken while dropout is active) at a rate that drops nothing.

    keras-hub's reference at the same rate also takes keras' explicit masked-softmax path, where a
    query with no visible key gets zero probabilities (keras' fused path, used when the rate is 0,
    gives it uniform ones instead; ours always follows the masked softmax).
    """
    reference, ours = pair(normalize_first, dropout=1e-9)
    x, padding, attention = inputs(1)
    expected = reference(x, padding_mask=padding, attention_mask=attention)
    actual = ours(x, padding_mask=padding, attention_mask=attention, training=True)
    assert_all_close(actual, expected, atol=1e-5, what="training-path outputs")


def test_gradients_match_keras_hub():
    """One SGD step through each layer (explicit attention path on ours) gives the same weights."""
    reference, ours = pair(ours_dropout=1e-9)
    assert_one_step_gives_the_same_weights(reference, ours, 7, HIDDEN, "padding_mask")


def test_dropout_is_active_in_training_only():
    _, ours = pair(dropout=0.5)
    x, padding, _ = inputs()
    inference = assert_dropout_in_training_only(ours, x, padding_mask=padding)
    assert_all_close(ours(x, padding_mask=padding), inference, atol=0, what="inference is deterministic")


def test_attention_scores_fall_back_to_keras_hub():
    reference, ours = pair()
    x, padding, _ = inputs()
    out, scores = ours(x, padding_mask=padding, return_attention_scores=True)
    expected, expected_scores = reference(x, padding_mask=padding, return_attention_scores=True)
    assert_all_close(out, expected, atol=1e-6)
    assert_all_close(scores, expected_scores, atol=1e-6)


def test_config_round_trip():
    _, ours = pair(normalize_first=True, dropout=0.1)
    assert_config_round_trip(ours, TransformerEncoder, "keras_pretrain>TransformerEncoder")


@pytest.mark.parametrize("normalize_first", [False, True])
@pytest.mark.parametrize("use_attention_mask", [False, True])
@pytest.mark.parametrize("training", [False, True])
def test_query_positions_equal_the_gathered_full_output(normalize_first, use_attention_mask, training):
    """The block run only at some positions equals the full block's rows there.

    Repeated positions, a padded position and an all-padding sequence included; `training` takes the
    explicit attention path (dropout rate too small to drop anything).
    """
    _, ours = pair(normalize_first, dropout=1e-9 if training else 0.1)
    x, padding, attention = inputs(4)
    attention = attention if use_attention_mask else None
    positions = np.array([[0, 3, 3, 6], [1, 5, 2, 0], [4, 0, 1, 2]], "int32")
    full = keras.ops.convert_to_numpy(
        ours(x, padding_mask=padding, attention_mask=attention, training=training)
    )
    expected = np.take_along_axis(full, positions[:, :, None], axis=1)
    actual = ours(x, padding_mask=padding, attention_mask=attention, training=training,
                  query_positions=positions)
    assert tuple(actual.shape) == (3, 4, HIDDEN)
    assert_all_close(actual, expected, atol=1e-5, what="rows at query_positions")
    assert np.abs(expected[0, 0] - expected[0, 1]).max() > 1e-3  # the rows differ: a real check


def test_query_positions_gradients_equal_the_gathered_full_output():
    """A loss on the rows at the positions gives the same weight gradients either way (one SGD step)."""
    positions = np.array([[0, 3], [1, 5], [4, 0]], "int32")
    x, padding, _ = inputs(5)
    target = np.random.default_rng(6).normal(size=(3, 2, HIDDEN)).astype("float32")
    trained = []
    for use_positions in (False, True):
        _, layer = pair(ours_dropout=1e-9, seed=7)
        features = keras.Input((7, HIDDEN))
        mask = keras.Input((7,), dtype="int32")
        where = keras.Input((2,), dtype="int32")
        if use_positions:
            out = layer(features, padding_mask=mask, query_positions=where)
        else:
            full = layer(features, padding_mask=mask)
            out = keras.ops.take_along_axis(full, keras.ops.expand_dims(where, -1), axis=1)
        model = keras.Model([features, mask, where], out)
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
        model.train_on_batch([x, padding, positions], target)
        trained.append([keras.ops.convert_to_numpy(w) for w in layer.weights])
    moved = max(np.abs(a - b).max() for a, b in zip(trained[0], pair(seed=7)[1].weights))
    assert moved > 1e-4  # the step changed the weights
    for full_step, positions_step in zip(*trained):
        assert_all_close(positions_step, full_step, atol=1e-5, what="weights after one step")


def _quantized_int8(layer):
    """A model of `layer` (padding mask included) after `Model.quantize("int8")` (the layer is shared)."""
    x, padding = keras.Input((7, HIDDEN)), keras.Input((7,), dtype="int32")
    model = keras.Model([x, padding], layer(x, padding_mask=padding))
    model.quantize("int8")
    return model


@pytest.mark.parametrize("normalize_first", [False, True])
def test_int8_quantized_block_matches_keras_hub_quantized(normalize_first):
    """After `quantize("int8")` the fused attention path uses the int8 kernels with their scales (it read the
    raw int8 values before: outputs off by several units)."""
    reference, ours = pair(normalize_first, dropout=0.1)  # keras-hub's masked-softmax path, as above
    x, padding, _ = inputs()
    float_out = keras.ops.convert_to_numpy(ours(x, padding_mask=padding))
    expected = keras.ops.convert_to_numpy(_quantized_int8(reference)([x, padding]))
    actual = keras.ops.convert_to_numpy(_quantized_int8(ours)([x, padding]))
    assert_all_close(actual, expected, atol=1e-4, what="int8 outputs")
    error = np.abs(actual - float_out).max()
    assert 0 < error < 0.1, error  # quantized (not the float path), and close to it
    positions = np.array([[0, 3], [1, 5], [4, 0]], "int32")
    rows = keras.ops.convert_to_numpy(ours(x, padding_mask=padding, query_positions=positions))
    assert_all_close(rows, np.take_along_axis(actual, positions[:, :, None], axis=1), atol=1e-4,
                     what="int8 rows at query_positions")
