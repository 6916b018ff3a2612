"""keras-hub's `TransformerEncoder`, same variables, computed with fewer ops."""

import keras
import keras_hub
from keras import ops
# private API: keras has no public reader of a tensor's implicit mask; it keeps the masks of tensors that
# take no attributes (JAX arrays) in a global table, so `getattr(x, "_keras_mask", None)` would miss them.
from keras.src.backend import get_keras_mask

from keras_pretrain.layers.dropout import dropout

# What keras' masked softmax puts at masked float32 scores.
_LARGE_NEGATIVE = -1e9


def _quantized(layer):
    """Whether `model.quantize(...)` replaced `layer`'s kernel (then only its own call applies the scales)."""
    return getattr(layer, "quantization_mode", None) is not None


def _merge_masks(padding_mask, attention_mask):
    """Boolean mask [B, 1, S] or [B, T, S] (True = visible key), or None."""
    mask = None
    if padding_mask is not None:
        mask = ops.expand_dims(ops.cast(padding_mask, "bool"), axis=1)
    if attention_mask is not None:
        attention_mask = ops.cast(attention_mask, "bool")
        if mask is None:
            mask = attention_mask
        else:
            mask = ops.logical_and(mask, attention_mask)
    return mask


class FusedBlock:
    """The fused computation of a keras-hub transformer block without cross-attention.

    Mixed into subclasses of keras-hub's `TransformerEncoder` (here) and
    `TransformerDecoder` (`keras_pretrain.models.gpt.gpt_block`): both have
    the same sublayers (`_self_attention_layer`, `_feedforward_*`, the two
    LayerNorms and dropouts) and the same block function once the mask is
    known. See `TransformerEncoder` for what differs from keras-hub's ops.
    """

    def _fused_call(self, inputs, mask, training, query_positions=None, per_query_mask=False):
        """The block's output for `inputs` [B, T, H] and a boolean `mask`.

        `mask`: None, [B, 1, S] (keys only) or [B, T, S] (`per_query_mask`).
        `query_positions`: see `TransformerEncoder.call`.
        """
        kv_shape = ops.shape(inputs)
        # Everything but the attention core runs on [B * T, H] matrices: 2-D
        # matmuls (TensorFlow's graph optimizer then fuses bias and GELU into
        # them; Keras' Dense on a 3-D input goes through `tensordot`).
        x = ops.reshape(inputs, (-1, kv_shape[-1]))
        queries, q_shape = x, kv_shape
        if query_positions is not None:
            gather = lambda t: ops.take_along_axis(  # noqa: E731
                t, ops.expand_dims(query_positions, axis=-1), axis=1
            )
            q_inputs = gather(inputs)
            q_shape = ops.shape(q_inputs)
            queries = ops.reshape(q_inputs, (-1, kv_shape[-1]))
            if per_query_mask:
                mask = gather(mask)  # [B, T, S] -> [B, P, S]

        # Self attention block.
        residual = queries
        if self.normalize_first:
            x = self._self_attention_layer_norm(x)
            queries = (
                x
                if query_positions is None
                else self._self_attention_layer_norm(queries)
            )
        x = self._self_attention(queries, x, q_shape, kv_shape, mask, training)
        x = self._dropout(self._self_attention_dropout, x, training)
        x = x + residual
        if not self.normalize_first:
            x = self._self_attention_layer_norm(x)

        # Feedforward block.
        residual = x
        if self.normalize_first:
            x = self._feedforward_layer_norm(x)
        x = self._feedforward_intermediate_dense(x)
        x = self._feedforward_output_dense(x)
        x = self._dropout(self._feedforward_dropout, x, training)
        x = x + residual
        if not self.normalize_first:
            x = self._feedforward_layer_norm(x)
        return ops.reshape(x, q_shape)

    def _dropout(self, layer, x, training):
        """Dropout at `layer`'s rate with `layer`'s seed generator."""
        if not training or layer.rate <= 0:
            return x
        return dropout(x, layer.rate, layer.seed_generator)

    def _self_attention(self, queries, x, q_shape, kv_shape, mask, training):
        """Attention of `queries` [B * P, H] over `x` [B * T, H], [B * P, H].

        `q_shape` / `kv_shape`: [B, P, H] / [B, T, H] (the same tensor and
        shape for plain self attention).
        """
        attention = self._self_attention_layer
        hidden = kv_shape[2]

        def project(inputs, dense, shape):
            if _quantized(dense):  # an int8 kernel and its scales: the layer's own call
                return dense(ops.reshape(inputs, (shape[0], shape[1], hidden)))
            kernel = ops.reshape(dense.kernel, (hidden, -1))
            y = ops.matmul(inputs, kernel) + ops.reshape(dense.bias, (-1,))
            return ops.reshape(y, (shape[0], shape[1], self.num_heads, attention._key_dim))

        query = project(queries, attention._query_dense, q_shape)
        key = project(x, attention._key_dense, kv_shape)
        value = project(x, attention._value_dense, kv_shape)
        scale = attention._inverse_sqrt_key_dim
        probs_dropout = attention._dropout_layer
        if not training or probs_dropout.rate <= 0:
            context = ops.dot_product_attention(
                query,
                key,
                value,
                mask=None if mask is None else ops.expand_dims(mask, axis=1),
                scale=scale,
            )
        else:
            query = query * ops.cast(scale, query.dtype)
            query = ops.transpose(query, (0, 2, 1, 3))  # [B, N, T, D]
            key = ops.transpose(key, (0, 2, 3, 1))  # [B, N, D, S]
            value = ops.transpose(value, (0, 2, 1, 3))  # [B, N, S, D]
            scores = ops.matmul(query, key)  # [B, N, T, S]
            # Softmax in float32 (a no-op cast under a float32 policy).
            scores32 = ops.cast(scores, "float32")
            if mask is not None:
                bias = ops.where(mask, 0.0, _LARGE_NEGATIVE)
                scores32 = scores32 + ops.expand_dims(bias, axis=1)
            probs = ops.cast(ops.softmax(scores32, axis=-1), scores.dtype)
            probs = self._dropout(probs_dropout, probs, training)
            context = ops.matmul(probs, value)  # [B, N, T, D]
            context = ops.transpose(context, (0, 2, 1, 3))  # [B, T, N, D]
        if mask is not None:
            # Keras gives a query with no visible key probabilities 0 (zero
            # context); the softmax above gives it uniform ones.
            row_visible = ops.cast(ops.any(mask, axis=-1), context.dtype)
            context = context * row_visible[:, :, None, None]
        output = attention._output_dense
        if _quantized(output):
            return ops.reshape(output(context), (-1, hidden))
        context = ops.reshape(context, (-1, hidden))
        kernel = ops.reshape(output.kernel, (-1, ops.shape(output.kernel)[-1]))
        return ops.matmul(context, kernel) + output.bias


