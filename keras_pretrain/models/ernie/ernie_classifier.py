"""ERNIE's sequence classifier: BERT's head (pooled output, dropout, dense) on an `ErnieBackbone`."""

import keras

from keras_pretrain.models.bert.bert_tokenizer import BertPreprocessor
from keras_pretrain.models.ernie.ernie_backbone import ErnieBackbone
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ErnieClassifier(SequenceClassifier):
    """Classifies one sentence or a pair from ERNIE's pooled output (task-type ids default to task 0).

    Its own class so that keras-hub's `TextClassifier.from_preset` finds it for an `ErnieBackbone` preset
    (keras-hub matches a task to a preset by `backbone_cls`); `.keras` files of a `BertClassifier` on an
    `ErnieBackbone` (written before it existed) load as they are.
    """

    backbone_cls = ErnieBackbone
    preprocessor_cls = BertPreprocessor
