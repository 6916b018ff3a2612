"""Span (extractive) question answering for the encoder families, written once: a start and an end logit per
token of the backbone's token states (SQuAD-style), as transformers' `*ForQuestionAnswering`."""

import keras
import keras_hub
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.models.task import pick_inputs
from keras_pretrain.tasks.sequence_classifier import task_inputs

START, END = "start_logits", "end_logits"  # the outputs (and the keys of the targets `fit` gets)
START_POSITIONS, END_POSITIONS = "start_positions", "end_positions"  # the labels, as transformers names them


@keras.saving.register_keras_serializable(package="keras_pretrain")
class SpanLoss(keras.losses.Loss):
    """transformers' span loss of one side: softmax cross-entropy over the T positions of the logits `[B, T]`,
    with the label positions `[B]` clamped to `[0, T]` and those at `T` (out of the sequence) ignored:

        mean over the examples whose position is in [0, T) of -log_softmax(logits)[position]

    (`CrossEntropyLoss(ignore_index=T)` after `clamp(0, T)`: NaN when every position of the batch is ignored,
    as there). The task's loss is the mean of its start and end losses (`loss_weights` 0.5 each).
    """

    def __init__(self, name="span_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        length = ops.shape(y_pred)[-1]
        positions = ops.reshape(ops.cast(y_true, "int32"), (-1,))
        positions = ops.clip(positions, 0, length)
        valid = ops.cast(ops.less(positions, length), y_pred.dtype)
        log_probs = ops.log_softmax(y_pred, axis=-1)
        picked = ops.take_along_axis(log_probs, ops.minimum(positions, length - 1)[:, None], axis=-1)[:, 0]
        return -ops.sum(picked * valid) / ops.sum(valid)  # a scalar: the reduction leaves it as it is


@keras.saving.register_keras_serializable(package="keras_pretrain")
class SpanQuestionAnswering(TaskMixin, keras_hub.models.Task):
    """Finds the answer span of a question in a passage (SQuAD), for the encoder families (BERT, ALBERT, RoBERTa,
    DistilBERT, ERNIE: any family whose token states are its backbone's `sequence_output`).

    The inputs are the family's packed pair `(question, passage)` `[B, T]` (`token_ids`, `padding_mask`, and
    `segment_ids` / `task_type_ids` where the backbone takes them). One layer `Dense(2)` (`qa_outputs`, as
    transformers' name) reads each token state:

        start_logits[b, t], end_logits[b, t] = qa_outputs(dropout(sequence_output[b, t]))

    two outputs `{"start_logits", "end_logits"}`, each `[B, T]`, not masked (padding and question positions
    keep their logits, as transformers' `*ForQuestionAnswering`; the span decoding chooses among the passage's
    tokens). Only DistilBERT's head has a dropout (`qa_dropout`); the others read the states directly.

    `compile()` defaults to transformers' loss: the mean of the start and end softmax cross-entropies over the
    positions (`SpanLoss`; a label out of the sequence is ignored). `fit()` takes `(x, y)` with `y` a dict
    `{"start_positions", "end_positions"}` (or `{"start_logits", "end_logits"}`) or a pair `(start, end)` of
    int `[B]`, or a feature dict holding `start_positions` and `end_positions` (inputs by any of their usual
    names; missing segment / task ids are zeros).

    Args:
        backbone: a backbone of a registered family whose token states are its `sequence_output`.
        preprocessor: optional keras-hub preprocessor mapping raw examples to the inputs.
        dropout: float, the dropout on the token states before `qa_outputs` (0: none, BERT's, ALBERT's,
            RoBERTa's and ERNIE's heads; DistilBERT's `qa_dropout` is 0.1; `for_backbone` sets the family's).
    """

    backbone_cls = None
    # The module that writes this task's strings-in serving SavedModel (`write_from_spec`).
    serving_module = "keras_pretrain.tasks.question_answering.serving"
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, dropout=0.0, **kwargs):
        from keras_pretrain import families

        family = families.family_of(backbone)
        summary, token_states = family.summary, family.token_states
        if token_states.layer is not None or token_states.characters:
            raise ConfigError(f"SpanQuestionAnswering: {type(backbone).__name__} reads its token states through "
                              f"{token_states.layer} (not the backbone's sequence_output); not supported here.")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ConfigError(f"SpanQuestionAnswering: dropout must be a float in [0, 1); got {dropout!r}.")
        policy = backbone.dtype_policy
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(dropout, dtype=policy, name="output_dropout") if dropout else None
        self.qa_outputs = keras.layers.Dense(2, kernel_initializer=summary.kernel_initializer(backbone),
                                             dtype=policy, name="qa_outputs")

        # === Functional Model ===
        inputs = task_inputs(backbone, token_states)
        x = backbone(inputs)["sequence_output"]
        if self.output_dropout is not None:
            x = self.output_dropout(x)
        logits = self.qa_outputs(x)  # (B, T, 2)
        outputs = {START: logits[..., 0], END: logits[..., 1]}
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.dropout = dropout

    def _config(self):
        return {"dropout": self.dropout}

    def is_feature_dict(self, x):
        return START_POSITIONS in x and END_POSITIONS in x

    def adapt_features(self, features):
        return pick_inputs(self.input, features), {START: features[START_POSITIONS], END: features[END_POSITIONS]}, None

    def preprocess_samples(self, x, y=None, sample_weight=None):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(super().preprocess_samples(x, y, sample_weight))
        return keras.utils.pack_x_y_sample_weight(x, span_targets(y), sample_weight)

    def default_optimizer(self):
        from keras_pretrain import families

        return families.family_of(self.backbone).default_fine_tuning_optimizer()

    def default_compile_args(self):
        return {"optimizer": self.default_optimizer(), "loss": {START: SpanLoss(), END: SpanLoss()},
                "loss_weights": {START: 0.5, END: 0.5}}

    def compile(self, optimizer="auto", loss="auto", *, loss_weights="auto", **kwargs):
        if loss_weights == "auto":
            loss_weights = self.default_compile_args()["loss_weights"] if loss == "auto" else None
        super().compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights, **kwargs)


def span_targets(y):
    """`{"start_logits", "end_logits"}` targets from transformers' label names or a `(start, end)` pair."""
    if y is None:
        return None
    if isinstance(y, dict):
        if START_POSITIONS in y or END_POSITIONS in y:
            return {START: y[START_POSITIONS], END: y[END_POSITIONS]}
        return y
    if isinstance(y, (tuple, list)) and len(y) == 2:
        return {START: y[0], END: y[1]}
    raise ConfigError("SpanQuestionAnswering: the labels are {'start_positions', 'end_positions'} (or a pair "
                      f"(start, end)) of int [B]; got {type(y).__name__}.")


# The families' head dropout (`qa_dropout`); the others have none.
FAMILY_DROPOUT = {"distil_bert": 0.1}


def for_backbone(backbone, **kwargs):
    """`SpanQuestionAnswering(backbone, **kwargs)` with the family's head dropout (DistilBERT's 0.1)."""
    from keras_pretrain import families

    name = families.family_of(backbone).name
    return SpanQuestionAnswering(backbone, **{"dropout": FAMILY_DROPOUT.get(name, 0.0), **kwargs})
