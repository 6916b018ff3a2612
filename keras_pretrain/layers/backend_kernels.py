"""Backend-specific kernels of `keras_pretrain.layers` (the only backend code in layers/).

Where the fastest formulation differs between backends (each choice measured
in a training step, see benchmarks/RESULTS.md), the choice is made here and
the layers call these functions: the masked-LM head's bias (`add_bias_to_rows`)
and loss (`sparse_crossentropy_from_logits`), dropout, GELU on TensorFlow
(`gelu`: one XLA kernel each way, see `activations.py`), and the recurrence of
ELMo's LSTM with a projection on JAX (`projected_recurrence`: its own backward
pass; the only backend code of that family, so it lives here too).

Dropout masks: cheaper than Keras' (same rates, same seed state as Keras'),
and no `keras.ops` formulation draws them as cheaply, so each backend has
its own kernel here; `dropout()` picks the current backend's.

Keras draws one 32-bit random number per element for its dropout masks
(a float32 uniform from a threefry key on JAX, from Philox on TensorFlow,
`bernoulli_` on PyTorch). On CPU that is expensive: with Keras' masks,
dropout was 12% (small BERT) and 7% (BERT-base) of the JAX training step's
op time, the mask generation most of it.

Here, on JAX and TensorFlow, the *same* generator (the threefry key Keras'
`SeedGenerator` yields on JAX, TensorFlow's stateless Philox with Keras'
seed) draws 32 bits for every *two* elements, and an element is kept when
its 16-bit half is below `round(65536 * (1 - rate))`: a Bernoulli mask
with keep probability `round(65536 * (1 - rate)) / 65536`, within 2**-17
of `1 - rate` (0.899994 for rate 0.1). Kept values are scaled by
`1 / (1 - rate)`, as Keras does.

Inside a TensorFlow function compiled with XLA (`jit_compile=True`: our
masked-LM pretrainers on CPU, TPUs), the 16-bit words come four to a
64-bit draw of XLA's ThreeFry (`alg="threefry"`) from the same seed:
XLA:CPU compiles Philox into slow code (a [1024, 768] mask 2.4 ms, against
0.4 ms with ThreeFry and 1.2 ms for TensorFlow's own Philox kernel), and
the BERT-base MLM step with dropout 0.1 under XLA took 2.88 s against
3.04 s with Philox (1.05x, 1.03-1.08, 8 interleaved rounds, 2 threads),
about as long as the step without dropout. TensorFlow's kernels have no
ThreeFry on CPU, so outside XLA the masks stay Philox's: for the same
seed, a step compiled with XLA draws other masks than the same step
without it (the same distribution).

On PyTorch, Keras' unseeded dropout is `torch.nn.functional.dropout` (a
float mask filled by `bernoulli_`, slow on CPU); here the same global
generator fills 63 random bits per 64-bit draw and three 16-bit words of
each make three masks (same threshold as above), applied as one multiply:
about 0.05 s less per BERT-base training step than `torch.rand` masks on 2
CPU cores. A seeded `SeedGenerator` falls back to Keras' seeded path.
"""

import functools
import math
import sys

import keras
from keras import ops

_BITS = 16
_LEVELS = 1 << _BITS


def keep_threshold(rate):
    """The 16-bit threshold: elements with bits below it are kept."""
    return min(_LEVELS, max(0, round((1.0 - rate) * _LEVELS)))


