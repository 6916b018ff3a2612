"""Dropout masks: Bernoulli(1 - rate) (binomial standard-error tolerances), scaling, fresh per step."""

import keras
import numpy as np
import pytest

from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.dropout import keep_threshold

SIGMAS = 5  # tolerance in binomial standard errors


def within(count, trials, p):
    """|count / trials - p| within SIGMAS binomial standard errors."""
    se = np.sqrt(p * (1 - p) / trials)
    return abs(count / trials - p) <= SIGMAS * se, (count / trials, p, se)


def draw(layer, shape, training=True):
    return keras.ops.convert_to_numpy(layer(np.ones(shape, "float32"), training=training))


@pytest.mark.parametrize("rate", [0.1, 0.5])
@pytest.mark.parametrize("shape", [(32, 100, 64), (7, 5, 333)])  # even and odd element counts
def test_bernoulli_keep_rate_and_scaling(rate, shape):
    out = draw(Dropout(rate), shape)
    kept = out != 0
    # Kept values are scaled by exactly 1 / (1 - rate), dropped ones are exactly 0.
    np.testing.assert_allclose(out[kept], 1.0 / (1.0 - rate), rtol=1e-6)
    ok, info = within(kept.sum(), kept.size, 1.0 - rate)
    assert ok, info
    # The 16-bit threshold is within 2**-17 of 1 - rate.
    assert abs(keep_threshold(rate) / 65536 - (1.0 - rate)) <= 2.0**-17


def test_neighbours_independent():
    """Adjacent elements share one 32-bit draw (two 16-bit halves): both kept with probability p^2."""
    p = 0.5
    kept = draw(Dropout(1 - p), (64, 64, 64)).reshape(-1, 2) != 0
    ok, info = within(np.logical_and(kept[:, 0], kept[:, 1]).sum(), len(kept), p * p)
    assert ok, info
    ok, info = within(kept[:, 0].sum(), len(kept), p)
    assert ok, info


def test_masks_differ_between_calls_and_are_seeded():
    rate = 0.3
    layer = Dropout(rate, seed=7)
    first, second = draw(layer, (64, 1000)) != 0, draw(layer, (64, 1000)) != 0
    # Independent masks differ at a fraction 2 p (1 - p) of the positions.
    p = 1 - rate
    ok, info = within((first != second).sum(), first.size, 2 * p * (1 - p))
    assert ok, info
    # The same seed gives the same sequence of masks.
    again = Dropout(rate, seed=7)
    assert np.array_equal(draw(again, (64, 1000)) != 0, first)


def test_identity_at_inference():
    x = np.random.default_rng(0).normal(size=(4, 8)).astype("float32")
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(Dropout(0.5)(x)), x)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(Dropout(0.0)(x, training=True)), x)


def training_step_masks(rate, size, steps=2, jit_compile="auto", seed=None):
    """The masks of `steps` compiled train steps of y = Dropout(x * w), x = 1, loss mean(y).

    One SGD step (lr 1) moves w_j by -mask_j / (D (1 - rate)), so the update reveals the step's mask.
    """

    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1],), initializer="ones")

        def call(self, x):
            return x * self.w

    inputs = keras.Input((size,))
    model = keras.Model(inputs, Dropout(rate, seed=seed)(Scale()(inputs)))
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss=lambda y, p: keras.ops.mean(p), jit_compile=jit_compile)
    x, y = np.ones((1, size), "float32"), np.zeros((1, size), "float32")
    masks, previous = [], keras.ops.convert_to_numpy(model.weights[0])
    for _ in range(steps):
        model.train_on_batch(x, y)
        current = keras.ops.convert_to_numpy(model.weights[0])
        step = previous - current
        masks.append(step > 0)
        np.testing.assert_allclose(step[step > 0], 1.0 / (size * (1 - rate)), rtol=1e-4)
        previous = current
    return masks


def test_masks_differ_between_training_steps():
    """Inside the compiled train step the mask is redrawn each step."""
    rate, size = 0.25, 4096
    masks = training_step_masks(rate, size)
    p = 1 - rate
    for mask in masks:
        ok, info = within(mask.sum(), size, p)
        assert ok, info
    ok, info = within((masks[0] != masks[1]).sum(), size, 2 * p * (1 - p))
    assert ok, info


