"""Old path of `keras_pretrain.tasks.classification.head` (sequence classification), kept for its importers."""

from keras_pretrain.tasks.classification.head import ENCODER_INPUTS  # noqa: F401
from keras_pretrain.tasks.classification.head import SequenceClassifier  # noqa: F401
from keras_pretrain.tasks.classification.head import character_mask  # noqa: F401
from keras_pretrain.tasks.classification.head import family_behaviour  # noqa: F401
from keras_pretrain.tasks.classification.head import task_inputs  # noqa: F401
