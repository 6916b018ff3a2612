"""Base of the sequence classifiers: a head on a backbone, labels from feature dicts, compile defaults."""

import keras

from keras_pretrain.losses import classification_loss
from keras_pretrain.models.task import Task
from keras_pretrain.models.task import backbone_inputs
from keras_pretrain.optimizers import AdamW


class Classifier(Task):
    """A classification head on a backbone (BERT, ALBERT, RoBERTa, DistilBERT, XLNet, ELMo).

    What the families' classifiers share, written once: the constructor
    (`backbone`, `num_classes`, `preprocessor`, `dropout`), the functional
    model (the classifier's inputs -> logits), the config, the labels of a
    feature dict (`label` / `labels`) and the default compile arguments
    (the sparse classification loss and accuracy, `default_optimizer()`).
    A family writes only its head:

    - `_make_head(backbone, num_classes, dropout)`: creates the head layers;
    - `_logits(inputs)`: the logits from the classifier's inputs (it calls
      `self.backbone`);

    and, where they differ, `_classifier_inputs(backbone)` (default: the
    backbone's inputs), `_feature_inputs(features)` (the model inputs picked
    from a feature dict; default: the backbone's inputs by any alias, see
    `keras_pretrain.models.task.backbone_inputs`) and `default_optimizer()`.

    `fit()` takes `(x, labels)` with `x` the model inputs (or strings when a
    preprocessor is set), or a feature dict with a `label` / `labels` entry.
    """

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._make_head(backbone, num_classes, dropout)

        # === Functional Model ===
        inputs = self._classifier_inputs(backbone)
        super().__init__(inputs=inputs, outputs=self._logits(inputs), **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout

    def _make_head(self, backbone, num_classes, dropout):
        raise NotImplementedError

    def _logits(self, inputs):
        raise NotImplementedError

    def _classifier_inputs(self, backbone):
        return dict(backbone.input)

    def _feature_inputs(self, features):
        return backbone_inputs(self.backbone, features)

    def _config(self):
        return {"num_classes": self.num_classes, "dropout": self.dropout}

    def is_feature_dict(self, x):
        return "label" in x or "labels" in x

    def adapt_features(self, features):
        labels = features["label"] if "label" in features else features["labels"]
        return self._feature_inputs(features), labels, None

    def default_optimizer(self):
        return AdamW(5e-5, weight_decay=0.01)

    def default_compile_args(self):
        return {
            "optimizer": self.default_optimizer(),
            "loss": classification_loss(),
            "metrics": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
        }
