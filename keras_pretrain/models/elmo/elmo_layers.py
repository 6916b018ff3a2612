"""ELMo layers: character CNN encoder, LSTM with projection, scalar mix.

All three are written with keras.ops only (they run and train on TensorFlow,
JAX and PyTorch). None exists in keras / keras-hub in this exact form:
Keras' `LSTM` has no projection, no cell/projection clipping and no
per-sequence reversal for right-padded batches; keras-hub has no char CNN.
"""

import keras
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.backend_kernels import projected_recurrence


def _clip(x, value):
    if value is None:
        return x
    return ops.clip(x, -value, value)


def sequence_lengths(mask):
    """Number of real tokens per row of a (B, W) mask (real tokens first)."""
    return ops.sum(ops.cast(mask, "int32"), axis=1)


def reverse_padded(x, lengths):
    """Reverse each row's first `lengths[b]` steps; padding stays in place.

    `x` is (B, W, ...). Equals `tf.reverse_sequence(x, lengths, 1, 0)`.
    """
    width = ops.shape(x)[1]
    steps = ops.arange(width, dtype="int32")[None, :]
    lengths = ops.cast(lengths, "int32")[:, None]
    index = ops.where(steps < lengths, lengths - 1 - steps, steps)
    index = ops.broadcast_to(index, ops.shape(x)[:2])
    index = ops.reshape(index, ops.shape(index) + (1,) * (len(x.shape) - 2))
    return ops.take_along_axis(x, index, axis=1)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoCharacterEncoder(keras.layers.Layer):
    """Token vectors from character ids: char CNN, highway, projection.

    bilm-tf's `_build_word_char_embeddings`: a 16-dim character embedding,
    one 1-D convolution per `(width, count)` filter over the characters of
    each token (VALID padding), max over the character axis, activation;
    the results concatenated (sum of counts channels), `num_highway` highway
    layers `y = g * relu(W_t x + b_t) + (1 - g) * x, g = sigmoid(W_c x + b_c)`
    (carry bias initialised to -2), then a linear projection (with bias) to
    `projection_dim`.

    Args:
        num_characters: int. Character id range (262: bytes, markers, 0).
        embedding_dim: int. Character embedding width (16).
        filters: list of `[width, count]` pairs.
        num_highway: int. Highway layers.
        projection_dim: int. Output width D.
        activation: str. "relu" (the original) or "tanh".

    Inputs: int (B, W, C) character ids. Output: (B, W, projection_dim).
    """

    def __init__(
        self,
        num_characters=262,
        embedding_dim=16,
        filters=((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024)),
        num_highway=2,
        projection_dim=512,
        activation="relu",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_characters = num_characters
        self.embedding_dim = embedding_dim
        self.filters = [[int(w), int(n)] for w, n in filters]
        self.num_highway = num_highway
        self.projection_dim = projection_dim
        self.activation = activation
        self.num_filters = sum(n for _, n in self.filters)

    def build(self, input_shape):
        # Kim et al. 2015 init for relu (as bilm-tf), glorot-like for tanh.
        self.char_embedding = keras.layers.Embedding(
            self.num_characters,
            self.embedding_dim,
            embeddings_initializer=keras.initializers.RandomUniform(-1.0, 1.0),
            dtype=self.dtype_policy,
            name="char_embedding",
        )
        self.char_embedding.build((None,))
        self.convolutions = []
        for i, (width, count) in enumerate(self.filters):
            if self.activation == "relu":
                init = keras.initializers.RandomUniform(-0.05, 0.05)
            else:
                init = keras.initializers.RandomNormal(
                    stddev=(1.0 / (width * self.embedding_dim)) ** 0.5
                )
            conv = keras.layers.Conv1D(
                count,
                width,
                padding="valid",
                kernel_initializer=init,
                dtype=self.dtype_policy,
                name=f"conv_{i}",
            )
            conv.build((None, None, self.embedding_dim))
            self.convolutions.append(conv)
        self.highways = []
        for i in range(self.num_highway):
            init = keras.initializers.RandomNormal(
                stddev=(1.0 / self.num_filters) ** 0.5
            )
            carry = keras.layers.Dense(
                self.num_filters,
                kernel_initializer=init,
                bias_initializer=keras.initializers.Constant(-2.0),
                dtype=self.dtype_policy,
                name=f"highway_{i}_carry",
            )
            transform = keras.layers.Dense(
                self.num_filters,
                kernel_initializer=init,
                dtype=self.dtype_policy,
                name=f"highway_{i}_transform",
            )
            carry.build((None, self.num_filters))
            transform.build((None, self.num_filters))
            self.highways.append((carry, transform))
        self.projection = keras.layers.Dense(
            self.projection_dim,
            kernel_initializer=keras.initializers.RandomNormal(
                stddev=(1.0 / self.num_filters) ** 0.5
            ),
            dtype=self.dtype_policy,
            name="projection",
        )
        self.projection.build((None, self.num_filters))

    def call(self, char_ids):
        shape = ops.shape(char_ids)
        chars = ops.reshape(char_ids, (-1, shape[-1]))  # (B*W, C)
        x = self.char_embedding(chars)  # (B*W, C, d)
        act = keras.activations.get(self.activation)
        pooled = []
        for conv in self.convolutions:
            y = ops.max(conv(x), axis=1)  # (B*W, count)
            pooled.append(act(y))
        x = ops.concatenate(pooled, axis=-1)  # (B*W, sum counts)
        for carry, transform in self.highways:
            gate = ops.sigmoid(carry(x))
            x = gate * ops.relu(transform(x)) + (1.0 - gate) * x
        x = self.projection(x)
        return ops.reshape(x, (shape[0], shape[1], self.projection_dim))

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.projection_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_characters": self.num_characters,
                "embedding_dim": self.embedding_dim,
                "filters": self.filters,
                "num_highway": self.num_highway,
                "projection_dim": self.projection_dim,
                "activation": self.activation,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class LSTMP(keras.layers.Layer):
    """One direction of an LSTM with a projection (LSTMP), over a sequence.

    The step of TensorFlow's `tf.nn.rnn_cell.LSTMCell(units,
    num_proj=projection_dim, cell_clip, proj_clip)` that bilm-tf uses:

        i, j, f, o = split(x W + h U + b)
        c = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j)
        c = clip(c, -cell_clip, cell_clip)
        h = clip((sigmoid(o) * tanh(c)) P, -proj_clip, proj_clip)

    `x W + b` is computed for all steps at once; the recurrence is
    `layers.backend_kernels.projected_recurrence` (a `keras.ops.scan` over
    time: a while loop on TF, a Python loop on PyTorch; on JAX a `lax.scan`
    with its own backward pass, whose weight gradients are two matmuls after
    the loop). With `go_backwards=True` each row is reversed
    within its own length (from the mask) before the scan and back after, so
    the backward LM starts at each sequence's real end: batches must be
    right-padded (real tokens first). Outputs at padding positions are 0;
    the state is held through padding steps (as `tf.nn.dynamic_rnn` with
    `sequence_length`), so the final state of a row is the one after its
    last real token (for `go_backwards`: after its first token).

    Stateful mode (`stateful=True`) is bilm-tf's inference
    (`BidirectionalLanguageModelGraph._build_lstms`): the (h, c) state lives
    in two non-trainable variables of `max_batch_size` rows (zeros at
    first); a call on a batch of B rows starts row b from row b of the
    variables and writes each row's final state back into rows `[:B]`
    (rows B and beyond keep theirs). Rows of no real token keep their state.
    `reset_states()` sets them to zeros. The states are run-time state, not
    weights: they are neither saved nor loaded with the weights (a reloaded
    model starts from zeros, as a fresh bilm-tf session), so stateful and
    stateless layers share weight files.

    Args:
        units: int. Cell size C.
        projection_dim: int. Output (and recurrent state) width D.
        cell_clip: float or None. Clip of the cell state.
        proj_clip: float or None. Clip of the projected output.
        forget_bias: float. Added to the forget gate (1.0 as TF).
        go_backwards: bool. Run right to left within each sequence.
        stateful: bool. Carry the final states of a call into the next.
        max_batch_size: int. Rows of the state variables (stateful only;
            128 as bilm-tf). Larger batches raise a `ConfigError`.

    Inputs: (B, W, input_dim) and an optional (B, W) mask.
    Output: (B, W, projection_dim).
    """

    def __init__(
        self,
        units,
        projection_dim,
        cell_clip=None,
        proj_clip=None,
        forget_bias=1.0,
        go_backwards=False,
        stateful=False,
        max_batch_size=128,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.units = units
        self.projection_dim = projection_dim
        self.cell_clip = cell_clip
        self.proj_clip = proj_clip
        self.forget_bias = forget_bias
        self.go_backwards = go_backwards
        self.stateful = stateful
        self.max_batch_size = max_batch_size
        self.supports_masking = True

    def build(self, input_shape):
        input_dim = input_shape[-1]
        init = keras.initializers.GlorotUniform()
        self.kernel = self.add_weight(
            name="kernel", shape=(input_dim, 4 * self.units), initializer=init
        )
        self.recurrent_kernel = self.add_weight(
            name="recurrent_kernel",
            shape=(self.projection_dim, 4 * self.units),
            initializer=init,
        )
        self.bias = self.add_weight(
            name="bias", shape=(4 * self.units,), initializer="zeros"
        )
        self.projection = self.add_weight(
            name="projection",
            shape=(self.units, self.projection_dim),
            initializer=init,
        )
        if self.stateful:
            self.state_h = self.add_weight(
                name="state_h",
                shape=(self.max_batch_size, self.projection_dim),
                initializer="zeros",
                trainable=False,
            )
            self.state_c = self.add_weight(
                name="state_c",
                shape=(self.max_batch_size, self.units),
                initializer="zeros",
                trainable=False,
            )

    def _lstm_weights(self):
        return [self.kernel, self.recurrent_kernel, self.bias, self.projection]

    def reset_states(self):
        """Sets the carried (h, c) states to zeros (stateful layers)."""
        if self.stateful and self.built:
            for variable in (self.state_h, self.state_c):
                variable.assign(ops.zeros(variable.shape, variable.dtype))

    def _initial_state(self, batch):
        if not self.stateful:
            return ops.zeros(
                (batch, self.projection_dim + self.units), dtype=self.compute_dtype
            )
        if isinstance(batch, int) and batch > self.max_batch_size:
            raise ConfigError(
                f"{self.name}: a stateful LSTMP keeps states for max_batch_size="
                f"{self.max_batch_size} rows; got a batch of {batch}."
            )
        state = ops.concatenate([self.state_h[:batch], self.state_c[:batch]], axis=-1)
        return ops.cast(state, self.compute_dtype)

    def _store_state(self, state, batch):
        """Writes the final states into rows [:batch] of the state variables."""
        dim = self.projection_dim
        for variable, value in ((self.state_h, state[:, :dim]), (self.state_c, state[:, dim:])):
            value = ops.cast(value, variable.dtype)
            variable.assign(ops.concatenate([value, variable[batch:]], axis=0))

    def call(self, inputs, mask=None):
        if mask is None:
            mask = ops.ones(ops.shape(inputs)[:2], "bool")
        mask = ops.cast(mask, "bool")
        lengths = sequence_lengths(mask)
        if self.go_backwards:
            inputs = reverse_padded(inputs, lengths)
        gates_x = ops.matmul(inputs, self.kernel) + self.bias  # (B, W, 4C)
        gates_x = ops.transpose(gates_x, (1, 0, 2))  # (W, B, 4C)
        real = ops.cast(ops.transpose(mask)[:, :, None], gates_x.dtype)  # (W, B, 1); padding stays last
        batch = ops.shape(inputs)[0]
        # One carry tensor [h; c] (B, D + C), also the per-step output.
        state0 = self._initial_state(batch)
        units, dim = self.units, self.projection_dim

        def cell(z, c):
            i = z[:, :units]
            j = z[:, units : 2 * units]
            f = z[:, 2 * units : 3 * units]
            o = z[:, 3 * units :]
            c = ops.sigmoid(f + self.forget_bias) * c + ops.sigmoid(i) * ops.tanh(j)
            c = _clip(c, self.cell_clip)
            return ops.sigmoid(o) * ops.tanh(c), c

        def output(hidden, c, state, real_t):
            h = _clip(hidden, self.proj_clip)
            # Padding steps hold the state (the final state is the last real one).
            return ops.where(real_t > 0.5, ops.concatenate([h, c], axis=-1), state)

        final, states = projected_recurrence(
            cell, output, gates_x, real, state0, self.recurrent_kernel, self.projection
        )
        if self.stateful:
            self._store_state(final, batch)
        outputs = states[:, :, :dim]  # (W, B, D)
        outputs = ops.transpose(outputs, (1, 0, 2))  # (B, W, D)
        if self.go_backwards:
            outputs = reverse_padded(outputs, lengths)
        return outputs * ops.cast(mask, outputs.dtype)[:, :, None]

    def compute_mask(self, inputs, mask=None):
        # The mask is an explicit argument; nothing is attached downstream
        # (a Keras mask on the LM outputs would re-weight the losses).
        return None

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (self.projection_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "units": self.units,
                "projection_dim": self.projection_dim,
                "cell_clip": self.cell_clip,
                "proj_clip": self.proj_clip,
                "forget_bias": self.forget_bias,
                "go_backwards": self.go_backwards,
                "stateful": self.stateful,
                "max_batch_size": self.max_batch_size,
            }
        )
        return config

    def save_own_variables(self, store):
        # The four weights only: the carried states are not saved (see above).
        for i, variable in enumerate(self._lstm_weights()):
            store[f"{i}"] = variable

    def load_own_variables(self, store):
        parameters = self._lstm_weights()
        if len(store.keys()) != len(parameters):
            raise ValueError(
                f"{self.name}: expected {len(parameters)} saved weights (kernel, "
                f"recurrent_kernel, bias, projection); found {len(store.keys())}."
            )
        for i, variable in enumerate(parameters):
            variable.assign(store[f"{i}"])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ScalarMix(keras.layers.Layer):
    """`gamma * sum_j softmax(w)_j * h_j` over the L+1 biLM layers.

    As bilm-tf's `weight_layers` and AllenNLP's `ScalarMix`: scalar weights
    `w` (initialised to 0, i.e. an even mix) normalised with a softmax, a
    scale `gamma` (initialised to 1). With `layer_norm=True` each layer is
    first normalised with one mean and variance over all real tokens and
    features of the batch (epsilon 1e-12), as both originals do (this is not
    a per-token LayerNormalization). The output is 0 at padding positions.

    Args:
        num_layers: int. Number of mixed layers (L+1).
        layer_norm: bool. Normalise each layer before mixing.
        initial_weights: optional list of `num_layers` floats for `w`.
        initial_gamma: float.

    Inputs: a list of `num_layers` tensors (B, W, E), optional (B, W) mask.
    Output: (B, W, E).
    """

    def __init__(
        self,
        num_layers,
        layer_norm=False,
        initial_weights=None,
        initial_gamma=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_layers = num_layers
        self.layer_norm = layer_norm
        self.initial_weights = (
            None if initial_weights is None else [float(v) for v in initial_weights]
        )
        self.initial_gamma = float(initial_gamma)
        self.supports_masking = True

    def build(self, input_shape):
        init = (
            "zeros"
            if self.initial_weights is None
            else keras.initializers.Constant(self.initial_weights)
        )
        self.scalar_weights = self.add_weight(
            name="scalar_weights", shape=(self.num_layers,), initializer=init
        )
        self.gamma = self.add_weight(
            name="gamma",
            shape=(),
            initializer=keras.initializers.Constant(self.initial_gamma),
        )

    def call(self, inputs, mask=None):
        if len(inputs) != self.num_layers:
            raise ValueError(
                f"ScalarMix expected {self.num_layers} layers, got {len(inputs)}."
            )
        first = inputs[0]
        if mask is None:
            mask = ops.ones(ops.shape(first)[:2], first.dtype)
        mask = ops.cast(mask, first.dtype)[:, :, None]
        weights = ops.softmax(self.scalar_weights)
        total = 0.0
        for j, layer in enumerate(inputs):
            if self.layer_norm:
                layer = self._normalize(layer, mask)
            total = total + weights[j] * layer
        return self.gamma * total * mask

    def compute_mask(self, inputs, mask=None):
        return None

    @staticmethod
    def _normalize(x, mask):
        count = ops.maximum(ops.sum(mask) * ops.cast(ops.shape(x)[-1], x.dtype), 1.0)
        mean = ops.sum(x * mask) / count
        variance = ops.sum(ops.square((x - mean) * mask)) / count
        return (x - mean) / ops.sqrt(variance + 1e-12)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[0])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_layers": self.num_layers,
                "layer_norm": self.layer_norm,
                "initial_weights": self.initial_weights,
                "initial_gamma": self.initial_gamma,
            }
        )
        return config
