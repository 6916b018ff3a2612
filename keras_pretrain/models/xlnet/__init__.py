"""XLNet: Transformer-XL recurrence, relative positions, two-stream attention, permutation LM."""

from keras_pretrain.models.xlnet import xlnet_family  # noqa: F401 (registers the family)
from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
from keras_pretrain.models.xlnet.xlnet_classifier import XLNetClassifier
from keras_pretrain.models.xlnet.xlnet_preprocessor import XLNetPreprocessor
from keras_pretrain.models.xlnet.xlnet_presets import backbone_presets
from keras_pretrain.models.xlnet.xlnet_presets import xlnet_parameter_count
from keras_pretrain.models.xlnet.xlnet_pretrainer import XLNetLMHead
from keras_pretrain.models.xlnet.xlnet_pretrainer import XLNetPretrainer
from keras_pretrain.models.xlnet.xlnet_tokenizer import XLNetTokenizer

XLNetBackbone.preset_configs = backbone_presets
XLNetTokenizer.backbone_cls = XLNetBackbone  # keras-hub's `Tokenizer.from_preset` matches by backbone
