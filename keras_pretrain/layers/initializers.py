"""Kernel initializers the families share (fresh objects: one per layer)."""

import keras


def kernel_initializer(stddev=0.02):
    """A truncated normal of `stddev` (BERT, ALBERT, RoBERTa, DistilBERT, ERNIE: `initializer_range`)."""
    return keras.initializers.TruncatedNormal(stddev=stddev)


def normal_kernel_initializer(stddev=0.02):
    """A plain (untruncated) normal of `stddev` (GPT-1 and XLNet: `initializer_range`)."""
    return keras.initializers.RandomNormal(stddev=stddev)
