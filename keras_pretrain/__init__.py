"""keras_pretrain: classic pretrained language model families for Keras 3."""

__version__ = "0.1.0"

from keras_pretrain import errors  # noqa: F401
from keras_pretrain.errors import CheckpointFormatError  # noqa: F401
from keras_pretrain.errors import ConfigError  # noqa: F401
from keras_pretrain.errors import CorpusFormatError  # noqa: F401
