"""GPT (GPT-1): decoder-only LM pretraining, fine-tuning with the LM auxiliary loss."""

from keras_pretrain.models.gpt import gpt_family  # noqa: F401 (registers the family)
from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
from keras_pretrain.models.gpt.gpt_backbone import expand_vocabulary
from keras_pretrain.models.gpt.gpt_causal_lm import GPTCausalLM
from keras_pretrain.models.gpt.gpt_causal_lm import lm_loss
from keras_pretrain.models.gpt.gpt_causal_lm import make_sampler
from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier
from keras_pretrain.models.gpt.gpt_inputs import pack_sequence
from keras_pretrain.models.gpt.gpt_inputs import transform_inputs
from keras_pretrain.models.gpt.gpt_preprocessor import GPTPreprocessor
from keras_pretrain.models.gpt.gpt_presets import backbone_presets
from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer
from keras_pretrain.models.gpt.gpt_tokenizer import learn_bpe

GPTBackbone.preset_configs = backbone_presets
GPTClassifier.preprocessor_cls = GPTPreprocessor  # keras-hub's `TextClassifier.from_preset` builds it
