"""BERT's sequence classifier: the generic one on a `BertBackbone` (pooled `[CLS]`, dropout, dense)."""

import keras

from keras_pretrain.models.bert.bert_backbone import BertBackbone
from keras_pretrain.models.bert.bert_tokenizer import BertPreprocessor
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertClassifier(SequenceClassifier):
    """Classifies one sentence or a pair from the pooled `[CLS]` output.

    Pairs are packed `[CLS] A [SEP] B [SEP]` by the preprocessor (`BertPreprocessor`), with segment ids
    0 / 1. The head (`keras_pretrain.tasks.SequenceClassifier`, BERT's summary):
    `Dense(num_classes)(dropout(pooled_output))`.

    Args:
        backbone: a backbone whose outputs include `pooled_output`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before the output layer (0.1).
    """

    backbone_cls = BertBackbone
    preprocessor_cls = BertPreprocessor
