"""GPT fine-tuning: task heads on the extract token, L3 = L2 + lambda * L1."""

import keras
import keras_hub

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.folding import FoldSequences
from keras_pretrain.layers.initializers import normal_kernel_initializer
from keras_pretrain.layers.folding import UnfoldSequences
from keras_pretrain.layers.summaries import extract_token_state
from keras_pretrain.losses import PROBLEM_TYPES
from keras_pretrain.losses import problem_loss
from keras_pretrain.losses import problem_metrics
from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
from keras_pretrain.models.gpt.gpt_causal_lm import decoder_inputs
from keras_pretrain.models.gpt.gpt_causal_lm import lm_loss
from keras_pretrain.models.gpt.gpt_causal_lm import lm_targets
from keras_pretrain.models.gpt.gpt_inputs import TASKS
from keras_pretrain.models.gpt.gpt_inputs import pack_sequence  # noqa: F401 (re-exported)
from keras_pretrain.models.gpt.gpt_inputs import transform_inputs  # noqa: F401 (re-exported)
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.models.task import ones_like
from keras_pretrain.optimizers import AdamW

__all__ = ["FoldSequences", "UnfoldSequences", "ExtractTokenState", "GPTClassifier", "pack_sequence",
           "transform_inputs"]


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ExtractTokenState(keras.layers.Layer):
    """The hidden state of the extract token: the last real token of each row.

    `transform_inputs` always ends a sequence with the extract token and
    pads on the right, so its position is `sum(padding_mask) - 1`.
    """

    def call(self, hidden, padding_mask):
        return extract_token_state(hidden, padding_mask)

    def compute_output_shape(self, hidden_shape, padding_mask_shape):
        return (hidden_shape[0], hidden_shape[-1])


