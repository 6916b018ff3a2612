"""Sequence classification for every family, written once: a family's summary, then the output layer."""

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.losses import PROBLEM_TYPES
from keras_pretrain.losses import problem_loss
from keras_pretrain.losses import problem_metrics
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.models.task import pick_inputs

# The inputs of a subclassed backbone (no symbolic inputs to read: XLNet's).
ENCODER_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def family_behaviour(backbone):
    """`(summary, token_states)` of the backbone's family (`keras_pretrain.families`)."""
    from keras_pretrain import families

    family = families.family_of(backbone)
    return family.summary, family.token_states


def task_inputs(backbone, token_states):
    """The task's symbolic inputs: the backbone's (characters for ELMo's token states)."""
    if token_states.characters:
        return {"char_ids": keras.Input(shape=(None, backbone.max_characters), dtype="int32", name="char_ids")}
    try:
        return dict(backbone.input)
    except (AttributeError, ValueError):  # a subclassed backbone
        return int_inputs(*ENCODER_INPUTS)


def character_mask(char_ids):
    """(B, W) bool: a token is real when any of its character ids is not 0."""
    return ops.any(ops.not_equal(char_ids, 0), axis=-1)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class SequenceClassifier(TaskMixin, keras_hub.models.TextClassifier):
    """Classifies a sequence (or a pair, packed by the family's packing) for any family.

    The family declares how it reads its backbone (`keras_pretrain.families.Family`): its `token_states` (the
    backbone's `sequence_output`, or ELMo's scalar mix) and its `summary` (`keras_pretrain.layers.summaries`:
    pooled `[CLS]`, first or last token, extract token, masked mean; plus an optional projection
    Dense(H, activation) with dropout around it, as RoBERTa's, DistilBERT's and XLNet's heads). This class
    adds the output layer `Dense(num_classes)`, named `logits`:

        logits = Dense(C)(dropout(projection(summary(token states))))

    Args:
        backbone: a backbone of any registered family.
        num_classes: int.
        preprocessor: optional preprocessor (strings -> inputs).
        dropout: float, or None for the family's default (`SequenceSummary.dropout`).
        trainable_backbone: bool, for token states computed by a layer of their own (ELMo's biLM is frozen
            by default, the feature-based use of the paper).
        problem_type: "single_label_classification" (softmax cross-entropy), "regression" (`num_classes`
            outputs, mean squared error) or "multi_label_classification" (sigmoid binary cross-entropy): the
            loss `compile()` chooses by default, as transformers' `problem_type`. The logits are the same.

    `fit()` takes `(x, labels)` with `x` the model inputs (or strings when a preprocessor is set), or a
    feature dict with a `label` / `labels` entry (inputs by any of their usual names; missing segment / task
    ids are zeros).
    """

    backbone_cls = None  # any registered family's backbone (the named subclasses set theirs)
    # The module that writes this task's strings-in serving SavedModel (`write_from_spec`).
    serving_module = "keras_pretrain.tasks.classification.serving"
    preprocessor_cls = None

    def __init__(self, backbone, num_classes, preprocessor=None, dropout=None, trainable_backbone=False,
                 problem_type="single_label_classification", **kwargs):
        if problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"problem_type {problem_type!r} is not one of {PROBLEM_TYPES}.")
        summary, token_states = family_behaviour(backbone)
        dropout = summary.dropout if dropout is None else dropout
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._summary, self._token_states = summary, token_states
        self.trainable_backbone = trainable_backbone
        self.problem_type = problem_type  # before the functional init, which compiles
        self._make_head(backbone, num_classes, dropout, summary, token_states)

        # === Functional Model ===
        inputs = task_inputs(backbone, token_states)
        super().__init__(inputs=inputs, outputs=self._logits(inputs), **kwargs)

        # === Config ===
        self.num_classes = num_classes
        self.dropout = dropout

    def _make_head(self, backbone, num_classes, dropout, summary, token_states):
        policy = backbone.dtype_policy
        if token_states.layer is not None:
            layer = token_states.layer_class()(backbone, trainable_backbone=self.trainable_backbone,
                                               dropout=dropout, dtype=policy, name=token_states.layer_name)
            setattr(self, token_states.attribute, layer)
        self.summary_layer = summary.layer(dtype=policy, name="summary_" + summary.layer.__name__.lower())
        initializer = lambda: summary.kernel_initializer(backbone)  # noqa: E731 (a new one per layer)
        self.head_dropout = None
        if summary.activation is not None:
            if summary.input_dropout:
                self.head_dropout = keras.layers.Dropout(dropout, dtype=policy, name="head_dropout")
            # Kept under the family's attribute name only: saved files place weights by attribute.
            setattr(self, summary.projection, keras.layers.Dense(
                backbone.hidden_dim, activation=summary.activation, kernel_initializer=initializer(),
                dtype=policy, name=summary.projection_name or summary.projection,
            ))
        self.output_dropout = None
        if summary.output_dropout:
            self.output_dropout = keras.layers.Dropout(dropout, dtype=policy, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            num_classes, kernel_initializer=initializer(), dtype=policy, name="logits"
        )

    def token_states(self, inputs):
        """`(outputs, padding_mask)`: the dict with `sequence_output` (+ the backbone's other outputs) and the
        real-token mask."""
        if self._token_states.layer is not None:
            char_ids = inputs["char_ids"]
            states = getattr(self, self._token_states.attribute)(char_ids)
            return {"sequence_output": states}, character_mask(char_ids)
        return self.backbone(inputs), inputs["padding_mask"]

    def _logits(self, inputs):
        outputs, padding_mask = self.token_states(inputs)
        x = self.summary_layer(outputs, padding_mask)
        if self.head_dropout is not None:
            x = self.head_dropout(x)
        if self._summary.activation is not None:
            x = getattr(self, self._summary.projection)(x)
        if self.output_dropout is not None:
            x = self.output_dropout(x)
        return self.output_dense(x)

    def get_config(self):
        config = keras_hub.models.Task.get_config(self)
        config.update({"num_classes": self.num_classes, "dropout": self.dropout})
        if self.problem_type != PROBLEM_TYPES[0]:
            config["problem_type"] = self.problem_type
        if self._token_states.layer is not None:
            config["trainable_backbone"] = self.trainable_backbone
        return config

    def _config(self):
        return {}

    def is_feature_dict(self, x):
        return "label" in x or "labels" in x

    def adapt_features(self, features):
        labels = features["label"] if "label" in features else features["labels"]
        return self.pick_inputs(features), labels, None

    def pick_inputs(self, features):
        """The task's inputs from a feature dict (any alias; missing segment / task ids are zeros)."""
        return pick_inputs(self.input, features)

    def default_optimizer(self):
        from keras_pretrain import families

        return families.family_of(self.backbone).default_fine_tuning_optimizer()

    def default_compile_args(self):
        return {"optimizer": self.default_optimizer(), "loss": problem_loss(self.problem_type),
                "metrics": problem_metrics(self.problem_type)}
