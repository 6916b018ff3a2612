"""keras_pretrain: classic pretrained language model families for Keras 3."""

__version__ = "0.1.0"

from keras_pretrain import errors  # noqa: F401
from keras_pretrain.errors import CheckpointFormatError  # noqa: F401
from keras_pretrain.errors import ConfigError  # noqa: F401
from keras_pretrain.errors import CorpusFormatError  # noqa: F401

# Registration on import: every family's Keras classes (backbones, tasks, tokenizers, preprocessors, layers)
# are registered, so `keras.saving.load_model` and keras-hub's `from_preset` entry points resolve them after
# `import keras_pretrain` alone.
from keras_pretrain import families as _families  # noqa: E402

_families.import_all()

# `OurBackbone.from_preset(folder)` also reads keras-hub's own BERT / ALBERT / RoBERTa / DistilBERT preset folders.
from keras_pretrain.models import keras_hub_presets as _keras_hub_presets  # noqa: E402, F401
