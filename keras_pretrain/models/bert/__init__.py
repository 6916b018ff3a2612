"""BERT (and whole-word-masking BERT, which differs only in its data)."""

from keras_pretrain.models.bert import bert_family  # noqa: F401 (registers the family)
from keras_pretrain.models.bert.bert_backbone import BertBackbone
from keras_pretrain.models.bert.bert_classifier import BertClassifier
from keras_pretrain.models.bert.bert_presets import backbone_presets
from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer
from keras_pretrain.models.bert.bert_tokenizer import BertPreprocessor
from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

BertBackbone.preset_configs = backbone_presets
BertTokenizer.backbone_cls = BertBackbone  # keras-hub's `Tokenizer.from_preset` matches tokenizers by backbone
