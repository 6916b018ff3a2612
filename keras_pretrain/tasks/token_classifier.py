"""Old path of `keras_pretrain.tasks.token_classification.head` (token classification), kept for its importers."""

from keras_pretrain.tasks.token_classification.head import IGNORE  # noqa: F401
from keras_pretrain.tasks.token_classification.head import TaggingMixin  # noqa: F401
from keras_pretrain.tasks.token_classification.head import TokenAccuracy  # noqa: F401
from keras_pretrain.tasks.token_classification.head import TokenClassifier  # noqa: F401
from keras_pretrain.tasks.token_classification.head import TokenLoss  # noqa: F401
