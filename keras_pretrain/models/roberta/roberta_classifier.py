"""RoBERTa fine-tuning head (the Hugging Face / fairseq classification head)."""

import keras

from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.classifier import Classifier
from keras_pretrain.optimizers import AdamW


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaClassifier(Classifier):
    """Classifies one sequence or a pair from the `<s>` hidden state.

    RoBERTa has no pooler: as `RobertaClassificationHead`, the head is
    dropout -> Dense(H, tanh) -> dropout -> Dense(num_classes) on
    `sequence_output[:, 0]`. Pairs are packed `<s> A </s></s> B </s>` by the
    preprocessor (no segment ids).

    Args:
        backbone: a `RobertaBackbone`.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> encoder inputs).
        dropout: float. Dropout before each dense layer of the head.

    `fit()` takes `(x, labels)` with `x` the encoder inputs, or a feature dict
    with a `label` / `labels` entry.
    """

    head_activation = "tanh"
    head_input_dropout = True  # dropout on the <s> state before the first dense

    def _make_head(self, backbone, num_classes, dropout):
        init = lambda: bert_kernel_initializer(backbone.initializer_range)  # noqa: E731
        policy = backbone.dtype_policy
        self.head_dropout = keras.layers.Dropout(
            dropout if self.head_input_dropout else 0.0, dtype=policy, name="head_dropout"
        )
        self.head_dense = keras.layers.Dense(
            backbone.hidden_dim, activation=self.head_activation, kernel_initializer=init(),
            dtype=policy, name="head_dense",
        )
        self.output_dropout = keras.layers.Dropout(dropout, dtype=policy, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes, kernel_initializer=init(), dtype=policy, name="logits"
        )

    def _logits(self, inputs):
        x = self.backbone(inputs)["sequence_output"][:, 0, :]
        x = self.head_dense(self.head_dropout(x))
        return self.output_dense(self.output_dropout(x))

    def default_optimizer(self):
        return AdamW(2e-5, weight_decay=0.1, beta_2=0.98, epsilon=1e-6)
