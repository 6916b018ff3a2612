"""Multiple choice for every family, written once: each (context, ending) pair through the backbone, one score
per choice, a softmax over the choices."""

import keras
import keras_hub

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.folding import FoldSequences
from keras_pretrain.layers.folding import UnfoldSequences
from keras_pretrain.losses import PROBLEM_TYPES
from keras_pretrain.tasks.classification.head import SequenceClassifier
from keras_pretrain.tasks.classification.head import task_inputs


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MultipleChoice(SequenceClassifier):
    """Chooses one of C endings of a context (SWAG, RACE, ARC, COPA), for any family.

    Each choice is one packed sequence (the family's pair `(context, ending)`: `TextPreprocessor.encode_choices`);
    the inputs are `[B, C, T]` (`token_ids`, `padding_mask`, and `segment_ids` / `task_type_ids` where the
    backbone takes them). They are folded to `[B * C, T]` (`keras_pretrain.layers.folding`), read by the family's
    token states and multiple-choice summary (`Family.multiple_choice_summary`: its sequence summary unless it
    declares another, as RoBERTa's pooler), given one score each by the output layer `Dense(1)` (`logits`) and
    unfolded to `[B, C]` logits:

        logits[b, c] = Dense(1)(dropout(projection(summary(token states of choice c of example b))))

    as transformers' `*ForMultipleChoice`. The head is `SequenceClassifier`'s (the same layers, under the same
    attribute names); only the input and output plumbing differ. `compile()` defaults to the softmax
    cross-entropy over the choices (labels: the index of the right choice, int [B]) and accuracy.

    Args:
        backbone: a backbone of any registered family whose token states are its `sequence_output` (ELMo's
            character inputs are not folded here).
        num_choices: int, or None for any number of choices (it may differ from batch to batch).
        preprocessor: optional keras-hub preprocessor mapping raw examples to the `[B, C, T]` inputs.
        dropout: float, or None for the family's default (`SequenceSummary.dropout`).

    `fit()` takes `(x, labels)`, or a feature dict with a `label` / `labels` entry (inputs by any of their
    usual names; missing segment / task ids are zeros). `keras_pretrain.tasks.multiple_choice.for_backbone`
    builds the family's multiple-choice task (GPT-1's is `GPTClassifier(task="multiple_choice")`).
    """

    # The module that writes this task's strings-in serving SavedModel (`write_from_spec`).
    serving_module = "keras_pretrain.tasks.multiple_choice.serving"

    def __init__(self, backbone, num_choices=None, preprocessor=None, dropout=None, **kwargs):
        from keras_pretrain import families

        family = families.family_of(backbone)
        summary, token_states = family.multiple_choice_summary, family.token_states
        if token_states.layer is not None or token_states.characters:
            raise ConfigError(f"MultipleChoice: {type(backbone).__name__} reads its token states through "
                              f"{token_states.layer} (not the backbone's sequence_output); not supported here.")
        if num_choices is not None and (not isinstance(num_choices, int) or num_choices < 1):
            raise ConfigError(f"MultipleChoice: num_choices must be a positive int or None; got {num_choices!r}.")
        dropout = summary.dropout if dropout is None else dropout
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self._summary, self._token_states = summary, token_states
        self.trainable_backbone = False
        self.problem_type = PROBLEM_TYPES[0]  # softmax cross-entropy (over the choices), before the compile
        self._make_head(backbone, 1, dropout, summary, token_states)
        self.fold = FoldSequences(name="fold_choices")
        self.unfold = UnfoldSequences(reduction="squeeze", name="unfold_choices")

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name)
                  for name in task_inputs(backbone, token_states)}
        scores = self._logits({name: self.fold(x) for name, x in inputs.items()})  # (B * C, 1)
        logits = self.unfold(scores, inputs["token_ids"])  # (B, C)
        super(SequenceClassifier, self).__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.num_choices = num_choices
        self.dropout = dropout

    def get_config(self):
        config = keras_hub.models.Task.get_config(self)
        config.update({"num_choices": self.num_choices, "dropout": self.dropout})
        return config


def for_backbone(backbone, **kwargs):
    """The family's multiple-choice task on `backbone` (`Family.multiple_choice`, with its options).

    `MultipleChoice(backbone, **kwargs)` for the encoder families; GPT-1's is its double-heads task,
    `GPTClassifier(backbone, task="multiple_choice", **kwargs)` (the auxiliary LM loss, `lm_weight`). `kwargs`
    are the task's own arguments. ConfigError for a family that declares none (ELMo).
    """
    from keras_pretrain import families

    family = families.family_of(backbone)
    if family.multiple_choice is None:
        raise ConfigError(f"{family.name}: the family declares no multiple-choice task (Family.multiple_choice).")
    return family.multiple_choice_class(backbone, **{**family.multiple_choice_options, **kwargs})
