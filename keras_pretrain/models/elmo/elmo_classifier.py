"""ELMo for sentence classification: mixed biLM vectors, masked mean, linear layer."""

import keras
from keras import ops

from keras_pretrain.models.classifier import Classifier
from keras_pretrain.models.elmo.elmo_backbone import token_mask
from keras_pretrain.models.elmo.elmo_embedder import ElmoEmbedder


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedMeanPool(keras.layers.Layer):
    """Mean of the vectors (B, W, D) over the real tokens of each row -> (B, D).

    A row without any real token gives zeros (no division by zero).
    """

    def call(self, vectors, padding_mask):
        mask = ops.cast(padding_mask, vectors.dtype)[:, :, None]
        total = ops.sum(vectors * mask, axis=1)
        return total / ops.maximum(ops.sum(mask, axis=1), 1.0)

    def compute_output_shape(self, vectors_shape, padding_mask_shape):
        return (vectors_shape[0], vectors_shape[-1])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoClassifier(Classifier):
    """Classifies a sentence from ELMo vectors.

    The feature-based use of the paper: the pretrained biLM is frozen by
    default and only the `ScalarMix` weights and the classifier are trained.
    `logits = W mean_t(dropout(ELMo_t))`, the mean over the real tokens.
    keras-hub has no ELMo; this is the simplest head an ELMo user builds (a
    bag of contextual vectors), not one of the paper's task-specific models.

    Args:
        backbone: an `ElmoBackbone`.
        num_classes: int.
        trainable_backbone: bool, fine-tune the biLM too (default False).
        dropout: float, on the mixed vectors.
        preprocessor: optional preprocessor.

    Inputs: `char_ids` int (B, W, 50) from `character_ids`. `fit()` takes
    `(char_ids, labels)` or a dict with `char_ids` and `label` / `labels`.
    """

    def __init__(self, backbone, num_classes, trainable_backbone=False, dropout=0.1,
                 preprocessor=None, **kwargs):
        self.trainable_backbone = trainable_backbone  # read by `_make_head`
        super().__init__(backbone, num_classes, preprocessor=preprocessor, dropout=dropout, **kwargs)

    def _make_head(self, backbone, num_classes, dropout):
        self.embedder = ElmoEmbedder(backbone, trainable_backbone=self.trainable_backbone,
                                     dropout=dropout, dtype=backbone.dtype_policy, name="elmo")
        self.pool = MaskedMeanPool(dtype=backbone.dtype_policy, name="mean_pool")
        self.output_dense = keras.layers.Dense(num_classes, dtype=backbone.dtype_policy, name="logits")

    def _classifier_inputs(self, backbone):
        char_ids = keras.Input(shape=(None, backbone.max_characters), dtype="int32", name="char_ids")
        return {"char_ids": char_ids}

    def _logits(self, inputs):
        char_ids = inputs["char_ids"]
        return self.output_dense(self.pool(self.embedder(char_ids), token_mask(char_ids)))

    def _config(self):
        return {**super()._config(), "trainable_backbone": self.trainable_backbone}

    def _feature_inputs(self, features):
        return {"char_ids": features["char_ids"]}

    def default_optimizer(self):
        return keras.optimizers.Adam(1e-3)
