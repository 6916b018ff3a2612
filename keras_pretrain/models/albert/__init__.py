"""ALBERT: factorized embeddings, cross-layer sharing, MLM + SOP."""

from keras_pretrain.models.albert import albert_family  # noqa: F401 (registers the family)
from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
from keras_pretrain.models.albert.albert_classifier import AlbertClassifier
from keras_pretrain.models.albert.albert_convert import load_albert
from keras_pretrain.models.albert.albert_presets import backbone_presets
from keras_pretrain.models.albert.albert_pretrainer import AlbertPretrainer
from keras_pretrain.models.albert.albert_tokenizer import AlbertPreprocessor
from keras_pretrain.models.albert.albert_tokenizer import AlbertTokenizer

AlbertBackbone.preset_configs = backbone_presets
AlbertPreprocessor.backbone_cls = AlbertBackbone
AlbertTokenizer.backbone_cls = AlbertBackbone  # keras-hub's `Tokenizer.from_preset` matches by backbone
