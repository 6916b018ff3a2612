"""Distributed training on the engines' own machinery (see distribution.py)."""

from keras_pretrain.distribute.distribution import NAMES
from keras_pretrain.distribute.distribution import Distribution
from keras_pretrain.distribute.distribution import configure_cpu_devices
from keras_pretrain.distribute.distribution import get_distribution
from keras_pretrain.distribute.layouts import check_divisible
from keras_pretrain.distribute.layouts import get_layout_map
from keras_pretrain.distribute.precision import set_mixed_precision
from keras_pretrain.distribute.precision import loss_scale_optimizer
