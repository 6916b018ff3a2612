"""XLNet fine-tuning head: sequence summary of the last token, then a projection."""

import keras

from keras_pretrain.losses import classification_loss
from keras_pretrain.models.bert.bert_pretrainer import encoder_inputs
from keras_pretrain.models.task import Task
from keras_pretrain.models.xlnet.xlnet_backbone import RefusesInputMask
from keras_pretrain.models.xlnet.xlnet_layers import xlnet_kernel_initializer
from keras_pretrain.optimizers import AdamW


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetClassifier(RefusesInputMask, Task):
    """Classifies one sequence or a pair from the state of the last token.

    As `transformers`' `XLNetForSequenceClassification` with its defaults
    (`summary_type="last"`, `summary_use_proj`, tanh, `summary_last_dropout`):
    `logits = W_out dropout(tanh(W_s h[:, -1] + b_s)) + b_out`. XLNet inputs
    end with `<cls>` and are padded on the left, so the last position is
    always the class token (right-padded inputs would summarise a pad).

    Args:
        backbone: an `XLNetBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor.
        dropout: float, after the summary (`summary_last_dropout`).

    `fit()` takes `(x, labels)` with `x` the encoder inputs, or a feature
    dict with a `label` / `labels` entry.
    """

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        init = lambda: xlnet_kernel_initializer(backbone.initializer_range)  # noqa: E731
        self.summary_dense = keras.layers.Dense(
            backbone.hidden_dim, activation="tanh", kernel_initializer=init(),
            dtype=backbone.dtype_policy, name="summary",
        )
        self.summary_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="summary_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes, kernel_initializer=init(), dtype=backbone.dtype_policy, name="logits"
        )

        # === Functional Model ===
        inputs = {
            name: keras.Input(shape=(None,), dtype="int32", name=name)
            for name in ("token_ids", "segment_ids", "padding_mask")
        }
        sequence = backbone(inputs)["sequence_output"]
        summary = self.summary_dropout(self.summary_dense(sequence[:, -1, :]))
        outputs = self.output_dense(summary)
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
            "optimizer": AdamW(2e-5, weight_decay=0.01),
            "loss": classification_loss(),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
