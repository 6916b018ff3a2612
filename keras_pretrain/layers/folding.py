"""Several sequences per example (pairs in both orders, multiple-choice answers) through one backbone."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_pretrain")
class FoldSequences(keras.layers.Layer):
    """[B, N, T] -> [B * N, T]: several sequences per example, run one by one."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, input_shape):
        return (None, input_shape[-1])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class UnfoldSequences(keras.layers.Layer):
    """[B * N, ...] -> [B, N, ...] (the inverse of `FoldSequences`).

    Args:
        reduction: None keeps the N axis; "sum" sums over it (GPT-1's
            similarity head adds the states of both orderings); "squeeze"
            drops a last axis of size 1 (one score per choice).
    """

    REDUCTIONS = (None, "sum", "squeeze")

    def __init__(self, reduction=None, **kwargs):
        super().__init__(**kwargs)
        if reduction not in self.REDUCTIONS:
            raise ValueError(f"UnfoldSequences: reduction {reduction!r}; expected one of {self.REDUCTIONS}.")
        self.reduction = reduction

    def call(self, x, reference):
        shape = ops.shape(reference)
        x = ops.reshape(x, (shape[0], shape[1]) + tuple(ops.shape(x)[1:]))
        if self.reduction == "sum":
            x = ops.sum(x, axis=1)
        elif self.reduction == "squeeze":
            x = ops.squeeze(x, axis=-1)
        return x

    def compute_output_shape(self, x_shape, reference_shape):
        if self.reduction == "sum":
            return (reference_shape[0],) + tuple(x_shape[1:])
        if self.reduction == "squeeze":
            return tuple(reference_shape[:2]) + tuple(x_shape[1:-1])
        return tuple(reference_shape[:2]) + tuple(x_shape[1:])

    def get_config(self):
        config = super().get_config()
        config["reduction"] = self.reduction
        return config
