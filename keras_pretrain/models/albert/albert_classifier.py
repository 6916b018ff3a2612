"""ALBERT's sequence classifier: the generic one on an `AlbertBackbone` (pooled output, dropout, dense)."""

import keras

from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
from keras_pretrain.models.albert.albert_tokenizer import AlbertPreprocessor
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertClassifier(SequenceClassifier):
    """Classifies one sentence or a pair from ALBERT's pooled output.

    Same head as `BertClassifier` (dropout + dense on `pooled_output`); the original ALBERT fine-tuning code
    uses `classifier_dropout_prob` 0.1.

    Args:
        backbone: an `AlbertBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before the output layer.
    """

    backbone_cls = AlbertBackbone
    preprocessor_cls = AlbertPreprocessor
