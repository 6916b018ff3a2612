"""Token classification (named-entity recognition, tagging) for every family, written once: one label per token
of the backbone's token states, as transformers' `*ForTokenClassification`."""

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.models.task import pick_inputs
from keras_pretrain.tasks.classification.head import character_mask
from keras_pretrain.tasks.classification.head import task_inputs

IGNORE = -100  # the label of a token the loss and the metrics skip (sub-words after the first, specials, padding)


def _kept(y_true, y_pred):
    """(labels int32 [N], logits [N, C], kept float [N]) of `y_true` [B, T] and `y_pred` [B, T, C]: the
    positions labelled IGNORE (or out of the classes) are not kept; their label reads as 0."""
    classes = ops.shape(y_pred)[-1]
    labels = ops.reshape(ops.cast(y_true, "int32"), (-1,))
    logits = ops.reshape(y_pred, (-1, classes))
    kept = ops.logical_and(ops.greater_equal(labels, 0), ops.less(labels, classes))
    return ops.where(kept, labels, 0), logits, ops.cast(kept, y_pred.dtype)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class TokenLoss(keras.losses.Loss):
    """transformers' token-classification loss: softmax cross-entropy of the logits `[B, T, C]` at every token
    whose label `[B, T]` is not -100, averaged over those tokens (`CrossEntropyLoss()` on the flattened tokens,
    `ignore_index=-100`; NaN when the batch keeps no token, as there)."""

    def __init__(self, name="token_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels, logits, kept = _kept(y_true, y_pred)
        log_probs = ops.log_softmax(logits, axis=-1)
        picked = ops.take_along_axis(log_probs, labels[:, None], axis=-1)[:, 0]
        return -ops.sum(picked * kept) / ops.sum(kept)  # a scalar: the reduction leaves it as it is


@keras.saving.register_keras_serializable(package="keras_pretrain")
class TokenAccuracy(keras.metrics.Metric):
    """The share of the labelled tokens (label not -100) whose arg-max logit is the label."""

    def __init__(self, name="token_accuracy", **kwargs):
        super().__init__(name=name, **kwargs)
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels, logits, kept = _kept(y_true, y_pred)
        hit = ops.cast(ops.equal(ops.cast(ops.argmax(logits, axis=-1), "int32"), labels), "float32")
        kept = ops.cast(kept, "float32")
        self.correct.assign_add(ops.sum(hit * kept))
        self.total.assign_add(ops.sum(kept))

    def result(self):
        return ops.divide_no_nan(self.correct, self.total)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)


class TaggingMixin(TaskMixin):
    """What the taggers share: a feature dict with `labels` (or `label_ids`) `[B, T]` trains them; the family's
    fine-tuning optimizer."""

    # The module that writes the taggers' strings-in serving SavedModel (`write_from_spec`).
    serving_module = "keras_pretrain.tasks.token_classification.serving"

    def _config(self):
        return {}

    def is_feature_dict(self, x):
        return "labels" in x or "label_ids" in x

    def adapt_features(self, features):
        labels = features["labels"] if "labels" in features else features["label_ids"]
        return pick_inputs(self.input, features), labels, None

    def default_optimizer(self):
        from keras_pretrain import families

        return families.family_of(self.backbone).default_fine_tuning_optimizer()


@keras.saving.register_keras_serializable(package="keras_pretrain")
class TokenClassifier(TaggingMixin, keras_hub.models.Task):
    """Labels every token of a sequence (NER, POS tagging) for any registered family: the token states the family
    declares (the backbone's `sequence_output`; ELMo: the scalar mix of its biLM layers over words), a dropout
    and one `Dense(num_classes)` named `classifier`, as transformers' `*ForTokenClassification`:

        logits[b, t] = classifier(dropout(token_states[b, t]))          # [B, T, num_classes]

    Nothing is masked in the logits (padding keeps its logits); the labels mark what counts: `fit()` takes
    `(x, labels)` with int labels `[B, T]`, -100 on the tokens to skip (the sub-words after a word's first, the
    special tokens, the padding: `features` aligns word labels that way), or a feature dict
    with a `labels` / `label_ids` entry. `compile()` defaults to transformers' loss (`TokenLoss`: the mean
    cross-entropy over the labelled tokens) and `TokenAccuracy`.

    Args:
        backbone: a backbone of any registered family.
        num_classes: int, the number of tags.
        preprocessor: optional keras-hub preprocessor mapping raw examples to the inputs.
        dropout: float, the dropout on the token states (transformers': the config's `classifier_dropout`,
            else `hidden_dropout_prob`; DistilBERT's `dropout`; XLNet's head has none).
        trainable_backbone: bool, for token states computed by a layer of their own (ELMo's biLM is frozen by
            default, the feature-based use of the paper).
    """

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=0.1, trainable_backbone=False, **kwargs):
        from keras_pretrain import families

        family = families.family_of(backbone)
        summary, token_states = family.summary, family.token_states
        if not isinstance(num_classes, int) or num_classes < 1:
            raise ConfigError(f"TokenClassifier: num_classes must be a positive int; got {num_classes!r}.")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ConfigError(f"TokenClassifier: dropout must be a float in [0, 1); got {dropout!r}.")
        policy = backbone.dtype_policy
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._token_states = token_states
        self.trainable_backbone = trainable_backbone
        if token_states.layer is not None:
            layer = token_states.layer_class()(backbone, trainable_backbone=trainable_backbone, dropout=dropout,
                                               dtype=policy, name=token_states.layer_name)
            setattr(self, token_states.attribute, layer)
        self.output_dropout = keras.layers.Dropout(dropout, dtype=policy, name="output_dropout") if dropout else None
        self.classifier = keras.layers.Dense(num_classes, kernel_initializer=summary.kernel_initializer(backbone),
                                             dtype=policy, name="classifier")

        # === Functional Model ===
        inputs = task_inputs(backbone, token_states)
        x, _ = self.token_states(inputs)
        if self.output_dropout is not None:
            x = self.output_dropout(x)
        super().__init__(inputs=inputs, outputs=self.classifier(x), **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout

    def token_states(self, inputs):
        """`(states [B, T, H], padding_mask [B, T])`."""
        if self._token_states.layer is not None:
            char_ids = inputs["char_ids"]
            return getattr(self, self._token_states.attribute)(char_ids), character_mask(char_ids)
        return self.backbone(inputs)["sequence_output"], inputs["padding_mask"]

    def get_config(self):
        config = keras_hub.models.Task.get_config(self)
        config.update({"num_classes": self.num_classes, "dropout": self.dropout})
        if self._token_states.layer is not None:
            config["trainable_backbone"] = self.trainable_backbone
        return config

    def default_compile_args(self):
        return {"optimizer": self.default_optimizer(), "loss": TokenLoss(), "metrics": [TokenAccuracy()]}
