"""XLNet layers: relative positional encodings, two-stream relative attention, feed-forward.

Written here rather than reused from keras-hub: keras-hub's XLNet layers take
no memories out of the model, have no `bi_data`, `same_length` or `reuse_len`,
and cannot share the relative biases across layers (`untie_r=False`). The math
follows the reference implementation (Transformer-XL / XLNet, as ported in
`transformers`' `XLNetRelativeAttention`) operation for operation, in the
batch-first layout `(B, T, ...)`: content, position and segment attention
scores `(ac + bd + ef) / sqrt(head_dim)`, masked positions pushed down by
`1e30` (not `-inf`, so a fully masked row stays a uniform average exactly as
in the reference), and the Transformer-XL "relative shift" done with the same
reshapes.
"""

import keras
from keras import ops

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout


def relative_positional_encoding(
    qlen, klen, hidden_dim, batch_size, attn_type="bi", bi_data=False, clamp_len=-1
):
    """Sinusoidal encodings of the relative distances, `(B, R, hidden_dim)`.

    `R = klen + qlen` for `attn_type="bi"` (distances `klen .. -qlen+1`) and
    `klen + 1` for `"uni"` (distances `klen .. 0`). With `bi_data` the first
    half of the batch gets forward distances and the second half backward
    ones (the batch must be even). `clamp_len > 0` clips the distances.
    """
    freq_seq = ops.cast(ops.arange(0, hidden_dim, 2), "float32")
    inv_freq = 1.0 / ops.power(10000.0, freq_seq / hidden_dim)
    if attn_type == "bi":
        beg, end = klen, -qlen
    elif attn_type == "uni":
        beg, end = klen, -1
    else:
        raise ValueError(f"Unknown attn_type {attn_type!r}; expected 'bi' or 'uni'.")

    def embed(pos_seq):
        pos_seq = ops.cast(pos_seq, "float32")
        if clamp_len > 0:
            pos_seq = ops.clip(pos_seq, -float(clamp_len), float(clamp_len))
        sinusoid = pos_seq[:, None] * inv_freq[None, :]
        return ops.concatenate([ops.sin(sinusoid), ops.cos(sinusoid)], axis=-1)

    fwd = embed(ops.arange(beg, end, -1))  # (R, H)
    if not bi_data:
        return ops.broadcast_to(fwd[None], (batch_size,) + tuple(ops.shape(fwd)))
    bwd = embed(ops.arange(-beg, -end, 1))
    half = batch_size // 2
    shape = tuple(ops.shape(fwd))
    return ops.concatenate(
        [ops.broadcast_to(fwd[None], (half,) + shape), ops.broadcast_to(bwd[None], (half,) + shape)],
        axis=0,
    )


