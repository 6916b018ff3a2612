"""Losses shared by the pretraining and distillation tasks (keras.ops only)."""

import keras
from keras import ops

from keras_pretrain.layers.masked_lm import MaskedLMLoss


def masked_lm_loss():
    """Cross-entropy over gathered masked positions, averaged over real ones.

    The original BERT divides the summed loss by the sum of
    `masked_lm_weights` (padding predictions weigh 0), not by the number of
    slots: that is Keras' `"mean_with_sample_weight"` reduction. One MLM
    loss for every family: `keras_pretrain.layers.MaskedLMLoss`.
    """
    return MaskedLMLoss(reduction="mean_with_sample_weight", name="mlm_loss")


# transformers' `problem_type` values: the loss of a sequence classifier's logits.
PROBLEM_TYPES = ("single_label_classification", "regression", "multi_label_classification")


def classification_loss(name="loss"):
    return keras.losses.SparseCategoricalCrossentropy(
        from_logits=True, name=name
    )


def problem_loss(problem_type, name="loss"):
    """The loss of a `problem_type` (transformers' names): softmax cross-entropy over integer labels,
    mean squared error for regression, sigmoid binary cross-entropy for multi-label (labels [B, C] of 0/1)."""
    if problem_type == "regression":
        return keras.losses.MeanSquaredError(name=name)
    if problem_type == "multi_label_classification":
        return keras.losses.BinaryCrossentropy(from_logits=True, name=name)
    return classification_loss(name)


def problem_metrics(problem_type):
    """Default `compile` metrics of a `problem_type` (multi-label: per-label accuracy at p = 0.5)."""
    if problem_type == "regression":
        return [keras.metrics.MeanSquaredError(name="mse")]
    if problem_type == "multi_label_classification":
        return [keras.metrics.BinaryAccuracy(threshold=0.0, name="accuracy")]  # logits: 0 is p = 0.5
    return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]


def distillation_kl(teacher_logits, student_logits, temperature=2.0, mask=None):
    """KL(softmax(teacher/T) || softmax(student/T)) * T^2, averaged.

    Args:
        teacher_logits, student_logits: [..., V] logits.
        temperature: softmax temperature T.
        mask: optional [...] weights (1 for positions that count).
    """
    t = ops.softmax(teacher_logits / temperature, axis=-1)
    log_t = ops.log_softmax(teacher_logits / temperature, axis=-1)
    log_s = ops.log_softmax(student_logits / temperature, axis=-1)
    kl = ops.sum(t * (log_t - log_s), axis=-1) * (temperature**2)
    if mask is None:
        return ops.mean(kl)
    mask = ops.cast(mask, kl.dtype)
    return ops.sum(kl * mask) / ops.maximum(ops.sum(mask), 1.0)


def cosine_embedding_loss(student_hidden, teacher_hidden, mask=None):
    """Mean of 1 - cos(student, teacher) over real tokens."""
    s = student_hidden / ops.maximum(
        ops.norm(student_hidden, axis=-1, keepdims=True), 1e-8
    )
    t = teacher_hidden / ops.maximum(
        ops.norm(teacher_hidden, axis=-1, keepdims=True), 1e-8
    )
    loss = 1.0 - ops.sum(s * t, axis=-1)
    if mask is None:
        return ops.mean(loss)
    mask = ops.cast(mask, loss.dtype)
    return ops.sum(loss * mask) / ops.maximum(ops.sum(mask), 1.0)
