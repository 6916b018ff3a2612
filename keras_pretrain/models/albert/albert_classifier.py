"""ALBERT fine-tuning head for single sentences and sentence pairs."""

import keras

from keras_pretrain.models.bert.bert_classifier import BertClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertClassifier(BertClassifier):
    """Classifies one sentence or a pair from ALBERT's pooled output.

    Same head as `BertClassifier` (dropout + dense on `pooled_output`); the
    original ALBERT fine-tuning code uses `classifier_dropout_prob` 0.1.

    Args:
        backbone: an `AlbertBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before the output layer.
    """
