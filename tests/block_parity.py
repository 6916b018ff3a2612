"""Shared parts of the transformer-block parity tests (our blocks against keras-hub's, same weights): the pair of
layers with identical random weights, the inputs, one SGD step, and the checks every block gets."""

import keras
import numpy as np

from tests.testing import assert_all_close

BATCH = 3


def same_weights(reference, ours, shape, seed=0):
    """`(reference, ours)` built for `shape`, every weight of both set to the same random (normal, sd 0.3) value."""
    rng = np.random.default_rng(seed)
    reference.build(shape)
    ours.build(shape)
    for mine, theirs in zip(ours.weights, reference.weights):
        value = rng.normal(0, 0.3, theirs.shape).astype("float32")
        theirs.assign(value)
        mine.assign(value)
    return reference, ours


def block_inputs(length, hidden, seed=0):
    """`(x, padding, attention)`: `BATCH` random sequences, the second padded from position 4 on, the third all
    padding (every query row fully masked), and a random attention mask."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, length, hidden)).astype("float32")
    padding = np.ones((BATCH, length), "int32")
    padding[1, 4:] = 0  # padding on the right
    padding[2, :] = 0  # an all-padding sequence: every query row fully masked
    attention = rng.random((BATCH, length, length)) > 0.3
    return x, padding, attention


def relative(path):
    return path.split("/", 1)[1]


def assert_same_variables(reference, ours):
    """The same variable paths (below the layer's own name) and shapes, in the same order."""
    assert [relative(v.path) for v in ours.weights] == [relative(v.path) for v in reference.weights]
    assert [tuple(v.shape) for v in ours.weights] == [tuple(v.shape) for v in reference.weights]


def sgd_step(layer, x, padding, target, mask_argument):
    """One `SGD(1.0)` step on the mean squared error of a model of `layer` (its padding mask passed as the keyword
    `mask_argument`) on `([x, padding], target)`."""
    features = keras.Input(x.shape[1:])
    mask = keras.Input(padding.shape[1:], dtype="int32")
    model = keras.Model([features, mask], layer(features, **{mask_argument: mask}))
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
    model.train_on_batch([x, padding], target)


def assert_one_step_gives_the_same_weights(reference, ours, length, hidden, mask_argument):
    """One `sgd_step` through each layer (`block_inputs(length, hidden)` of seed 2, the first 3 positions of the
    all-padding row made real, a random target) leaves both with the same weights."""
    x, padding, _ = block_inputs(length, hidden, 2)
    padding[2, :3] = 1
    target = np.random.default_rng(3).normal(size=x.shape).astype("float32")
    for layer in (reference, ours):
        sgd_step(layer, x, padding, target, mask_argument)
    for mine, theirs in zip(ours.weights, reference.weights):
        assert_all_close(mine, theirs, atol=1e-5, what=relative(theirs.path))


def assert_dropout_in_training_only(layer, x, **kwargs):
    """Two training calls differ from each other and from the inference call (all with `kwargs`); returns the
    inference output."""
    first = keras.ops.convert_to_numpy(layer(x, training=True, **kwargs))
    second = keras.ops.convert_to_numpy(layer(x, training=True, **kwargs))
    inference = keras.ops.convert_to_numpy(layer(x, **kwargs))
    assert np.abs(first - second).max() > 1e-2
    assert np.abs(first - inference).max() > 1e-2
    return inference


def assert_config_round_trip(layer, cls, registered_name):
    """`layer` serializes under `registered_name` and deserializes to a `cls` with the same config."""
    config = keras.saving.serialize_keras_object(layer)
    assert config["registered_name"] == registered_name
    restored = keras.saving.deserialize_keras_object(config)
    assert type(restored) is cls
    assert restored.get_config() == layer.get_config()
