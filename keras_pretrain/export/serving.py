"""Serving SavedModels: raw strings in, a classifier's outputs out, one graph.

`export_serving(classifier, path, tokenizer, labels, pair, seq_length)`
writes a SavedModel whose `serving_default` signature takes a batch of
strings (`text`, or `text_a` and `text_b` for pairs), tokenizes and packs
them in-graph exactly as `recipes.finetune` does for training (the family's
format: `[CLS] A [SEP] B [SEP]`, RoBERTa's `<s> A </s></s> B </s>`, XLNet's
left-padded `A <sep> B <sep> <cls>`, ELMo's words `A ||| B` as characters;
segments trimmed round-robin to `seq_length`), runs the classifier and
returns:

- `logits` float32 [B, C]
- `probabilities` float32 [B, C] (softmax of `logits`)
- `label_ids` int32 [B] (argmax)
- `labels` string [B] (the label names; "0", "1", ... by default)

The string inputs are batches `[B]` (one string per example): any other shape (a `[1, 2]` matrix, a scalar) is
refused when the signature runs, as are `text_a` and `text_b` of different lengths (`checked_inputs`).

A regression head (`problem_type="regression"`) returns `logits` [B, 1] and `scores` float32 [B]; a
multi-label head (`"multi_label_classification"`) returns `logits`, `probabilities` (sigmoid, per label),
`label_mask` int32 [B, C] (1 where the probability is at least `threshold`) and `labels`, string [B]: the
names of those labels joined by ",".

`export_choice_serving(model, path, tokenizer, seq_length)` writes the same for a multiple-choice task
(`keras_pretrain.tasks.MultipleChoice`, or GPT-1's `GPTClassifier(task="multiple_choice")`): inputs `context`
string [B] and `endings` string [B, C] (any number of choices; each choice packed as the pair `(context,
ending)`, as `encode_choices` packs it for training), outputs `logits` float32 [B, C], `probabilities`
(softmax over the choices) and `choice` int32 [B] (argmax). GPT's takes `token_ids` and `padding_mask`
[B, C, T] as `transform_inputs("multiple_choice", ...)` builds them.

Write it to `NAME/1/` and TensorFlow Serving serves it as model `NAME`
(`tensorflow_model_server --model_name=NAME --model_base_path=/abs/NAME`).
Tokenizing uses tensorflow-text ops: load `tensorflow_text` before
`tf.saved_model.load` (TF Serving builds include them), as for TF-Hub's
preprocessors. Nothing else is needed: no keras, no keras_pretrain.

GPT-1's BPE has no in-graph implementation (see
`keras_pretrain.models.gpt.gpt_tokenizer`: `'</w>'` word ends, which
keras-hub's byte-level `BytePairTokenizer` cannot produce), so a GPT serving
model takes the classifier's own inputs, `token_ids` and `padding_mask` as
`keras_pretrain.models.gpt.transform_inputs` builds them, and returns the
same four outputs.
"""

from keras_pretrain.errors import ConfigError
from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend
from keras_pretrain.export.tracing import set_variables
from keras_pretrain.export.tracing import tracing_context
from keras_pretrain.tasks.preprocessing import elmo_words  # noqa: F401 (keras_pretrain.export.serving.elmo_words)

OUTPUTS = ("logits", "probabilities", "label_ids", "labels")
PROBLEM_OUTPUTS = {"regression": ("logits", "scores"),
                   "multi_label_classification": ("logits", "probabilities", "label_mask", "labels")}


def outputs_of(model):
    """The serving signature's output names for `model`'s problem type."""
    return PROBLEM_OUTPUTS.get(getattr(model, "problem_type", None), OUTPUTS)


CHOICE_OUTPUTS = ("logits", "probabilities", "choice")


def is_multiple_choice(model):
    """A multiple-choice task (`MultipleChoice`, or GPT-1's classifier with `task="multiple_choice"`)."""
    from keras_pretrain.tasks.multiple_choice import MultipleChoice

    return isinstance(model, MultipleChoice) or getattr(model, "task", None) == "multiple_choice"


def choice_inputs(model, family=None):
    """Names of a multiple-choice serving signature's inputs."""
    return ("context", "endings") if preprocessor_of(model, family=family).takes_strings else ("token_ids", "padding_mask")


def is_classifier(model):
    """A fine-tuning head of ours (it has `num_classes` and a backbone)."""
    return hasattr(model, "num_classes") and hasattr(model, "backbone")


def preprocessor_of(model, tokenizer=None, family=None):
    """The family's text preprocessor (`keras_pretrain.tasks.preprocessing`) for `model` and `tokenizer`."""
    from keras_pretrain import families

    family = families.get(family) if family else families.family_of(model)
    return family.preprocessor_class(family, tokenizer)


def text_inputs(model, pair, family=None):
    """Names of the serving signature's inputs."""
    return preprocessor_of(model, family=family).serving_inputs(pair)


def _logits(outputs):
    return outputs["logits"] if isinstance(outputs, dict) else outputs


