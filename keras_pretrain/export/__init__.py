"""SavedModel writing with TF-Hub signatures (encoder, mlm, preprocessor)."""

from keras_pretrain.export.savedmodel import TFHUB_INPUTS
from keras_pretrain.export.savedmodel import export_encoder
from keras_pretrain.export.savedmodel import export_preprocessor
