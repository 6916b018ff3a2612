"""Initialising a smaller student from a teacher's weights (DistilBERT's `extract_distilbert.py`)."""

import numpy as np
from keras import ops

from keras_pretrain.errors import ConfigError

DISTILBERT_LAYERS = (0, 2, 4, 7, 9, 11)


def _copy(target, source, what):
    value = ops.convert_to_numpy(source)
    if tuple(target.shape) != tuple(value.shape):
        if target.shape[1:] == value.shape[1:] and target.shape[0] < value.shape[0] and "position" in what:
            value = value[: target.shape[0]]  # fewer student positions: the first rows
        else:
            raise ConfigError(f"initialize_student_from_teacher: {what}: teacher shape {tuple(value.shape)}, "
                              f"student shape {tuple(target.shape)}.")
    target.assign(np.asarray(value, dtype=target.dtype))


def _position_table(backbone):
    layer = backbone.position_embedding
    return layer.position_embeddings if hasattr(layer, "position_embeddings") else layer.embeddings


def initialize_student_from_teacher(teacher, student, layers=DISTILBERT_LAYERS):
    """Copies the teacher's embeddings and chosen transformer layers into the student.

    Copied: word embeddings, position embeddings (the first rows if the student has fewer), the
    embedding LayerNorm, teacher layer `layers[i]` into student layer `i` (all weights of the
    block), and, when both are pretrainers, the MLM head (transform dense, LayerNorm, output bias;
    the output matrix is the tied word embedding). Token-type embeddings and poolers are not
    copied (DistilBERT has neither).

    Args:
        teacher, student: pretrainers (with `.backbone` and `.masked_lm_head`) or backbones.
        layers: teacher layer indices, one per student layer (DistilBERT: 0, 2, 4, 7, 9, 11).

    Returns:
        The student.
    """
    t = getattr(teacher, "backbone", teacher)
    s = getattr(student, "backbone", student)
    layers = tuple(int(i) for i in layers)
    if len(layers) != len(s.transformer_layers):
        raise ConfigError(f"initialize_student_from_teacher: {len(layers)} teacher layers {layers} for "
                          f"{len(s.transformer_layers)} student layers.")
    bad = [i for i in layers if not 0 <= i < len(t.transformer_layers)]
    if bad:
        raise ConfigError(f"initialize_student_from_teacher: teacher has {len(t.transformer_layers)} layers, "
                          f"no layer {bad}.")
    _copy(s.token_embedding.embeddings, t.token_embedding.embeddings, "token embedding")
    _copy(_position_table(s), _position_table(t), "position embedding")
    _copy(s.embeddings_layer_norm.gamma, t.embeddings_layer_norm.gamma, "embedding LayerNorm")
    _copy(s.embeddings_layer_norm.beta, t.embeddings_layer_norm.beta, "embedding LayerNorm")
    for i, j in enumerate(layers):
        target, source = s.transformer_layers[i].weights, t.transformer_layers[j].weights
        if len(target) != len(source):
            raise ConfigError(f"initialize_student_from_teacher: layer {j} has {len(source)} weights, student "
                              f"layer {i} {len(target)}.")
        for a, b in zip(target, source):
            _copy(a, b, f"layer {j} -> {i} {b.path}")
    if hasattr(teacher, "masked_lm_head") and hasattr(student, "masked_lm_head"):
        th, sh = teacher.masked_lm_head, student.masked_lm_head
        for a, b in ((sh._intermediate_dense.kernel, th._intermediate_dense.kernel),
                     (sh._intermediate_dense.bias, th._intermediate_dense.bias),
                     (sh._intermediate_layer_norm.gamma, th._intermediate_layer_norm.gamma),
                     (sh._intermediate_layer_norm.beta, th._intermediate_layer_norm.beta),
                     (sh._bias, th._bias)):
            _copy(a, b, "MLM head")
    return student
