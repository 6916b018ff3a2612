"""XLNet fine-tuning head: sequence summary of the last token, then a projection."""

import keras

from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.classifier import Classifier
from keras_pretrain.models.task import encoder_inputs
from keras_pretrain.models.xlnet.xlnet_backbone import RefusesInputMask
from keras_pretrain.models.xlnet.xlnet_layers import xlnet_kernel_initializer
from keras_pretrain.optimizers import AdamW


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetClassifier(RefusesInputMask, Classifier):
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

    def _make_head(self, backbone, num_classes, dropout):
        init = lambda: xlnet_kernel_initializer(backbone.initializer_range)  # noqa: E731
        self.summary_dense = keras.layers.Dense(
            backbone.hidden_dim, activation="tanh", kernel_initializer=init(),
            dtype=backbone.dtype_policy, name="summary",
        )
        self.summary_dropout = keras.layers.Dropout(dropout, dtype=backbone.dtype_policy, name="summary_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes, kernel_initializer=init(), dtype=backbone.dtype_policy, name="logits"
        )

    def _classifier_inputs(self, backbone):
        # The backbone is a subclassed model: the classifier makes its inputs.
        return int_inputs("token_ids", "segment_ids", "padding_mask")

    def _logits(self, inputs):
        sequence = self.backbone(inputs)["sequence_output"]
        return self.output_dense(self.summary_dropout(self.summary_dense(sequence[:, -1, :])))

    def _feature_inputs(self, features):
        return encoder_inputs(features)

    def default_optimizer(self):
        return AdamW(2e-5, weight_decay=0.01)
