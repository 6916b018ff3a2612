"""Masked-LM head, loss and accuracy with fewer passes over [B, P, V] logits.

The same values as keras-hub's `MaskedLMHead`, Keras'
`SparseCategoricalCrossentropy(from_logits=True)` and
`SparseCategoricalAccuracy`; what differs is how the `[B * P, V]` logits are
produced and read (each choice measured in a training step, see
benchmarks/RESULTS.md).
"""

import keras
import keras_hub
from keras import ops

from keras_pretrain.layers.backend_kernels import add_bias_to_rows
from keras_pretrain.layers.backend_kernels import label_logits
from keras_pretrain.layers.backend_kernels import sparse_crossentropy_from_logits


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMHead(keras_hub.layers.MaskedLMHead):
    """keras-hub's `MaskedLMHead` (same arguments and variables), in 2-D.

    Gathers the hidden states at `mask_positions`, then runs the dense
    transform, LayerNorm, output projection and bias on a `[B * P, H]`
    matrix instead of `[B, P, H]`, so the logits come out in the layout the
    loss reads; on JAX the output bias is added as a rank-1 matmul (see
    `backend_kernels.add_bias_to_rows`).
    Returns `[B, P, V]` logits, as keras-hub's. Without `mask_positions`,
    `inputs` are taken to be the hidden states already gathered, `[B, P, H]`
    (what `Backbone.sequence_output_at` returns).

    Args: as `keras_hub.layers.MaskedLMHead` (`vocabulary_size`,
        `token_embedding`, `intermediate_activation`, `activation`,
        `layer_norm_epsilon`, `kernel_initializer`, `bias_initializer`).

    Example:
    ```python
    head = MaskedLMHead(
        token_embedding=embedding, intermediate_activation="gelu"
    )
    logits = head(sequence_output, mask_positions=positions)
    ```
    """

    def call(self, inputs, mask_positions=None):
        if mask_positions is not None:
            inputs = ops.take_along_axis(
                inputs, ops.expand_dims(mask_positions, axis=-1), axis=1
            )
        # Else `inputs` [B, P, H] are the hidden states at the positions.
        batch, predictions = ops.shape(inputs)[0], ops.shape(inputs)[1]
        x = ops.reshape(inputs, (-1, ops.shape(inputs)[-1]))
        x = self._intermediate_dense(x)
        x = self._intermediate_layer_norm(x)
        if self.token_embedding:
            outputs = self.token_embedding(x, reverse=True)
        else:
            outputs = ops.matmul(x, self._kernel)
        outputs = ops.cast(outputs, self.compute_dtype)
        outputs = add_bias_to_rows(outputs, self._bias)
        if self.activation is not None:
            outputs = self.activation(outputs)
        return ops.reshape(
            outputs, (batch, predictions, ops.shape(outputs)[-1])
        )

    def compute_output_shape(self, inputs_shape, mask_positions_shape=None):
        if mask_positions_shape is None:
            mask_positions_shape = inputs_shape[:-1]
        return super().compute_output_shape(inputs_shape, mask_positions_shape)


def _flat(y_true, y_pred):
    vocabulary_size = ops.shape(y_pred)[-1]
    logits = ops.reshape(y_pred, (-1, vocabulary_size))
    labels = ops.reshape(ops.cast(y_true, "int32"), (-1,))
    return labels, logits


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMLoss(keras.losses.Loss):
    """Sparse cross-entropy from logits over the last axis (the vocabulary).

    The same value as `keras.losses.SparseCategoricalCrossentropy(
    from_logits=True)`, computed on the logits flattened to `[B * P, V]`:
    PyTorch's fused cross-entropy then reads the vocabulary axis in place
    (Keras moves it to axis 1 of a 3-D tensor: two copies of the logits);
    TensorFlow uses its fused op as Keras does; on JAX
    `logsumexp(logits) - logits[label]` avoids Keras' one-hot `[B * P, V]`
    product (on TensorFlow the gather's gradient, an `UnsortedSegmentSum`
    over the logits, would cost more than it saves).

    Args:
        reduction: Keras loss reduction; the default divides the weighted sum
            by the sum of the sample weights (BERT's `masked_lm_weights`).
        name: loss name.
        dtype: dtype of the loss computation (Keras' default if None).

    Example:
    ```python
    loss = MaskedLMLoss()
    value = loss(labels, logits, sample_weight=weights)  # [B, P], [B, P, V]
    ```
    """

    def __init__(
        self,
        reduction="mean_with_sample_weight",
        name="mlm_loss",
        dtype=None,
    ):
        super().__init__(reduction=reduction, name=name, dtype=dtype)

    def call(self, y_true, y_pred):
        labels, logits = _flat(y_true, y_pred)
        loss = sparse_crossentropy_from_logits(labels, logits)
        return ops.reshape(loss, ops.shape(y_true))

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}


def masked_lm_accuracy(y_true, y_pred):
    """1.0 where the label's logit is the largest, else 0.0 (shape of y_true).

    Equals `argmax(y_pred) == y_true` except on exact ties for the maximum
    (argmax takes the first index; here the label counts as correct),
    without an arg-reduction over the vocabulary (slow on XLA:CPU) and
    sharing the maximum with the loss's `logsumexp`.
    """
    labels, logits = _flat(y_true, y_pred)
    hit = label_logits(labels, logits) >= ops.max(logits, axis=-1)
    return ops.reshape(ops.cast(hit, "float32"), ops.shape(y_true))


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMAccuracy(keras.metrics.MeanMetricWrapper):
    """Weighted accuracy of [B, P, V] logits against [B, P] labels.

    Same value as `keras.metrics.SparseCategoricalAccuracy` (see
    `masked_lm_accuracy` for ties), cheaper on large vocabularies.

    Args:
        name: metric name.
        dtype: dtype of the metric's variables.

    Example:
    ```python
    model.compile(loss=MaskedLMLoss(), weighted_metrics=[MaskedLMAccuracy()])
    ```
    """

    def __init__(self, name="accuracy", dtype=None):
        super().__init__(fn=masked_lm_accuracy, name=name, dtype=dtype)
        self._direction = "up"

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMPerplexity(keras_hub.metrics.Perplexity):
    """keras-hub's `Perplexity` (exp of the weighted mean token cross-entropy) from logits.

    The same value, with the cross-entropy of `MaskedLMLoss`: on JAX the
    metric's `logsumexp` over the vocabulary is then the loss's own one
    (XLA computes it once), where keras' one-hot cross-entropy would be a
    second pass over the `[B * T, V]` logits.

    Args:
        mask_token_id: label id that never counts (None: every label).
        name: metric name.
        dtype: dtype of the metric's variables.
    """

    def __init__(self, mask_token_id=None, name="perplexity", dtype="float32", **kwargs):
        super().__init__(from_logits=True, mask_token_id=mask_token_id, name=name, dtype=dtype, **kwargs)
        self._crossentropy = MaskedLMLoss(reduction="sum")

    def get_config(self):
        return {"mask_token_id": self.mask_token_id, "name": self.name, "dtype": self.dtype}
