"""Old path of `keras_pretrain.models.preset_preprocessor` (presets that set the packing length, and the
keras-hub preprocessing base the families' tokenizers build on)."""

from keras_pretrain.models.preset_preprocessor import PreprocessingLayer  # noqa: F401
from keras_pretrain.models.preset_preprocessor import PresetPreprocessorMixin  # noqa: F401
from keras_pretrain.models.preset_preprocessor import preprocessing_function  # noqa: F401
from keras_pretrain.models.preset_preprocessor import preset_sequence_length  # noqa: F401
from keras_pretrain.models.preset_preprocessor import sequence_length_property  # noqa: F401
