"""How a task reads a family's backbone: one vector per sequence (a summary) or one per token (states).

Like transformers' `SequenceSummary`, the summary of a sequence is a small choice per family, declared in its
`keras_pretrain.families.Family` and applied by the generic tasks (`keras_pretrain.tasks`):

- `Pooled`: the backbone's `pooled_output` (BERT, ALBERT, ERNIE: the pooler on `[CLS]`);
- `FirstToken`: the first position's state (RoBERTa `<s>`, DistilBERT `[CLS]`: no pooler);
- `LastToken`: the last position's state (XLNet: left-padded inputs end with `<cls>`);
- `ExtractToken`: the last real token's state (GPT-1's extract token, right-padded inputs);
- `MaskedMean`: the mean over the real tokens (ELMo).

`SequenceSummary` adds what comes between the chosen vector and the output layer (an optional projection
Dense(H, activation) with the dropout around it); `TokenStates` says where the per-token vectors come from
(the backbone's `sequence_output`, or a family layer such as ELMo's scalar mix).
"""

import dataclasses

import keras
from keras import ops

from keras_pretrain.layers.initializers import kernel_initializer


class Summary(keras.layers.Layer):
    """Base of the summary layers: `call(outputs, padding_mask)` -> [B, H] from the backbone's outputs dict
    (`sequence_output` [B, T, H], `pooled_output` where the backbone has a pooler)."""

    def compute_output_shape(self, outputs_shape, padding_mask_shape=None):
        shape = outputs_shape["sequence_output"]
        return (shape[0], shape[-1])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class Pooled(Summary):
    """The backbone's `pooled_output`."""

    def call(self, outputs, padding_mask=None):
        return outputs["pooled_output"]


@keras.saving.register_keras_serializable(package="keras_pretrain")
class FirstToken(Summary):
    """The state of the first position."""

    def call(self, outputs, padding_mask=None):
        return outputs["sequence_output"][:, 0, :]


@keras.saving.register_keras_serializable(package="keras_pretrain")
class LastToken(Summary):
    """The state of the last position (left-padded inputs: always a real token)."""

    def call(self, outputs, padding_mask=None):
        return outputs["sequence_output"][:, -1, :]


def extract_token_state(hidden, padding_mask):
    """The state of the last real token of each row (`sum(padding_mask) - 1`; right-padded inputs)."""
    index = ops.sum(ops.cast(padding_mask, "int32"), axis=-1) - 1
    index = ops.maximum(index, 0)
    index = ops.reshape(index, (-1, 1, 1))
    return ops.squeeze(ops.take_along_axis(hidden, index, axis=1), axis=1)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ExtractToken(Summary):
    """The state of the last real token of each row (GPT-1's extract token)."""

    def call(self, outputs, padding_mask=None):
        return extract_token_state(outputs["sequence_output"], padding_mask)


def masked_mean(vectors, padding_mask):
    """Mean of (B, W, D) over the real tokens of each row; a row without any gives zeros."""
    mask = ops.cast(padding_mask, vectors.dtype)[:, :, None]
    total = ops.sum(vectors * mask, axis=1)
    return total / ops.maximum(ops.sum(mask, axis=1), 1.0)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedMean(Summary):
    """The mean of the token states over the real tokens (ELMo)."""

    def call(self, outputs, padding_mask=None):
        return masked_mean(outputs["sequence_output"], padding_mask)


@dataclasses.dataclass(frozen=True)
class SequenceSummary:
    """A family's sentence-level reading of its backbone: the summary layer and what follows it.

    The sequence classifier computes
    `Dense(C)(output_dropout(projection(input_dropout(layer(outputs)))))`.

    Attributes:
        layer: the `Summary` layer class.
        activation: the projection Dense(hidden_dim)'s activation (None: no projection).
        input_dropout: dropout on the summary before the projection (RoBERTa's head).
        output_dropout: dropout before the output layer.
        dropout: the tasks' default dropout rate.
        projection, projection_name: the projection's attribute and layer name (the weights' place in
            saved files: RoBERTa `head_dense`, XLNet `summary_dense` / "summary").
        output_dropout_name: the attribute and layer name of the dropout before the output layer.
        initializer: the dense layers' kernel initializer, called with the backbone's `initializer_range`
            (`keras_pretrain.layers.initializers`: BERT's truncated normal by default, XLNet's and GPT-1's
            `normal_kernel_initializer`; None: Keras' default, Glorot uniform).
    """

    layer: type
    activation: str = None
    input_dropout: bool = False
    output_dropout: bool = True
    dropout: float = 0.1
    projection: str = "head_dense"
    projection_name: str = None
    initializer: object = kernel_initializer

    def kernel_initializer(self, backbone):
        if self.initializer is None:
            return "glorot_uniform"
        return self.initializer(getattr(backbone, "initializer_range", 0.02))


POOLED = SequenceSummary(Pooled)


@dataclasses.dataclass(frozen=True)
class TokenStates:
    """Where the tasks read one vector per token.

    Attributes:
        layer: None for the backbone's `sequence_output`, else "module:Class" of a layer built as
            `Class(backbone, dropout=..., trainable_backbone=..., name=layer_name)` and called on the inputs
            (ELMo's `ElmoEmbedder`: the scalar mix of the biLM layers).
        attribute, layer_name: the layer's attribute on the task and its name (weights' place in files).
        characters: the task's input is `char_ids` [B, W, max_characters] (ELMo) instead of the backbone's.
    """

    layer: str = None
    attribute: str = None
    layer_name: str = None
    characters: bool = False

    def layer_class(self):
        import importlib

        module, name = self.layer.split(":")
        return getattr(importlib.import_module(module), name)


SEQUENCE_OUTPUT = TokenStates()
