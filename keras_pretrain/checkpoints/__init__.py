"""Readers for checkpoints and archives, with clear errors."""

from keras_pretrain.checkpoints.weights import WeightLoader