def head_outputs(tf, logits, labels, problem_type=None, threshold=0.5):
    logits = tf.cast(logits, tf.float32)
    if problem_type == "regression":
        return {"logits": logits, "scores": logits[:, 0]}
    if problem_type == "multi_label_classification":
        probabilities = tf.sigmoid(logits)
        mask = probabilities >= threshold
        names = tf.where(mask, tf.constant(labels, tf.string)[tf.newaxis, :], "")
        joined = tf.strings.reduce_join(tf.ragged.boolean_mask(names, mask), axis=-1, separator=",")
        return {"logits": logits, "probabilities": probabilities, "label_mask": tf.cast(mask, tf.int32),
                "labels": joined}
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {
        "logits": logits,
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "label_ids": label_ids,
        "labels": tf.gather(tf.constant(labels, tf.string), label_ids),
    }


def export_serving(classifier, path, tokenizer=None, labels=None, pair=False, seq_length=128, family=None,
                   threshold=0.5):
    """Writes the serving SavedModel of `classifier` (see the module docstring).

    Args:
        classifier: a fine-tuned classifier of any family (`BertClassifier`,
            `AlbertClassifier`, ..., `GPTClassifier`, `ElmoClassifier`).
        path: the SavedModel folder (`NAME/1` for TensorFlow Serving).
        tokenizer: the in-graph tokenizer the classifier was trained with
            (none for ELMo, which reads characters, and GPT, which takes ids).
        labels: the label names, index = class id (default "0", "1", ...).
        pair: bool. Two strings per example (`text_a`, `text_b`).
        seq_length: int. Packed length (at most the model's positions).
        family: the family name; default from the backbone's class.
        threshold: float, multi-label heads: the probability from which a label is predicted.

    Returns:
        `path`.
    """
    from keras_pretrain.export import contracts

    tf = require_tensorflow_backend()
    backbone = classifier.backbone
    num_classes = num_classes_of(classifier)
    labels = [str(i) for i in range(num_classes)] if labels is None else [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ExportError(f"{type(classifier).__name__}: {num_classes} classes but {len(labels)} labels {labels}.")
    limit = getattr(backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise ExportError(f"seq_length {seq_length} exceeds the model's {limit} positions.")
    preprocessor = preprocessor_of(classifier, tokenizer, family)
    names = contracts.input_names(classifier)
    root = tf.train.Checkpoint()  # plain trackable (as the encoders)
    root.classifier = classifier
    specs = preprocessor.serving_specs(tf, classifier, pair)
    try:
        encode = preprocessor.serving_encoder(tf, backbone, seq_length)
    except ConfigError as e:
        raise ExportError(str(e)) from None
    root.tokenizer = preprocessor.tracked_resources()  # the tokenizer's TF resources (vocabulary tables, ...)

    def serve(*texts):
        x = encode(*texts)
        if "task_type_ids" in names:  # ERNIE 2.0 task embeddings: task 0
            x["task_type_ids"] = tf.zeros_like(x["token_ids"])
        x = {name: x[name] for name in names}
        return head_outputs(tf, _logits(classifier(x, training=False)), labels,
                            getattr(classifier, "problem_type", None), threshold)

    return _save(tf, root, classifier, serve, specs, path)


def export_choice_serving(model, path, tokenizer=None, seq_length=128, family=None):
    """Writes the serving SavedModel of a multiple-choice `model` (see the module docstring); returns `path`."""
    from keras_pretrain.export import contracts

    tf = require_tensorflow_backend()
    backbone = model.backbone
    limit = getattr(backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise ExportError(f"seq_length {seq_length} exceeds the model's {limit} positions.")
    preprocessor = preprocessor_of(model, tokenizer, family)
    names = contracts.input_names(model)
    root = tf.train.Checkpoint()
    root.model = model
    if preprocessor.takes_strings:
        specs = [tf.TensorSpec([None], tf.string, name="context"), tf.TensorSpec([None, None], tf.string, name="endings")]
        try:
            encode = preprocessor.serving_encoder(tf, backbone, seq_length)
        except ConfigError as e:
            raise ExportError(str(e)) from None
        root.tokenizer = preprocessor.tracked_resources()

        def inputs(context, endings):
            count = tf.shape(endings)[1]
            contexts = tf.reshape(tf.repeat(context[:, tf.newaxis], count, axis=1), [-1])
            flat = encode(contexts, tf.reshape(endings, [-1]))
            return {k: tf.reshape(v, [-1, count, seq_length]) for k, v in flat.items()}
    else:  # GPT-1: the ids of its input transformation
        specs = [tf.TensorSpec(model.input[n].shape, tf.int32, name=n) for n in ("token_ids", "padding_mask")]

        def inputs(token_ids, padding_mask):
            return {"token_ids": token_ids, "padding_mask": padding_mask}

    def serve(*args):
        x = inputs(*args)
        if "task_type_ids" in names:  # ERNIE 2.0 task embeddings: task 0
            x["task_type_ids"] = tf.zeros_like(x["token_ids"])
        logits = tf.cast(_logits(model({name: x[name] for name in names}, training=False)), tf.float32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
                "choice": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    return _save(tf, root, model, serve, specs, path)


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


def _save(tf, root, model, serve, specs, path):
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


def num_classes_of(classifier):
    shape = classifier.output["logits"].shape if isinstance(classifier.output, dict) else classifier.output.shape
    return int(shape[-1])
