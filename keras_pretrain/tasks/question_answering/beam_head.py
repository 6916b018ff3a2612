"""SQuAD 2.0's answer-class head with a beam over start and end: XLNet's (xlnet-tensorflow
`function_builder.get_qa_outputs`, transformers' `XLNetForQuestionAnswering`) and ALBERT's v2 model (albert
`squad_utils.create_v2_model`, the same head with the class token first)."""

import keras
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.task import SubclassedTask
from keras_pretrain.models.task import pick_inputs
from keras_pretrain.tasks.question_answering.span_head import END
from keras_pretrain.tasks.question_answering.span_head import END_POSITIONS
from keras_pretrain.tasks.question_answering.span_head import START
from keras_pretrain.tasks.question_answering.span_head import START_POSITIONS
from keras_pretrain.tasks.question_answering.span_head import SpanLoss
from keras_pretrain.tasks.sequence_classifier import ENCODER_INPUTS

CLS = "cls_logits"
IS_IMPOSSIBLE = "is_impossible"
P_MASK, CLS_INDEX = "p_mask", "cls_index"
BEAM_OUTPUTS = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", CLS)
# Where each family's features put the class token when no `cls_index` input says (-1: the last position).
FAMILY_CLS_POSITION = {"xlnet": -1, "albert": 0}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BeamQuestionAnswering(SubclassedTask):
    """Span QA with an answer class (SQuAD 2.0) and a beam over start and end, as the XLNet and ALBERT authors.

    On the token states `h` `[B, T, H]` of the backbone, with `p_mask` `[B, T]` (1 = the token cannot be in
    an answer: question, separators, padding; float) masking a logit `x` as `x (1 - p) - 1e30 p`:

        start_log_probs = log_softmax(mask(start_logits.dense(h)))
        end_logits(s)   = mask(end_logits.dense_1(LayerNorm(tanh(end_logits.dense_0([h; s])))))
        cls_logits      = answer_class.dense_1(dropout(tanh(answer_class.dense_0([sum_t p_t h_t; h_cls]))))

    with `p = softmax(mask(start logits))` (the expected start state, in training too, as the authors' code;
    transformers' training loss reads the true start instead) and `h_cls` the state at `cls_index` (an input,
    else `cls_position`: XLNet's features have it last, ALBERT's first).

    Inference (inputs without `start_positions`): the top `start_n_top` starts, then for each the top
    `end_n_top` ends, as `get_qa_outputs`: `{"start_top_log_probs", "start_top_index"}` `[B, start_n_top]`,
    `{"end_top_log_probs", "end_top_index"}` `[B, start_n_top * end_n_top]` (start-major: entry
    `i * end_n_top + j` is the j-th end of the i-th start) and `cls_logits` `[B]`. These are log-probabilities,
    what the authors' `write_predictions` reads (`keras_pretrain.tasks.question_answering.predictions.write_predictions_beam`); transformers returns
    the probabilities under the same names, end-major.

    Training (inputs with `start_positions`, int `[B]`): the end logits read the true start (teacher forcing):
    `{"start_logits", "end_logits"}` `[B, T]` (masked) and `cls_logits`. The default loss is the authors':
    `0.5 (CE(start) + CE(end)) + 0.5 BCE(cls_logits, is_impossible)`. `fit()` takes a feature dict holding
    `start_positions`, `end_positions` and `is_impossible` (plus `p_mask`, optional `cls_index`) or `(x, y)`
    with `y` such a dict.

    Args:
        backbone: a backbone whose token states are its `sequence_output` (XLNet, ALBERT, ...).
        preprocessor: optional preprocessor.
        start_n_top, end_n_top: the beam (5 and 5 in both authors' scripts).
        cls_position: the class token's position when no `cls_index` is given (None: the family's, -1 for
            XLNet, 0 otherwise).
        dropout: on the answer-class feature (the authors' `dropout_prob` / `FLAGS.dropout`, 0.1).
    """

    # The module that writes this task's strings-in serving SavedModel (`write_from_spec`).
    serving_module = "keras_pretrain.tasks.question_answering.serving"

    def __init__(self, backbone, preprocessor=None, start_n_top=5, end_n_top=5, cls_position=None, dropout=0.1,
                 **kwargs):
        from keras_pretrain import families

        kwargs.pop("compile", None)
        family = families.family_of(backbone)
        if family.token_states.layer is not None or family.token_states.characters:
            raise ConfigError(f"BeamQuestionAnswering: {type(backbone).__name__} reads its token states through "
                              f"{family.token_states.layer} (not the backbone's sequence_output); not supported.")
        for name, value in (("start_n_top", start_n_top), ("end_n_top", end_n_top)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"BeamQuestionAnswering: {name} must be an int >= 1; got {value!r}.")
        if not isinstance(dropout, (int, float)) or not 0 <= dropout < 1:
            raise ConfigError(f"BeamQuestionAnswering: dropout must be a float in [0, 1); got {dropout!r}.")
        if cls_position is None:
            cls_position = FAMILY_CLS_POSITION.get(family.name, 0)
        super().__init__(compile=False, **kwargs)
        policy = backbone.dtype_policy
        hidden = backbone.hidden_dim
        init = family.summary.kernel_initializer(backbone)

        def dense(units, name, **options):
            return keras.layers.Dense(units, kernel_initializer=init, dtype=policy, name=name, **options)

        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.start_dense = dense(1, "start_logits")
        self.end_dense_0 = dense(hidden, "end_dense_0", activation="tanh")
        self.end_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, dtype=policy, name="end_layer_norm")
        self.end_dense_1 = dense(1, "end_dense_1")
        self.answer_dense_0 = dense(hidden, "answer_dense_0", activation="tanh")
        self.answer_dropout = keras.layers.Dropout(dropout, dtype=policy, name="answer_dropout")
        self.answer_dense_1 = dense(1, "answer_dense_1", use_bias=False)
        for layer, width in ((self.start_dense, hidden), (self.end_dense_0, 2 * hidden),
                             (self.end_layer_norm, hidden), (self.end_dense_1, hidden),
                             (self.answer_dense_0, 2 * hidden), (self.answer_dense_1, hidden)):
            layer.build((None, width))
        self.built = True
        # === Config ===
        self.start_n_top = start_n_top
        self.end_n_top = end_n_top
        self.cls_position = cls_position
        self.dropout = dropout
        self.compile()

    def _mask(self, logits, p_mask):
        big = 65500.0 if logits.dtype == "float16" else 1e30
        return logits * (1 - p_mask) - big * p_mask

    def _end_logits(self, states, start_states, p_mask, training):
        x = self.end_dense_0(ops.concatenate([states, start_states], axis=-1))
        x = self.end_dense_1(self.end_layer_norm(x))[..., 0]
        return self._mask(x, p_mask)

    def call(self, inputs, training=None):
        states = self.backbone({name: inputs[name] for name in ENCODER_INPUTS if name in inputs},
                               training=training)["sequence_output"]
        length = ops.shape(states)[1]
        p_mask = ops.cast(inputs[P_MASK], states.dtype)
        start_logits = self._mask(self.start_dense(states)[..., 0], p_mask)
        # The answer class: the expected start state and the class token's.
        if CLS_INDEX in inputs:
            cls_index = ops.cast(ops.reshape(inputs[CLS_INDEX], (-1,)), "int32")
            cls_state = ops.take_along_axis(states, cls_index[:, None, None], axis=1)[:, 0]
        else:
            cls_state = states[:, self.cls_position]
        start_p = ops.softmax(start_logits, axis=-1)
        start_feature = ops.einsum("bth,bt->bh", states, start_p)
        answer = self.answer_dense_0(ops.concatenate([start_feature, cls_state], axis=-1))
        cls_logits = self.answer_dense_1(self.answer_dropout(answer, training=training))[..., 0]
        if START_POSITIONS in inputs:  # training: the end reads the true start
            start = ops.cast(ops.reshape(inputs[START_POSITIONS], (-1,)), "int32")
            start_states = ops.take_along_axis(states, start[:, None, None], axis=1)
            start_states = ops.broadcast_to(start_states, ops.shape(states))
            end_logits = self._end_logits(states, start_states, p_mask, training)
            return {START: start_logits, END: end_logits, CLS: cls_logits}
        # Inference: the beam.
        start_log_probs = ops.log_softmax(start_logits, axis=-1)
        start_top_log_probs, start_top_index = ops.top_k(start_log_probs, self.start_n_top)
        top_states = ops.take_along_axis(states, start_top_index[..., None], axis=1)  # [B, K, H]
        shape = (ops.shape(states)[0], self.start_n_top, length, ops.shape(states)[-1])
        end_logits = self._end_logits(ops.broadcast_to(states[:, None], shape),
                                      ops.broadcast_to(top_states[:, :, None], shape),
                                      p_mask[:, None], training)  # [B, K, T]
        end_top_log_probs, end_top_index = ops.top_k(ops.log_softmax(end_logits, axis=-1), self.end_n_top)
        beam = (-1, self.start_n_top * self.end_n_top)
        return {"start_top_log_probs": start_top_log_probs, "start_top_index": start_top_index,
                "end_top_log_probs": ops.reshape(end_top_log_probs, beam),
                "end_top_index": ops.reshape(end_top_index, beam), CLS: cls_logits}

    def _config(self):
        return {"start_n_top": self.start_n_top, "end_n_top": self.end_n_top, "cls_position": self.cls_position,
                "dropout": self.dropout}

    def is_feature_dict(self, x):
        return START_POSITIONS in x and END_POSITIONS in x

    def adapt_features(self, features):
        x = pick_inputs(ENCODER_INPUTS, features)
        x[P_MASK] = features[P_MASK]
        x[START_POSITIONS] = features[START_POSITIONS]
        if CLS_INDEX in features:
            x[CLS_INDEX] = features[CLS_INDEX]
        y = {START: features[START_POSITIONS], END: features[END_POSITIONS]}
        y[CLS] = features[IS_IMPOSSIBLE] if IS_IMPOSSIBLE in features else features[START_POSITIONS] * 0
        return x, y, None

    def preprocess_samples(self, x, y=None, sample_weight=None):
        if isinstance(x, dict) and isinstance(y, dict) and START_POSITIONS in y:
            x, y = {**x, **y}, None  # the labels go in: the end logits read the true start
        return super().preprocess_samples(x, y, sample_weight)

    def default_optimizer(self):
        from keras_pretrain import families

        return families.family_of(self.backbone).default_fine_tuning_optimizer()

    def default_compile_args(self):
        return {"optimizer": self.default_optimizer(),
                "loss": {START: SpanLoss(), END: SpanLoss(), CLS: AnswerClassLoss()},
                "loss_weights": {START: 0.5, END: 0.5, CLS: 0.5}}

    def compile(self, optimizer="auto", loss="auto", *, loss_weights="auto", **kwargs):
        if loss_weights == "auto":
            loss_weights = self.default_compile_args()["loss_weights"] if loss == "auto" else None
        super().compile(optimizer=optimizer, loss=loss, loss_weights=loss_weights, **kwargs)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AnswerClassLoss(keras.losses.Loss):
    """The answer class's sigmoid cross-entropy on `cls_logits` `[B]` against `is_impossible` (0 / 1), the
    mean over the batch (the authors' `sigmoid_cross_entropy_with_logits`, reduced by `reduce_mean`)."""

    def __init__(self, name="answer_class_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        labels = ops.cast(ops.reshape(y_true, (-1,)), y_pred.dtype)
        logits = ops.reshape(y_pred, (-1,))
        return ops.mean(ops.relu(logits) - logits * labels + ops.log1p(ops.exp(-ops.abs(logits))))
