"""BERT fine-tuning head for single sentences and sentence pairs."""

import keras

from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.classifier import Classifier
from keras_pretrain.models.task import encoder_inputs


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertClassifier(Classifier):
    """Classifies one sentence or a pair from the pooled `[CLS]` output.

    Pairs are packed `[CLS] A [SEP] B [SEP]` by the preprocessor (or by
    `keras_pretrain.models.bert.BertPreprocessor`), with segment ids 0 / 1;
    the network is the same for one sentence or two. The head:
    `Dense(num_classes)(dropout(pooled_output))`.

    Args:
        backbone: a backbone whose outputs include `pooled_output`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before the output layer.

    `fit()` takes `(x, labels)` with `x` the encoder inputs (or strings when a
    preprocessor is set), or a feature dict with a `label` / `labels` entry
    (and the three encoder inputs, by any of their usual names).
    """

    def _make_head(self, backbone, num_classes, dropout):
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

    def _logits(self, inputs):
        pooled = self.backbone(inputs)["pooled_output"]
        return self.output_dense(self.output_dropout(pooled))

    def _feature_inputs(self, features):
        return encoder_inputs(features)