@keras.saving.register_keras_serializable(package="keras_pretrain")
class TransformerEncoder(FusedBlock, keras_hub.layers.TransformerEncoder):
    """keras-hub's `TransformerEncoder` block, computed with fewer ops.

    A drop-in: same constructor, sublayers, variables and variable names as
    `keras_hub.layers.TransformerEncoder` (checkpoints, `.keras` files and
    the weight maps of `keras_pretrain.models.block_weights` apply
    unchanged), and the same function: attention probabilities, attention
    output and feed-forward output dropped out at `dropout`, masked keys at
    probability 0, and a query whose keys are all masked gets a zero
    attention output, as in keras' `MultiHeadAttention`. What differs:

    - Everything but the attention core runs on `[B * T, H]` matrices: Q,
      K, V and the output projection are 2-D matmuls with the `[H, N, D]`
      kernels viewed as `[H, N * D]` matrices (keras' `EinsumDense` goes
      through `einsum`), and the feed-forward `Dense` layers get 2-D inputs
      (TensorFlow's graph optimizer then fuses the bias adds into the
      matmuls, Keras' `Dense` on 3-D inputs goes through `tensordot`; on
      JAX the BERT-base step went from 1.06x to 1.16x keras-hub's with this
      change alone, in same-process A/B runs).
    - The mask becomes one additive bias `[B, 1, 1|T, S]` on the scores
      (keras' masked softmax selects on the `[B, N, T, S]` scores before and
      after the softmax); rows without a visible key are zeroed on the
      `[B, T, N, D]` context instead.
    - Without dropout on the attention probabilities (inference, or
      `dropout=0`), attention is `keras.ops.dot_product_attention` (PyTorch
      SDPA, `jax.nn.dot_product_attention`); keras' `MultiHeadAttention`
      only does so when its dropout rate is 0, even at inference.
    - Dropout masks come from `keras_pretrain.layers.dropout.dropout`
      (cheaper on JAX and TensorFlow), seeded by the same Keras
      `Dropout` sublayers' seed generators.

    `return_attention_scores=True` and inputs carrying only an implicit
    Keras mask use keras-hub's implementation.

    Args: as `keras_hub.layers.TransformerEncoder`: `intermediate_dim`,
        `num_heads`, `dropout`, `activation`, `layer_norm_epsilon`,
        `kernel_initializer`, `bias_initializer`, `normalize_first`.

    Example:
    ```python
    layer = TransformerEncoder(intermediate_dim=64, num_heads=2, dropout=0.1)
    outputs = layer(np.ones((2, 8, 32)), padding_mask=np.ones((2, 8)))
    ```

    Reference: https://arxiv.org/abs/1706.03762
    """

    def call(
        self,
        inputs,
        padding_mask=None,
        attention_mask=None,
        training=None,
        return_attention_scores=False,
        query_positions=None,
    ):
        """The block's output; `[B, T, H]`, or `[B, P, H]` with `query_positions`.

        `query_positions` (int `[B, P]`): compute the block only at these
        positions. Keys and values still come from all `T` inputs, so row
        `p` equals row `query_positions[:, p]` of the full output, at about
        `P / T` of the cost for everything but the key and value
        projections. A pretrainer whose loss reads the last block at the
        masked positions only uses this for its last block.
        """
        implicit_mask = get_keras_mask(inputs)
        if return_attention_scores or (
            padding_mask is None and implicit_mask is not None
        ):
            if query_positions is not None:
                raise ValueError(
                    "TransformerEncoder: `query_positions` needs an explicit "
                    "`padding_mask` and `return_attention_scores=False`."
                )
            return super().call(
                inputs,
                padding_mask=padding_mask,
                attention_mask=attention_mask,
                training=training,
                return_attention_scores=return_attention_scores,
            )
        mask = _merge_masks(padding_mask, attention_mask)
        return self._fused_call(
            inputs, mask, training, query_positions, attention_mask is not None
        )

    def compute_output_spec(self, inputs, *args, query_positions=None, **kwargs):
        if query_positions is None:
            return super().compute_output_spec(inputs, *args, **kwargs)
        shape = (*query_positions.shape[:2], inputs.shape[-1])
        return keras.KerasTensor(shape, dtype=self.compute_dtype)
