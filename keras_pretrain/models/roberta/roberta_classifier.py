"""RoBERTa fine-tuning head (the Hugging Face / fairseq classification head)."""

import keras

from keras_pretrain.losses import classification_loss
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.roberta.roberta_pretrainer import backbone_inputs
from keras_pretrain.models.task import Task
from keras_pretrain.optimizers import AdamW


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaClassifier(Task):
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

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
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

        # === Functional Model ===
        inputs = dict(backbone.input)
        x = backbone(inputs)["sequence_output"][:, 0, :]
        x = self.head_dense(self.head_dropout(x))
        outputs = self.output_dense(self.output_dropout(x))
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
        return backbone_inputs(self.backbone, features), labels, None

    def default_compile_args(self):
        return {
            "optimizer": AdamW(2e-5, weight_decay=0.1, beta_2=0.98, epsilon=1e-6),
            "loss": classification_loss(),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
