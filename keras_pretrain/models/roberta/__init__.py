"""RoBERTa: BERT's encoder, byte-level BPE, dynamic masking, no NSP."""

from keras_pretrain.models.roberta import roberta_family  # noqa: F401 (registers the family)
from keras_pretrain.models.masked_lm import MaskedLMPretrainer
from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
from keras_pretrain.models.roberta.roberta_classifier import RobertaClassifier
from keras_pretrain.models.roberta.roberta_preprocessor import RobertaPreprocessor
from keras_pretrain.models.roberta.roberta_presets import backbone_presets
from keras_pretrain.models.roberta.roberta_pretrainer import RobertaPretrainer
from keras_pretrain.models.roberta.roberta_tokenizer import FairseqRobertaTokenizer  # noqa: F401
from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer

RobertaBackbone.preset_configs = backbone_presets
RobertaTokenizer.backbone_cls = RobertaBackbone  # keras-hub's `Tokenizer.from_preset` matches by backbone
