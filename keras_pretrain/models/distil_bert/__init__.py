"""DistilBERT: a 6-layer BERT without token types or pooler, distilled from BERT."""

import keras

from keras_pretrain.models.distil_bert import distil_bert_family  # noqa: F401 (registers the family)
from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer
from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from keras_pretrain.models.distil_bert.distil_bert_classifier import DistilBertClassifier
from keras_pretrain.models.distil_bert.distil_bert_presets import backbone_presets
from keras_pretrain.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer

DistilBertBackbone.preset_configs = backbone_presets


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertTokenizer(BertTokenizer):
    """BERT's WordPiece tokenizer, matched to a `DistilBertBackbone` preset by keras-hub's `Tokenizer.from_preset`
    (runs save and load a `BertTokenizer`: this class only declares the backbone)."""

    backbone_cls = DistilBertBackbone
