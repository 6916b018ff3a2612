"""ELMo's sequence classifier: the generic one on ELMo's token states (mixed biLM vectors), masked mean."""

import keras

from keras_pretrain.layers.summaries import MaskedMean
from keras_pretrain.layers.summaries import masked_mean
from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone
from keras_pretrain.models.elmo.elmo_preprocessor import ElmoPreprocessor
from keras_pretrain.tasks import SequenceClassifier


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedMeanPool(keras.layers.Layer):
    """Mean of the vectors (B, W, D) over the real tokens of each row -> (B, D).

    A row without any real token gives zeros (no division by zero). (`keras_pretrain.layers.summaries.
    MaskedMean` is the summary the tasks use; this layer takes the vectors themselves.)
    """

    def call(self, vectors, padding_mask):
        return masked_mean(vectors, padding_mask)

    def compute_output_shape(self, vectors_shape, padding_mask_shape):
        return (vectors_shape[0], vectors_shape[-1])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoClassifier(SequenceClassifier):
    """Classifies a sentence from ELMo vectors.

    The feature-based use of the paper: the pretrained biLM is frozen by default and only the `ScalarMix`
    weights and the classifier are trained. `logits = W mean_t(dropout(ELMo_t))`, the mean over the real
    tokens. keras-hub has no ELMo; this is the simplest head an ELMo user builds (a bag of contextual
    vectors), not one of the paper's task-specific models.

    Args:
        backbone: an `ElmoBackbone`.
        num_classes: int.
        trainable_backbone: bool, fine-tune the biLM too (default False).
        dropout: float, on the mixed vectors.
        preprocessor: optional preprocessor (`ElmoPreprocessor`: strings -> `char_ids`).

    Inputs: `char_ids` int (B, W, 50) from `character_ids`. `fit()` takes `(char_ids, labels)` or a dict with
    `char_ids` and `label` / `labels`.
    """

    backbone_cls = ElmoBackbone
    preprocessor_cls = ElmoPreprocessor

    def __init__(self, backbone, num_classes, trainable_backbone=False, dropout=None, preprocessor=None,
                 **kwargs):
        super().__init__(backbone, num_classes, preprocessor=preprocessor, dropout=dropout,
                         trainable_backbone=trainable_backbone, **kwargs)


__all__ = ["ElmoClassifier", "MaskedMeanPool", "MaskedMean"]
