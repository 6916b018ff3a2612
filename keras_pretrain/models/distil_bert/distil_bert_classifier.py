"""DistilBERT fine-tuning head (Hugging Face `DistilBertForSequenceClassification`)."""

import keras

from keras_pretrain.models.roberta.roberta_classifier import RobertaClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertClassifier(RobertaClassifier):
    """Classifies a sequence from the `[CLS]` hidden state (DistilBERT has no pooler).

    `pre_classifier` Dense(H, relu) on `sequence_output[:, 0]`, dropout
    (`seq_classif_dropout`), then the `classifier` Dense(num_classes): the
    Hugging Face head. It is RoBERTa's head with relu and no dropout before
    the first dense layer.

    Args:
        backbone: a `DistilBertBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor.
        dropout: float. Dropout between the two dense layers (0.2 in HF).
    """

    head_activation = "relu"
    head_input_dropout = False

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.2, **kwargs):
        super().__init__(backbone, num_classes, preprocessor=preprocessor, dropout=dropout, **kwargs)
