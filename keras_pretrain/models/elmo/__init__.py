"""ELMo: character CNN token encoder, bidirectional LSTMP language model, scalar mix."""

from keras_pretrain.models.elmo import elmo_family  # noqa: F401 (registers the family)
from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone
from keras_pretrain.models.elmo.elmo_backbone import layer_stack
from keras_pretrain.models.elmo.elmo_classifier import ElmoClassifier
from keras_pretrain.models.elmo.elmo_embedder import ElmoEmbedder
from keras_pretrain.models.elmo.elmo_export import export_bilm
from keras_pretrain.models.elmo.elmo_layers import ElmoCharacterEncoder
from keras_pretrain.models.elmo.elmo_layers import LSTMP
from keras_pretrain.models.elmo.elmo_layers import ScalarMix
from keras_pretrain.models.elmo.elmo_preprocessor import ElmoPreprocessor
from keras_pretrain.models.elmo.elmo_presets import backbone_presets
from keras_pretrain.models.elmo.elmo_pretrainer import ElmoBiLM
from keras_pretrain.models.elmo.elmo_pretrainer import Perplexity
from keras_pretrain.models.elmo.elmo_pretrainer import lm_targets
from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper
from keras_pretrain.models.elmo.elmo_tokenizer import character_ids
from keras_pretrain.models.elmo.elmo_tokenizer import split_words

ElmoBackbone.preset_configs = backbone_presets