def _jax_keep_mask(seed, rate, shape):
    """Keep booleans of `shape` from a threefry uint32[2] key (Keras' seed)."""
    import jax
    import jax.numpy as jnp

    threshold = keep_threshold(rate)
    if threshold == _LEVELS:
        return jnp.ones(shape, "bool")
    size = math.prod(shape)
    if shape and shape[-1] % 2 == 0:
        bits = jax.random.bits(seed, tuple(shape[:-1]) + (shape[-1] // 2,))
        halves = jax.lax.bitcast_convert_type(bits, jnp.uint16)
        halves = jnp.reshape(halves, shape)
    else:
        bits = jax.random.bits(seed, ((size + 1) // 2,))
        halves = jax.lax.bitcast_convert_type(bits, jnp.uint16)
        halves = jnp.reshape(jnp.reshape(halves, (-1,))[:size], shape)
    return halves < jnp.uint16(threshold)


def _in_xla_compilation():
    """Whether TensorFlow is tracing a function it will compile with XLA (`jit_compile=True`, TPUs)."""
    import tensorflow as tf

    if tf.executing_eagerly():
        return False
    try:
        # private API (pinned TF 2.21): TensorFlow has no public test for an XLA context.
        from tensorflow.python.ops import control_flow_util
    except ImportError:  # pragma: no cover
        return False
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def _tf_keep_mask(seed, rate, inputs):
    """Keep booleans shaped like `inputs` from Keras' seed: stateless Philox, or ThreeFry under XLA."""
    import tensorflow as tf

    threshold = keep_threshold(rate)
    shape = tf.shape(inputs)
    if threshold == _LEVELS:
        return tf.ones(shape, "bool")
    size = tf.reduce_prod(shape)
    seed = tf.cast(seed, "int64")
    # Under XLA 64 bits of ThreeFry per four elements, else 32 of Philox per two (the module's docstring).
    dtype, words, alg = (tf.uint64, 4, "threefry") if _in_xla_compilation() else (tf.uint32, 2, "auto_select")
    bits = tf.random.stateless_uniform(
        [(size + words - 1) // words], seed, minval=None, maxval=None, dtype=dtype, alg=alg
    )
    halves = tf.reshape(tf.bitcast(bits, tf.uint16), [-1])[:size]
    return tf.reshape(halves < tf.constant(threshold, tf.uint16), shape)


def _torch_keep_mask(rate, inputs):
    """Keep booleans shaped like `inputs` from torch's global generator.

    `random_()` on int64 fills 63 random bits per element (PyTorch draws one
    64-bit number and keeps it in [0, 2**63)); the three low 16-bit words of
    each are three independent uniform 16-bit draws (the top word has 15).
    """
    import torch

    threshold = keep_threshold(rate)
    if threshold == _LEVELS:
        return torch.ones(inputs.shape, dtype=torch.bool, device=inputs.device)
    size = inputs.numel()
    bits = torch.empty(((size + 2) // 3,), dtype=torch.int64, device=inputs.device)
    words = bits.random_().view(torch.int16).view(-1, 4)
    low = slice(0, 3) if sys.byteorder == "little" else slice(1, 4)
    # Signed 16-bit words: u < threshold  <=>  u - 2**15 < threshold - 2**15.
    keep = words[:, low] < threshold - (_LEVELS // 2)
    return keep.reshape(-1)[:size].reshape(inputs.shape)


def dropout(inputs, rate, seed_generator):
    """`inputs` with a Bernoulli(1 - rate) mask, scaled by `1 / (1 - rate)`.

    Draws one seed from `seed_generator` per call, as Keras' dropout does (so
    masks differ between calls and training steps). Training mode only: the
    caller skips it at inference.

    Args:
        inputs: float tensor.
        rate: float in [0, 1), fraction of the elements zeroed.
        seed_generator: a `keras.random.SeedGenerator` (the `seed_generator`
            of a `keras.layers.Dropout`).
    """
    if rate <= 0:
        return inputs
    keep_prob = 1.0 - rate
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        seed = seed_generator.next()
        mask = _jax_keep_mask(seed, rate, tuple(inputs.shape))
        return jax.lax.select(
            mask, inputs / keep_prob, jax.numpy.zeros_like(inputs)
        )
    if backend == "tensorflow":
        mask = _tf_keep_mask(seed_generator.next(), rate, inputs)
        return inputs * (ops.cast(mask, inputs.dtype) * (1.0 / keep_prob))
    if backend == "torch" and seed_generator._initial_seed is None:
        # Keras' unseeded torch dropout draws from torch's global generator
        # too (`torch.nn.functional.dropout`, a float `bernoulli_` mask).
        mask = _torch_keep_mask(rate, inputs)
        return inputs * (mask * (1.0 / keep_prob))
    return keras.random.dropout(inputs, rate, seed=seed_generator)


def add_bias_to_rows(x, bias):
    """`x [N, V] + bias [V]`.

    On JAX, as `ones[N, 1] @ bias[1, V]`: the same sum, but XLA
    differentiates it into a [1, N] x [N, V] matmul instead of a column
    reduction of the [N, V] gradient (several times slower on XLA:CPU).
    """
    if keras.backend.backend() != "jax":
        return x + bias
    ones = ops.ones((ops.shape(x)[0], 1), x.dtype)
    return x + ops.matmul(ones, ops.expand_dims(ops.cast(bias, x.dtype), 0))


def label_logits(labels, logits):
    """`logits[i, labels[i]]` for int labels [N] and logits [N, V]."""
    return ops.take_along_axis(logits, labels[:, None], axis=-1)[:, 0]


def sparse_crossentropy_from_logits(labels, logits):
    """Cross-entropy [N] of int labels [N] against logits [N, V].

    PyTorch's fused cross-entropy reads the vocabulary axis of the 2-D logits
    in place; TensorFlow uses its fused op, as Keras does; on JAX
    `logsumexp(logits) - logits[label]` avoids Keras' one-hot [N, V] product
    (on TensorFlow the gather's gradient, an `UnsortedSegmentSum` over the
    logits, would cost more than it saves).
    """
    if keras.backend.backend() == "jax":
        return ops.logsumexp(logits, axis=-1) - label_logits(labels, logits)
    return ops.sparse_categorical_crossentropy(labels, logits, from_logits=True)


@functools.cache
def _tf_fused(approximate):
    """`x -> gelu(x)` with an XLA kernel forward and an XLA kernel backward."""
    import tensorflow as tf

    plain = functools.partial(keras.activations.gelu, approximate=approximate)
    forward = tf.function(plain, jit_compile=True, reduce_retracing=True, autograph=False)

    @tf.function(jit_compile=True, reduce_retracing=True, autograph=False)
    def backward(x, upstream):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = plain(x)
        return tape.gradient(y, x, output_gradients=upstream)

    @tf.custom_gradient
    def fused(x):
        return forward(x), lambda upstream: backward(x, upstream)

    return fused


def _fusing(x):
    """Whether `x` is traced into a TensorFlow graph that is not being saved."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf

    if tf.executing_eagerly() or not tf.is_tensor(x) or not x.dtype.is_floating:
        return False
    from tensorflow.python.saved_model import save_context  # private; pinned TF 2.21

    return not save_context.in_save_context()


def gelu(x, approximate):
    """GELU; on TensorFlow, inside a graph that is not being saved, the fused kernels (`activations.py`)."""
    if _fusing(x):
        return _tf_fused(approximate)(x)
    return keras.activations.gelu(x, approximate=approximate)


def projected_recurrence(cell, output, gates_x, real, state0, recurrent_kernel, projection):
    """The recurrence of an LSTM with a projection (LSTMP), over time-major inputs.

    With the state `[h; c]` (B, D + C), for t = 0 .. W - 1:

        z = gates_x[t] + h @ recurrent_kernel       # (B, 4C)
        m, c' = cell(z, c)                          # (B, C) each, elementwise
        state = output(m @ projection, c', state, real[t])

    `cell` and `output` are elementwise (keras.ops); `real` (W, B, 1) is 1.0
    at real steps, 0.0 at padding. Returns `(final state, states (W, B, D + C))`.

    On TensorFlow and PyTorch: `keras.ops.scan` (a while loop, a Python
    loop), differentiated by the backend. On JAX, `lax.scan` with its own
    backward pass, the same gradients (to float rounding) with less work
    than JAX's differentiation of the scan. That one multiplies `dz @ U^T`
    reading `U` (D, 4C) across its rows (on XLA:CPU 3.4x slower than the
    forward `h @ U` at B = 8), and adds each step's outer products `h^T dz`
    and `m^T dh` into the weight gradients inside the loop (per step, a
    [D, 4C] matmul of rank B and a 32 MB add at ELMo's size). Here the
    backward loop multiplies by `U^T` and `projection^T` transposed once,
    only carries the state's gradient, and the weight gradients are two
    matmuls over all W * B rows after it.
    """
    if keras.backend.backend() == "jax":
        return _jax_projected_recurrence(cell, output, gates_x, real, state0, recurrent_kernel, projection)
    return _scan_projected_recurrence(cell, output, gates_x, real, state0, recurrent_kernel, projection)


def _scan_projected_recurrence(cell, output, gates_x, real, state0, recurrent_kernel, projection):
    """`projected_recurrence` as one `keras.ops.scan`, differentiated by the backend."""
    dim = recurrent_kernel.shape[0]
    # Keras' TF `scan` takes one tensor of unknown length (the mask rides along as one more column) and
    # needs outputs shaped like the carry.
    steps = ops.concatenate([gates_x, real], axis=-1)  # (W, B, 4C + 1)

    def step(state, inputs_t):
        z = inputs_t[:, :-1] + ops.matmul(state[:, :dim], recurrent_kernel)
        m, c = cell(z, state[:, dim:])
        state = output(ops.matmul(m, projection), c, state, inputs_t[:, -1:])
        return state, state

    return ops.scan(step, state0, steps)


def _jax_projected_recurrence(cell, output, gates_x, real, state0, recurrent_kernel, projection):
    """`projected_recurrence` on JAX: `lax.scan` forward, the backward pass of its docstring."""
    import jax
    import jax.numpy as jnp

    dim = recurrent_kernel.shape[0]

    def recurrence_forward(gates, real, state, kernel, proj):
        def step(state, xs):
            gates_t, real_t = xs
            z = gates_t + state[:, :dim] @ kernel
            m, c = cell(z, state[:, dim:])
            hidden = m @ proj
            new = output(hidden, c, state, real_t)
            return new, (new, z, hidden)

        final, (states, zs, hiddens) = jax.lax.scan(step, state, (gates, real))
        return (final, states), (real, state, kernel, proj, states, zs, hiddens)

    @jax.custom_vjp
    def recurrence(gates, real, state, kernel, proj):
        # The saved z and hidden are dropped by jit (one scan output is lowered).
        return recurrence_forward(gates, real, state, kernel, proj)[0]

    def recurrence_backward(residuals, cotangents):
        real, state0, kernel, proj, states, zs, hiddens = residuals
        d_final, d_states = cotangents
        previous = jnp.concatenate([state0[None], states[:-1]], axis=0)  # the state before each step
        kernel_t, proj_t = jnp.transpose(kernel), jnp.transpose(proj)

        def back(d_state, xs):
            d_out, z, prev, hidden, real_t = xs
            (m, c), cell_vjp = jax.vjp(cell, z, prev[:, dim:])
            _, output_vjp = jax.vjp(lambda h, c, s: output(h, c, s, real_t), hidden, c, prev)
            d_hidden, d_c, d_prev = output_vjp(d_state + d_out)
            d_z, d_c_prev = cell_vjp((d_hidden @ proj_t, d_c))
            d_prev = d_prev + jnp.concatenate([d_z @ kernel_t, d_c_prev], axis=-1)
            return d_prev, (d_z, d_hidden, m)

        d_state0, (d_zs, d_hiddens, ms) = jax.lax.scan(
            back, d_final, (d_states, zs, previous, hiddens, real), reverse=True
        )

        def rows(x):
            return jnp.reshape(x, (-1, x.shape[-1]))

        d_kernel = rows(previous[..., :dim]).T @ rows(d_zs)
        d_proj = rows(ms).T @ rows(d_hiddens)
        return d_zs, jnp.zeros_like(real), d_state0, d_kernel, d_proj

    recurrence.defvjp(recurrence_forward, recurrence_backward)
    convert = ops.convert_to_tensor
    return recurrence(gates_x, real, state0, convert(recurrent_kernel), convert(projection))
