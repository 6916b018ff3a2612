"""Blocks shared by two or more model families (keras.ops only)."""

from keras_pretrain.layers.activations import gelu_approximate
from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.dropout import dropout
from keras_pretrain.layers.masked_lm import MaskedLMAccuracy
from keras_pretrain.layers.masked_lm import MaskedLMHead
from keras_pretrain.layers.masked_lm import MaskedLMLoss
from keras_pretrain.layers.masked_lm import MaskedLMPerplexity
from keras_pretrain.layers.transformer_encoder import TransformerEncoder
