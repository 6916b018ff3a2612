"""DistilBERT's sequence classifier: the generic one with DistilBERT's summary (the Hugging Face head)."""

import keras

from keras_pretrain.models.bert.bert_tokenizer import BertPreprocessor
from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertClassifier(SequenceClassifier):
    """Classifies a sequence from the `[CLS]` hidden state (DistilBERT has no pooler).

    `pre_classifier` Dense(H, relu) on `sequence_output[:, 0]`, dropout (`seq_classif_dropout`, 0.2), then
    the `classifier` Dense(num_classes): the Hugging Face head, declared as the family's summary.

    Args:
        backbone: a `DistilBertBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor.
        dropout: float. Dropout between the two dense layers (default 0.2, as Hugging Face).
    """

    backbone_cls = DistilBertBackbone
    preprocessor_cls = BertPreprocessor
