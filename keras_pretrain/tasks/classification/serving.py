"""The serving SavedModel of a sequence classifier: raw strings in, the classifier's outputs out, one graph.

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
refused when the signature runs, as are `text_a` and `text_b` of different lengths
(`keras_pretrain.export.serving.checked_inputs`).

A regression head (`problem_type="regression"`) returns `logits` [B, 1] and `scores` float32 [B]; a
multi-label head (`"multi_label_classification"`) returns `logits`, `probabilities` (sigmoid, per label),
`label_mask` int32 [B, C] (1 where the probability is at least `threshold`) and `labels`, string [B]: the
names of those labels joined by ",".

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
from keras_pretrain.export.serving import save_serving_model
from keras_pretrain.export.serving import logits_of
from keras_pretrain.export.serving import preprocessor_of
from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend

OUTPUTS = ("logits", "probabilities", "label_ids", "labels")
PROBLEM_OUTPUTS = {"regression": ("logits", "scores"),
                   "multi_label_classification": ("logits", "probabilities", "label_mask", "labels")}


def outputs_of(model):
    """The serving signature's output names for `model`'s problem type."""
    return PROBLEM_OUTPUTS.get(getattr(model, "problem_type", None), OUTPUTS)


def text_inputs(model, pair, family=None):
    """Names of the serving signature's inputs."""
    return preprocessor_of(model, family=family).serving_inputs(pair)


def num_classes_of(classifier):
    shape = classifier.output["logits"].shape if isinstance(classifier.output, dict) else classifier.output.shape
    return int(shape[-1])


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
        return head_outputs(tf, logits_of(classifier(x, training=False)), labels,
                            getattr(classifier, "problem_type", None), threshold)

    return save_serving_model(tf, root, classifier, serve, specs, path)


def write_from_spec(model, tokenizer, spec, family=None):
    """The serving SavedModel that `spec` (metadata.json's `serving` entry) describes (`export_serving`)."""
    return export_serving(model, spec["path"], tokenizer=tokenizer, labels=spec["labels"], pair=spec["pair"],
                          seq_length=spec["seq_length"], family=family, threshold=spec.get("threshold", 0.5))
