"""Blocks shared by two or more model families (keras.ops only)."""

from keras_pretrain.layers.activations import gelu_approximate
from keras_pretrain.layers.activations import get_activation