def rel_shift(x, klen):
    """Transformer-XL relative shift of `(B, N, T, R)` scores -> `(B, N, T, klen)`.

    Afterwards `x[b, n, i, j]` holds the score of the relative distance
    `mlen + i - j` (the same reshapes as the reference `rel_shift_bnij`).

    The two cuts are `ops.slice`, not `[...]` indexing: on TensorFlow indexing is
    a `StridedSlice`, whose gradient op took 43 ms per call at XLNet-base's
    `(8, 12, 128, 384)` scores (2 cores), against 5 ms for `tf.slice`'s (a pad).
    """
    b, n, t, r = ops.shape(x)
    x = ops.reshape(x, (b, n, r, t))
    x = ops.slice(x, (0, 0, 1, 0), (b, n, r - 1, t))
    x = ops.reshape(x, (b, n, t, r - 1))
    return ops.slice(x, (0, 0, 0, 0), (b, n, t, klen))


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetRelativeAttention(keras.layers.Layer):
    """Two-stream multi-head attention with relative positions and segments.

    One set of projections (`q, k, v, o, r`, each `(hidden, heads, head_dim)`)
    serves both streams: keys and values come from the content stream `h`
    concatenated after the memory; queries from `h` (content stream, mask
    `content_mask`, which always lets a token see itself) and from the query
    stream `g` (mask `query_mask`, which hides each target's own token). With
    `target_mapping` `(B, P, T)` the `P` query vectors are scattered to their
    positions, attended, and gathered back. Each stream then goes through the
    output projection, dropout, residual and LayerNorm.

    Args:
        num_heads: int.
        head_dim: int.
        dropout: float. Dropout on attention probabilities and the output.
        layer_norm_epsilon: float.
        own_biases: bool. Create this layer's `r_w_bias`, `r_r_bias`,
            `r_s_bias` (untied, as the published models); when False the
            caller passes shared ones with `biases=(r_w, r_r, r_s)`.
        kernel_initializer: initializer of all weights.

    Call args:
        content: `(B, T, H)` content stream.
        query: optional `(B, P, H)` query stream.
        content_mask, query_mask: optional `(B, T, K)` float, 1 = cannot attend.
        position_encoding: `(B, R, H)` relative encodings.
        segment_matrix: `(B, T, K, 2)` one-hot "different segment" matrix.
        memory: optional `(B, M, H)` cached states (K = M + T).
        target_mapping: optional `(B, P, T)`.
        biases: `(r_w_bias, r_r_bias, r_s_bias)` when `own_biases=False`.
        content_output: bool. False skips the content stream's own output
            (its queries, attention, output projection): the query stream
            only needs the content stream's keys and values. Needs `query`.

    Returns: `(content_output or None, query_output or None)`.

    Reference: https://arxiv.org/abs/1906.08237, https://arxiv.org/abs/1901.02860
    """

    def __init__(
        self,
        num_heads,
        head_dim,
        dropout=0.0,
        layer_norm_epsilon=1e-12,
        own_biases=True,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.own_biases = own_biases
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.scale = 1.0 / (head_dim**0.5)

    def build(self, input_shape):
        hidden = input_shape[-1]
        shape = (hidden, self.num_heads, self.head_dim)
        for name in ("q", "k", "v", "o", "r"):
            setattr(self, name, self.add_weight(shape=shape, initializer=self.kernel_initializer, name=name))
        if self.own_biases:
            for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
                setattr(
                    self,
                    name,
                    self.add_weight(
                        shape=(self.num_heads, self.head_dim), initializer=self.kernel_initializer, name=name
                    ),
                )
        self.seg_embed = self.add_weight(
            shape=(2, self.num_heads, self.head_dim), initializer=self.kernel_initializer, name="seg_embed"
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(input_shape)
        self.attention_dropout = Dropout(self.dropout, dtype=self.dtype_policy)
        self.output_dropout = Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def _core(self, q_head, k_head_h, v_head_h, k_head_r, segment_matrix, mask, biases, training):
        r_w_bias, r_r_bias, r_s_bias = biases
        klen = ops.shape(k_head_h)[1]
        # Content score, position score (shifted to relative distances), segment score.
        ac = ops.einsum("bind,bjnd->bnij", q_head + r_w_bias, k_head_h)  # (B, N, T, K)
        bd = ops.einsum("bind,bjnd->bnij", q_head + r_r_bias, k_head_r)  # (B, N, T, R)
        bd = rel_shift(bd, klen)  # (B, N, T, K)
        ef = ops.einsum("bind,snd->bins", q_head + r_s_bias, self.seg_embed)  # (B, T, N, 2)
        ef = ops.einsum("bijs,bins->bnij", segment_matrix, ef)  # (B, N, T, K)
        score = (ac + bd + ef) * self.scale
        if mask is not None:
            big = 65500.0 if score.dtype == "float16" else 1e30
            score = score - big * ops.cast(mask[:, None, :, :], score.dtype)
        prob = ops.softmax(score, axis=-1)
        prob = self.attention_dropout(prob, training=training)
        return ops.einsum("bnij,bjnd->bind", prob, v_head_h)  # (B, T, N, D)

    def _post(self, x, attn_vec, training):
        out = ops.einsum("bind,hnd->bih", attn_vec, self.o)
        out = self.output_dropout(out, training=training)
        return self.layer_norm(out + x)

    def call(
        self,
        content,
        query=None,
        content_mask=None,
        query_mask=None,
        position_encoding=None,
        segment_matrix=None,
        memory=None,
        target_mapping=None,
        biases=None,
        training=None,
        content_output=True,
    ):
        if self.own_biases:
            biases = (self.r_w_bias, self.r_r_bias, self.r_s_bias)
        if not content_output and query is None:
            raise ValueError("content_output=False needs the query stream (`query`).")
        cat = content if memory is None else ops.concatenate([memory, content], axis=1)
        k_head_h = ops.einsum("bih,hnd->bind", cat, self.k)  # (B, K, N, D)
        v_head_h = ops.einsum("bih,hnd->bind", cat, self.v)  # (B, K, N, D)
        k_head_r = ops.einsum("bih,hnd->bind", position_encoding, self.r)  # (B, R, N, D)
        # Content stream.
        out_h = None
        if content_output:
            q_head_h = ops.einsum("bih,hnd->bind", content, self.q)  # (B, T, N, D)
            vec_h = self._core(q_head_h, k_head_h, v_head_h, k_head_r, segment_matrix, content_mask, biases, training)
            out_h = self._post(content, vec_h, training)
        if query is None:
            return out_h, None
        # Query stream.
        q_head_g = ops.einsum("bih,hnd->bind", query, self.q)  # (B, P, N, D)
        if target_mapping is not None:
            q_head_g = ops.einsum("bmnd,bml->blnd", q_head_g, target_mapping)  # (B, T, N, D)
        vec_g = self._core(q_head_g, k_head_h, v_head_h, k_head_r, segment_matrix, query_mask, biases, training)
        if target_mapping is not None:
            vec_g = ops.einsum("blnd,bml->bmnd", vec_g, target_mapping)  # (B, P, N, D)
        out_g = self._post(query, vec_g, training)
        return out_h, out_g

    def compute_output_shape(self, content_shape, query_shape=None, **kwargs):
        return content_shape, query_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "head_dim": self.head_dim,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "own_biases": self.own_biases,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetFeedForward(keras.layers.Layer):
    """Position-wise feed-forward: `LN(x + drop(W2 drop(act(W1 x))))`.

    keras-hub's `TransformerEncoder` fuses this with its own attention, so it
    cannot be reused with the two-stream attention above; the same layer
    (same weights) is applied to both streams.

    Args:
        intermediate_dim: int.
        activation: str, one of our activation names ("gelu" is the erf form).
        dropout: float.
        layer_norm_epsilon: float.
        kernel_initializer: initializer of the dense kernels.
    """

    def __init__(
        self,
        intermediate_dim,
        activation="gelu",
        dropout=0.0,
        layer_norm_epsilon=1e-12,
        kernel_initializer="glorot_uniform",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape):
        hidden = input_shape[-1]
        self.layer_1 = keras.layers.Dense(
            self.intermediate_dim,
            activation=get_activation(self.activation),
            kernel_initializer=self.kernel_initializer,
            dtype=self.dtype_policy,
            name="layer_1",
        )
        self.layer_1.build(input_shape)
        self.layer_2 = keras.layers.Dense(
            hidden, kernel_initializer=self.kernel_initializer, dtype=self.dtype_policy, name="layer_2"
        )
        self.layer_2.build(tuple(input_shape[:-1]) + (self.intermediate_dim,))
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=self.layer_norm_epsilon, dtype=self.dtype_policy, name="layer_norm"
        )
        self.layer_norm.build(input_shape)
        self.inner_dropout = Dropout(self.dropout, dtype=self.dtype_policy)
        self.output_dropout = Dropout(self.dropout, dtype=self.dtype_policy)
        self.built = True

    def call(self, x, training=None):
        y = self.inner_dropout(self.layer_1(x), training=training)
        y = self.output_dropout(self.layer_2(y), training=training)
        return self.layer_norm(y + x)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "intermediate_dim": self.intermediate_dim,
                "activation": self.activation,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetSharedBiases(keras.layers.Layer):
    """`r_w_bias`, `r_r_bias`, `r_s_bias` shared by all layers (`untie_r=False`)."""

    def __init__(self, num_heads, head_dim, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)

    def build(self, input_shape=None):
        for name in ("r_w_bias", "r_r_bias", "r_s_bias"):
            setattr(
                self,
                name,
                self.add_weight(shape=(self.num_heads, self.head_dim), initializer=self.kernel_initializer, name=name),
            )
        self.built = True

    def call(self, inputs=None):
        return self.r_w_bias, self.r_r_bias, self.r_s_bias

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "head_dim": self.head_dim,
                "kernel_initializer": keras.initializers.serialize(self.kernel_initializer),
            }
        )
        return config
