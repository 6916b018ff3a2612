"""`backend_kernels.projected_recurrence`: on JAX its own backward pass gives the gradients JAX's differentiation
of the plain scan gives (values, every input, clipping and padding included); elsewhere it is that scan."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_pretrain.layers import backend_kernels
from tests.testing import assert_all_close

W, B, C, D = 6, 3, 5, 4  # steps, batch, cell, projection


def cell(z, c):
    i, j, f, o = (z[:, k * C : (k + 1) * C] for k in range(4))
    c = ops.clip(ops.sigmoid(f + 1.0) * c + ops.sigmoid(i) * ops.tanh(j), -0.8, 0.8)
    return ops.sigmoid(o) * ops.tanh(c), c


def output(hidden, c, state, real_t):
    h = ops.clip(hidden, -0.3, 0.3)
    return ops.where(real_t > 0.5, ops.concatenate([h, c], axis=-1), state)


def arrays(seed=0):
    rng = np.random.default_rng(seed)
    gates = rng.normal(size=(W, B, 4 * C)).astype("float32")
    lengths = np.array([W, 3, 1])
    real = (np.arange(W)[:, None] < lengths[None, :]).astype("float32")[:, :, None]  # (W, B, 1)
    state0 = rng.normal(size=(B, D + C)).astype("float32") * 0.5
    kernel = rng.normal(size=(D, 4 * C)).astype("float32")
    projection = rng.normal(size=(C, D)).astype("float32")
    return gates, real, state0, kernel, projection


def test_the_recurrence_holds_the_state_through_padding_and_clips():
    gates, real, state0, kernel, projection = arrays()
    final, states = backend_kernels.projected_recurrence(cell, output, gates, real, state0, kernel, projection)
    final, states = ops.convert_to_numpy(final), ops.convert_to_numpy(states)
    assert states.shape == (W, B, D + C)
    assert_all_close(final[1], states[2, 1], atol=0, what="row 1 (3 real steps) ends at its last real step")
    assert_all_close(states[1:, 2], np.repeat(states[:1, 2], W - 1, axis=0), atol=0, what="row 2 held")
    assert np.abs(states[..., :D]).max() <= 0.3 + 1e-7 and np.abs(states[..., D:]).max() <= 0.8 + 1e-7
    # Clipping is active here (it changes the outputs).
    wide = backend_kernels.projected_recurrence(
        cell, lambda h, c, s, r: ops.where(r > 0.5, ops.concatenate([h, c], -1), s), gates, real, state0, kernel,
        projection)
    assert np.abs(ops.convert_to_numpy(wide[1])[..., :D]).max() > 0.3


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX kernel (elsewhere the scan itself runs)")
def test_jax_gradients_equal_the_differentiated_scan():
    import jax
    import jax.numpy as jnp

    gates, real, state0, kernel, projection = (jnp.asarray(a) for a in arrays(1))
    rng = np.random.default_rng(2)
    up_final = jnp.asarray(rng.normal(size=(B, D + C)).astype("float32"))
    up_states = jnp.asarray(rng.normal(size=(W, B, D + C)).astype("float32"))

    def loss(recurrence):
        def value(gates, state0, kernel, projection):
            final, states = recurrence(cell, output, gates, real, state0, kernel, projection)
            return jnp.sum(final * up_final) + jnp.sum(states * up_states)

        return jax.jit(jax.value_and_grad(value, argnums=(0, 1, 2, 3)))

    value, grads = loss(backend_kernels.projected_recurrence)(gates, state0, kernel, projection)
    expected_value, expected = loss(backend_kernels._scan_projected_recurrence)(gates, state0, kernel, projection)
    assert_all_close(value, expected_value, atol=1e-5, what="value")
    for name, got, want in zip(("gates", "state0", "kernel", "projection"), grads, expected):
        assert float(jnp.abs(want).max()) > 1e-2, name  # a gradient that is there to compare
        assert_all_close(got, want, atol=1e-5, what=f"d {name}")
    # The kernel is the one that ran: its backward pass is a custom VJP.
    jaxpr = str(jax.make_jaxpr(lambda g: backend_kernels.projected_recurrence(
        cell, output, g, real, state0, kernel, projection))(gates))
    assert "custom_vjp" in jaxpr
