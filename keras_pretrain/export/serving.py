"""What the task serving SavedModels share: the family's preprocessor of a model, the signature's inputs checked
when it runs, and the writing of the SavedModel.

Each task writes its own graph, in its folder: a sequence classifier's
(`keras_pretrain.tasks.classification.serving.export_serving`), a multiple-choice task's
(`keras_pretrain.tasks.multiple_choice.serving.export_choice_serving`), a token classifier's
(`keras_pretrain.tasks.token_classification.serving.export_tagging_serving`) and the span QA ones
(`keras_pretrain.tasks.question_answering.serving`). Their names are still read from here (`export_serving`,
`export_choice_serving`, `head_outputs`, `num_classes_of`, ...: imported from their task's folder when first used).
"""

from keras_pretrain import lazy
from keras_pretrain.export.tracing import set_variables
from keras_pretrain.export.tracing import tracing_context

# Names that moved to their task's folder (or live in the tasks' preprocessing), still importable from here
# (imported when first used: the task modules import this one).
_MOVED = {
    "elmo_words": "keras_pretrain.tasks.preprocessing",
    "OUTPUTS": "keras_pretrain.tasks.classification.serving",
    "PROBLEM_OUTPUTS": "keras_pretrain.tasks.classification.serving",
    "outputs_of": "keras_pretrain.tasks.classification.serving",
    "text_inputs": "keras_pretrain.tasks.classification.serving",
    "head_outputs": "keras_pretrain.tasks.classification.serving",
    "num_classes_of": "keras_pretrain.tasks.classification.serving",
    "export_serving": "keras_pretrain.tasks.classification.serving",
    "CHOICE_OUTPUTS": "keras_pretrain.tasks.multiple_choice.serving",
    "is_multiple_choice": "keras_pretrain.tasks.multiple_choice.serving",
    "choice_inputs": "keras_pretrain.tasks.multiple_choice.serving",
    "export_choice_serving": "keras_pretrain.tasks.multiple_choice.serving",
}


__getattr__ = lazy.attributes(__name__, _MOVED)


def is_classifier(model):
    """A fine-tuning head of ours (it has `num_classes` and a backbone)."""
    return hasattr(model, "num_classes") and hasattr(model, "backbone")


def preprocessor_of(model, tokenizer=None, family=None):
    """The family's text preprocessor (`keras_pretrain.tasks.preprocessing`) for `model` and `tokenizer`."""
    from keras_pretrain import families

    family = families.get(family) if family else families.family_of(model)
    return family.preprocessor_class(family, tokenizer)


def logits_of(outputs):
    """The logits of a head's outputs (a tensor, or a dict with `logits`)."""
    return outputs["logits"] if isinstance(outputs, dict) else outputs


def checked_inputs(tf, specs, tensors):
    """`tensors` (a signature's inputs), their shapes checked when the signature runs.

    A SavedModel signature does not check the shapes it is given: a `[1, 2]` string matrix passes a `[None]`
    input and comes back as 2 rows for 1 (a scalar as 1 row), and pair inputs of different lengths crash the
    tokenizer. `tf.ensure_shape` checks at run time (an assertion on the rank would be folded away, the traced
    rank being known): "Shape of tensor text [1,2] is not compatible with expected shape [?]". Inputs with a
    batch dimension must hold as many rows ("text_a and text_b must hold as many rows").
    """
    checked = [tf.ensure_shape(t, spec.shape) for t, spec in zip(tensors, specs)]
    batched = [(t, spec.name or f"input {i}") for i, (t, spec) in enumerate(zip(checked, specs)) if spec.shape.rank]
    if len(batched) < 2:
        return checked
    (first, name), rows = batched[0], tf.shape(batched[0][0])[0]
    asserts = [tf.debugging.assert_equal(rows, tf.shape(t)[0], message=f"{name} and {other} must hold as many rows")
               for t, other in batched[1:]]
    with tf.control_dependencies(asserts):
        return [tf.identity(t) for t in checked]


def save_serving_model(tf, root, model, serve, specs, path):
    """`serve` as the `serving_default` signature of a SavedModel at `path` holding `model`'s variables (its
    inputs' shapes checked when it runs: `checked_inputs`)."""
    set_variables(root, [model])

    def checked(*inputs):
        return serve(*checked_inputs(tf, specs, inputs))

    with tracing_context(tf):
        root.serve = tf.function(checked, input_signature=specs, autograph=False)
        signature = root.serve.get_concrete_function()
    tf.saved_model.save(root, path, signatures={"serving_default": signature})
    return path


_save = save_serving_model  # the old private name
