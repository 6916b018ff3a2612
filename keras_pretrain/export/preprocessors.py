"""Old path of `keras_pretrain.export.preprocessor_savedmodel` (TF-Hub-style preprocessor SavedModels)."""

from keras_pretrain.export.preprocessor_savedmodel import export_preprocessor  # noqa: F401
from keras_pretrain.export.preprocessor_savedmodel import packing_of  # noqa: F401
from keras_pretrain.export.preprocessor_savedmodel import preprocessor_of  # noqa: F401
from keras_pretrain.export.preprocessor_savedmodel import special_tokens_dict  # noqa: F401
