"""ELMo for sentence classification: mixed biLM vectors, masked mean, linear layer."""

import keras
from keras import ops

from keras_pretrain.losses import classification_loss
from keras_pretrain.models.elmo.elmo_embedder import ElmoEmbedder
from keras_pretrain.models.elmo.elmo_backbone import token_mask
from keras_pretrain.models.task import Task


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
class ElmoClassifier(Task):
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
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.embedder = ElmoEmbedder(backbone, trainable_backbone=trainable_backbone,
                                     dropout=dropout, dtype=backbone.dtype_policy, name="elmo")
        self.pool = MaskedMeanPool(dtype=backbone.dtype_policy, name="mean_pool")
        self.output_dense = keras.layers.Dense(num_classes, dtype=backbone.dtype_policy, name="logits")

        # === Functional Model ===
        char_ids = keras.Input(shape=(None, backbone.max_characters), dtype="int32", name="char_ids")
        pooled = self.pool(self.embedder(char_ids), token_mask(char_ids))
        super().__init__(inputs={"char_ids": char_ids}, outputs=self.output_dense(pooled), **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.trainable_backbone = trainable_backbone
        self.dropout = dropout

    def _config(self):
        return {"num_classes": self.num_classes, "trainable_backbone": self.trainable_backbone,
                "dropout": self.dropout}

    def is_feature_dict(self, x):
        return "label" in x or "labels" in x

    def adapt_features(self, features):
        labels = features["label"] if "label" in features else features["labels"]
        return {"char_ids": features["char_ids"]}, labels, None

    def default_compile_args(self):
        return {
            "optimizer": keras.optimizers.Adam(1e-3),
            "loss": classification_loss(),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
