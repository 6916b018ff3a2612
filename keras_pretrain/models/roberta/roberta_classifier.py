"""RoBERTa's sequence classifier: the generic one with RoBERTa's summary (`RobertaClassificationHead`)."""

import keras

from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
from keras_pretrain.models.roberta.roberta_preprocessor import RobertaPreprocessor
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaClassifier(SequenceClassifier):
    """Classifies one sequence or a pair from the `<s>` hidden state.

    RoBERTa has no pooler: as `RobertaClassificationHead`, the head is dropout -> Dense(H, tanh) -> dropout
    -> Dense(num_classes) on `sequence_output[:, 0]` (the family's summary in `keras_pretrain.families`).
    Pairs are packed `<s> A </s></s> B </s>` (no segment ids) by the preprocessor (`RobertaPreprocessor`).

    Args:
        backbone: a `RobertaBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before each dense layer of the head.
    """

    backbone_cls = RobertaBackbone
    preprocessor_cls = RobertaPreprocessor
