"""DistilBERT: a 6-layer BERT without token types or pooler, distilled from BERT."""

from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
from keras_pretrain.models.distil_bert.distil_bert_classifier import DistilBertClassifier
from keras_pretrain.models.distil_bert.distil_bert_presets import backbone_presets
from keras_pretrain.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer

DistilBertBackbone.preset_configs = backbone_presets
