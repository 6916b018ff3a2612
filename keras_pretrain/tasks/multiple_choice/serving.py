"""The serving SavedModel of a multiple-choice task: a context and its endings in, a score per ending out.

`export_choice_serving(model, path, tokenizer, seq_length)` writes it for a multiple-choice task
(`keras_pretrain.tasks.MultipleChoice`, or GPT-1's `GPTClassifier(task="multiple_choice")`): inputs `context`
string [B] and `endings` string [B, C] (any number of choices; each choice packed as the pair `(context,
ending)`, as `encode_choices` packs it for training), outputs `logits` float32 [B, C], `probabilities`
(softmax over the choices) and `choice` int32 [B] (argmax). GPT's takes `token_ids` and `padding_mask`
[B, C, T] as `transform_inputs("multiple_choice", ...)` builds them (its BPE has no in-graph implementation).

The string inputs are checked when the signature runs (`keras_pretrain.export.serving.checked_inputs`).
Tokenizing uses tensorflow-text ops: load `tensorflow_text` before `tf.saved_model.load`.
"""

from keras_pretrain.errors import ConfigError
from keras_pretrain.export.serving import save_serving_model
from keras_pretrain.export.serving import logits_of
from keras_pretrain.export.serving import preprocessor_of
from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend

CHOICE_OUTPUTS = ("logits", "probabilities", "choice")


def is_multiple_choice(model):
    """A multiple-choice task (`MultipleChoice`, or GPT-1's classifier with `task="multiple_choice"`)."""
    from keras_pretrain.tasks.multiple_choice.head import MultipleChoice

    return isinstance(model, MultipleChoice) or getattr(model, "task", None) == "multiple_choice"


def choice_inputs(model, family=None):
    """Names of a multiple-choice serving signature's inputs."""
    if preprocessor_of(model, family=family).takes_strings:
        return ("context", "endings")
    return ("token_ids", "padding_mask")


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
        specs = [tf.TensorSpec([None], tf.string, name="context"),
                 tf.TensorSpec([None, None], tf.string, name="endings")]
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
        logits = tf.cast(logits_of(model({name: x[name] for name in names}, training=False)), tf.float32)
        return {"logits": logits, "probabilities": tf.nn.softmax(logits, axis=-1),
                "choice": tf.argmax(logits, axis=-1, output_type=tf.int32)}

    return save_serving_model(tf, root, model, serve, specs, path)


def write_from_spec(model, tokenizer, spec, family=None):
    """The serving SavedModel that `spec` (metadata.json's `serving` entry) describes (`export_choice_serving`)."""
    return export_choice_serving(model, spec["path"], tokenizer=tokenizer, seq_length=spec["seq_length"], family=family)
