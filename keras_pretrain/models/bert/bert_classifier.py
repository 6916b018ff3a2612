"""BERT fine-tuning head for single sentences and sentence pairs."""

import keras

from keras_pretrain.losses import classification_loss
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.bert.bert_pretrainer import encoder_inputs
from keras_pretrain.models.task import Task
from keras_pretrain.optimizers import AdamW


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertClassifier(Task):
    """Classifies one sentence or a pair from the pooled `[CLS]` output.

    Pairs are packed `[CLS] A [SEP] B [SEP]` by the preprocessor (or by
    `keras_pretrain.models.bert.BertPreprocessor`), with segment ids 0 / 1;
    the network is the same for one sentence or two.

    Args:
        backbone: a backbone whose outputs include `pooled_output`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before the output layer.

    `fit()` takes `(x, labels)` with `x` the encoder inputs (or strings when a
    preprocessor is set), or a feature dict with a `label` / `labels` entry.
    """

    def __init__(
        self,
        backbone,
        num_classes,
        preprocessor=None,
        dropout=0.1,
        **kwargs,
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = keras.layers.Dense(
            num_classes,
            kernel_initializer=bert_kernel_initializer(
                getattr(backbone, "initializer_range", 0.02)
            ),
            dtype=backbone.dtype_policy,
            name="logits",
        )

        # === Functional Model ===
        inputs = dict(backbone.input)
        pooled = backbone(inputs)["pooled_output"]
        outputs = self.output_dense(self.output_dropout(pooled))
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout

    def _config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

    def is_feature_dict(self, x):
        return "label" in x or "labels" in x

    def adapt_features(self, features):
        labels = features["label"] if "label" in features else features["labels"]
        return encoder_inputs(features), labels, None

    def default_compile_args(self):
        return {
            "optimizer": AdamW(5e-5, weight_decay=0.01),
            "loss": classification_loss(),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