@keras.saving.register_keras_serializable(package="keras_pretrain")
class GPTClassifier(TaskMixin, keras_hub.models.TextClassifier):
    """GPT-1 fine-tuning with the auxiliary LM objective, for four task types.

    The input transformations of the paper (build them with
    `transform_inputs`): every sequence is `start ... extract`, and the
    classifier reads the final hidden state of the extract token.
    - `"classification"`: `start text extract`, inputs [B, T], logits
      [B, num_classes].
    - `"entailment"`: `start premise delimiter hypothesis extract`, as above.
    - `"similarity"`: both orders `start A delim B extract` and
      `start B delim A extract`, inputs [B, 2, T]; the two extract states
      are summed before the linear layer.
    - `"multiple_choice"`: `start context delim answer_k extract` for every
      answer, inputs [B, C, T]; a linear layer gives one score per choice and
      the softmax runs over the choices (logits [B, C]; `num_classes` is
      ignored).

    Outputs: dict with `logits` and `lm` (next-token logits over every
    sequence, [B, T, V] or [B, N, T, V]). Loss (compiled by default):
    L3 = L2 + lm_weight * L1, with L2 the cross-entropy of `logits` and L1
    the mean next-token loss over the real tokens of all sequences
    (`loss_weights={"logits": 1, "lm": lm_weight}`).

    `fit()` takes `(x, labels)` with `x` the decoder inputs (the LM targets
    are derived from `x`), or a dict with `token_ids`, `padding_mask` and a
    `label` / `labels` entry.

    Args:
        backbone: a `GPTBackbone` (its vocabulary must include the special
            tokens; see `expand_vocabulary`).
        num_classes: int (unused for "multiple_choice").
        task: one of "classification", "entailment", "similarity",
            "multiple_choice".
        lm_weight: float, lambda of L3 (0.5 in the paper).
        dropout: float, dropout before the linear layer (0.1).
        use_bias: bool, the linear layer's bias (False: transformers' `OpenAIGPTForSequenceClassification`
            `score`, which has none).
        preprocessor: optional preprocessor (`GPTPreprocessor`: strings -> the inputs of `transform_inputs`).

    Reference: Radford et al. 2018, sections 3.2 and 3.3.
    """

    backbone_cls = GPTBackbone
    preprocessor_cls = None  # `GPTPreprocessor`, set in the package (it imports `transform_inputs` from here)

    @property
    def serving_module(self):
        """The module that writes this task's serving SavedModel: the multiple-choice one for the double-heads
        task, the classifier's otherwise."""
        if self.task == "multiple_choice":
            return "keras_pretrain.tasks.multiple_choice.serving"
        return "keras_pretrain.tasks.classification.serving"

    def __init__(
        self,
        backbone,
        num_classes=2,
        task="classification",
        lm_weight=0.5,
        dropout=0.1,
        preprocessor=None,
        use_bias=True,
        problem_type="single_label_classification",
        **kwargs,
    ):
        if task not in TASKS:
            raise ConfigError(f"Unknown GPT task {task!r}; expected one of {TASKS}.")
        if problem_type not in PROBLEM_TYPES or (task == "multiple_choice" and problem_type != PROBLEM_TYPES[0]):
            raise ConfigError(f"problem_type {problem_type!r} does not apply to GPT task {task!r} "
                              f"(one of {PROBLEM_TYPES}; multiple choice is single-label).")
        self.problem_type = problem_type
        # === Config (needed by the default compile in the constructor) ===
        self.num_classes = num_classes
        self.task = task
        self.lm_weight = lm_weight
        self.dropout = dropout
        self.use_bias = use_bias

        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        multi = task in ("similarity", "multiple_choice")
        self.fold = FoldSequences(name="fold_sequences") if multi else None
        self.extract = ExtractTokenState(name="extract_token")
        self.unfold_states = self.unfold_lm = None
        if multi:
            self.unfold_states = UnfoldSequences(
                reduction="sum" if task == "similarity" else "squeeze",
                name="unfold_states",
            )
            self.unfold_lm = UnfoldSequences(name="unfold_lm")
        self.output_dropout = keras.layers.Dropout(
            dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )
        self.output_dense = keras.layers.Dense(
            1 if task == "multiple_choice" else num_classes,
            use_bias=use_bias,
            kernel_initializer=normal_kernel_initializer(
                getattr(backbone, "initializer_range", 0.02)
            ),
            dtype=backbone.dtype_policy,
            name="logits",
        )

        # === Functional Model ===
        shape = (None, None) if multi else (None,)
        if task == "similarity":
            shape = (2, None)
        token_ids = keras.Input(shape=shape, dtype="int32", name="token_ids")
        padding_mask = keras.Input(shape=shape, dtype="int32", name="padding_mask")
        flat_ids, flat_mask = token_ids, padding_mask
        if multi:
            flat_ids, flat_mask = self.fold(token_ids), self.fold(padding_mask)
        hidden = backbone({"token_ids": flat_ids, "padding_mask": flat_mask})[
            "sequence_output"
        ]
        lm = backbone.token_embedding(hidden, reverse=True)
        state = self.extract(hidden, flat_mask)
        if task == "multiple_choice":
            scores = self.output_dense(self.output_dropout(state))  # (B*C, 1)
            logits = self.unfold_states(scores, token_ids)  # (B, C)
        else:
            if task == "similarity":
                state = self.unfold_states(state, token_ids)
            logits = self.output_dense(self.output_dropout(state))
        if multi:
            lm = self.unfold_lm(lm, token_ids)
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"logits": logits, "lm": lm},
            **kwargs,
        )

    def _config(self):
        return {
            "num_classes": self.num_classes,
            "task": self.task,
            "lm_weight": self.lm_weight,
            "dropout": self.dropout,
            **({} if self.use_bias else {"use_bias": False}),
            **({} if self.problem_type == PROBLEM_TYPES[0] else {"problem_type": self.problem_type}),
        }

    def is_feature_dict(self, x):
        return "label" in x or "labels" in x

    def adapt_features(self, features):
        labels = features["label"] if "label" in features else features["labels"]
        return self._with_lm_targets(decoder_inputs(features), labels)

    def _with_lm_targets(self, x, labels):
        targets, weights = lm_targets(x)
        y = {"logits": labels, "lm": targets}
        per_example = labels if len(labels.shape) == 1 else labels[:, 0]  # multi-label / regression [B, C]
        sample_weight = {"logits": ones_like(per_example), "lm": weights}
        return x, y, sample_weight

    def preprocess_samples(self, x, y=None, sample_weight=None):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            super().preprocess_samples(x, y, sample_weight)
        )
        if y is not None and not isinstance(y, dict):
            if sample_weight is not None:
                raise ConfigError(
                    "GPTClassifier: pass sample weights as a dict "
                    "{'logits': ..., 'lm': ...}."
                )
            x, y, sample_weight = self._with_lm_targets(decoder_inputs(x), y)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def default_compile_args(self):
        return {
            "optimizer": AdamW(6.25e-5, weight_decay=0.01),
            "loss": {"logits": problem_loss(self.problem_type), "lm": lm_loss()},
            "weighted_metrics": {"logits": problem_metrics(self.problem_type)},
        }

    def compile(self, *args, loss_weights="auto", **kwargs):
        """As `Task.compile`; `loss_weights` defaults to {logits: 1, lm: lm_weight}."""
        if loss_weights == "auto":
            loss_weights = {"logits": 1.0, "lm": float(self.lm_weight)}
        super().compile(*args, loss_weights=loss_weights, **kwargs)
