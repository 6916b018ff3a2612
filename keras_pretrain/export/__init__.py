"""SavedModel writing with TF-Hub signatures (encoder, mlm, preprocessor) for every family."""

from keras_pretrain.export.preprocessor_savedmodel import export_preprocessor
from keras_pretrain.export.savedmodel import TFHUB_INPUTS
from keras_pretrain.export.savedmodel import ExportError
from keras_pretrain.export.savedmodel import export_encoder