def test_config_round_trip():
    layer = Dropout(0.2, seed=3)
    config = keras.saving.serialize_keras_object(layer)
    assert config["registered_name"] == "keras_pretrain>Dropout"
    restored = keras.saving.deserialize_keras_object(config)
    assert type(restored) is Dropout and restored.rate == 0.2 and restored.seed == 3


@pytest.mark.parametrize("rate", [0.1, 0.6])
def test_every_element_position_has_the_keep_rate(rate):
    """Each position modulo 2, 3 and 4 keeps at 1 - rate, and pairs inside a draw are independent.

    Masks are cut from wider random words (two 16-bit halves of 32 bits on JAX / TensorFlow,
    three 16-bit words of a 63-bit draw on PyTorch): a word cut at the wrong place (e.g. the
    15-bit top word) would keep one position in 3 or 4 at a wrong rate.
    """
    kept = draw(Dropout(rate), (96, 2048)).reshape(-1) != 0
    assert_positions_keep_rate(kept, 1.0 - rate, word=3)


def assert_positions_keep_rate(kept, p, word):
    """Each position modulo 2, 3 and 4 of the flat mask `kept` keeps at `p`, and the positions inside each
    group of `word` consecutive elements are pairwise independent (kept together at p^2)."""
    for period in (2, 3, 4):
        columns = kept.reshape(-1, period)
        for j in range(period):
            ok, info = within(columns[:, j].sum(), len(columns), p)
            assert ok, (period, j, info)
    groups = kept.reshape(-1, word)
    for a in range(word):
        for b in range(a + 1, word):
            ok, info = within(np.logical_and(groups[:, a], groups[:, b]).sum(), len(groups), p * p)
            assert ok, (a, b, info)


@pytest.mark.tf_only
def test_xla_compilation_is_detected():
    """TensorFlow's masks come from ThreeFry exactly when the function is compiled with XLA."""
    import tensorflow as tf

    from keras_pretrain.layers.backend_kernels import _in_xla_compilation

    seen = {}

    def probe(name):
        def fn(x):
            seen[name] = _in_xla_compilation()
            return x

        return fn

    tf.function(probe("graph"))(tf.constant(1.0))
    tf.function(probe("xla"), jit_compile=True)(tf.constant(1.0))
    assert not _in_xla_compilation() and seen == {"graph": False, "xla": True}


@pytest.mark.tf_only
@pytest.mark.parametrize("rate", [0.1, 0.6])
def test_xla_masks_keep_rate_per_position(rate):
    """Under XLA four elements share one 64-bit ThreeFry draw: each position modulo 2, 3 and 4 keeps at
    1 - rate, the four 16-bit words of a draw are pairwise independent, kept values are scaled exactly,
    and the masks are fresh per call, seeded, and other than the Philox masks outside XLA."""
    import tensorflow as tf

    shape, p = (96, 2048), 1.0 - rate
    ones = tf.ones(shape)
    layer = Dropout(rate, seed=11)
    xla = tf.function(lambda x: layer(x, training=True), jit_compile=True)
    first, second = xla(ones).numpy(), xla(ones).numpy()
    np.testing.assert_allclose(first[first != 0], 1.0 / p, rtol=1e-6)
    assert_positions_keep_rate(first.reshape(-1) != 0, p, word=4)
    ok, info = within(((first != 0) != (second != 0)).sum(), first.size, 2 * p * (1 - p))
    assert ok, ("fresh per call", info)
    again = Dropout(rate, seed=11)
    assert np.array_equal(tf.function(lambda x: again(x, training=True), jit_compile=True)(ones).numpy(), first)
    philox = Dropout(rate, seed=11)
    outside = tf.function(lambda x: philox(x, training=True))(ones).numpy()
    ok, info = within(((outside != 0) != (first != 0)).sum(), first.size, 2 * p * (1 - p))
    assert ok, ("ThreeFry's masks, not Philox's", info)


@pytest.mark.tf_only
def test_xla_train_step_masks_differ_between_steps():
    rate, size = 0.25, 4096
    p = 1 - rate
    masks = training_step_masks(rate, size, jit_compile=True, seed=5)
    for mask in masks:
        ok, info = within(mask.sum(), size, p)
        assert ok, info
    ok, info = within((masks[0] != masks[1]).sum(), size, 2 * p * (1 - p))
    assert ok, info
    assert all(np.array_equal(a, b) for a, b in zip(masks, training_step_masks(rate, size, jit_compile=True, seed=5)))
