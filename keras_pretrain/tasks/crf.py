"""Old path of `keras_pretrain.tasks.token_classification.crf` (the linear-chain CRF), kept for its importers."""

from keras_pretrain.tasks.token_classification.crf import ConditionalRandomField  # noqa: F401
from keras_pretrain.tasks.token_classification.crf import crf_loss  # noqa: F401
from keras_pretrain.tasks.token_classification.crf import crf_mask  # noqa: F401
