"""ERNIE 1.0 (knowledge masking), ERNIE 2.0 continual multi-task learning, Chinese BERT-wwm preset."""

import keras

from keras_pretrain.models.ernie import ernie_family  # noqa: F401 (registers the family)
from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer
from keras_pretrain.models.ernie.ernie_backbone import ErnieBackbone
from keras_pretrain.models.ernie.ernie_classifier import ErnieClassifier
from keras_pretrain.models.ernie.ernie_continual import MultiTask
from keras_pretrain.models.ernie.ernie_continual import build_multitask_model
from keras_pretrain.models.ernie.ernie_continual import continual_multitask_training
from keras_pretrain.models.ernie.ernie_continual import evaluate_tasks
from keras_pretrain.models.ernie.ernie_presets import backbone_presets
from keras_pretrain.models.ernie.ernie_presets import bert_wwm_presets
from keras_pretrain.models.ernie.ernie_presets import ernie_presets
from keras_pretrain.models.ernie.ernie_pretrainer import ErniePretrainer

ErnieBackbone.preset_configs = backbone_presets


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ErnieTokenizer(BertTokenizer):
    """BERT's WordPiece tokenizer, matched to a `ErnieBackbone` preset by keras-hub's `Tokenizer.from_preset`
    (runs save and load a `BertTokenizer`: this class only declares the backbone)."""

    backbone_cls = ErnieBackbone
