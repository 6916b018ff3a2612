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

from keras_pretrain.data.packing import pack_ragged
from keras_pretrain.data.packing import packing_of_family
from keras_pretrain.export import contracts
from keras_pretrain.export.preprocessors import _SPECIAL_NAMES
from keras_pretrain.export.preprocessors import _special_id
from keras_pretrain.export.savedmodel import ExportError
from keras_pretrain.export.savedmodel import _require_tensorflow_backend
from keras_pretrain.export.savedmodel import _variables
from keras_pretrain.export.savedmodel import tracing_context

OUTPUTS = ("logits", "probabilities", "label_ids", "labels")
ELMO_PAIR_SEPARATOR = "|||"
# `keras_pretrain.models.elmo.split_words` in RE2: each CJK ideograph and each
# punctuation mark is a word; runs of letters, digits and "_" are words.
_CJK = r"\x{3400}-\x{9fff}\x{f900}-\x{faff}"
_ELMO_KEEP = rf"[{_CJK}]|[^\p{{L}}\p{{N}}_\s]"
_ELMO_DELIMITERS = rf"\s+|{_ELMO_KEEP}"


def is_classifier(model):
    """A fine-tuning head of ours (it has `num_classes` and a backbone)."""
    return hasattr(model, "num_classes") and hasattr(model, "backbone")


def text_inputs(family, pair):
    """Names of the serving signature's inputs."""
    if family == "gpt":
        return ("token_ids", "padding_mask")
    return ("text_a", "text_b") if pair else ("text",)


def elmo_words(tf, texts):
    """Ragged words of each string, as `split_words` (in-graph)."""
    import tensorflow_text as tf_text

    return tf_text.regex_split(texts, _ELMO_DELIMITERS, _ELMO_KEEP)


def _logits(outputs):
    return outputs["logits"] if isinstance(outputs, dict) else outputs


def head_outputs(tf, logits, labels):
    logits = tf.cast(logits, tf.float32)
    label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    return {
        "logits": logits,
        "probabilities": tf.nn.softmax(logits, axis=-1),
        "label_ids": label_ids,
        "labels": tf.gather(tf.constant(labels, tf.string), label_ids),
    }


def export_serving(classifier, path, tokenizer=None, labels=None, pair=False, seq_length=128, family=None):
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

    Returns:
        `path`.
    """
    tf = _require_tensorflow_backend()
    family = family or contracts.family_of(classifier)
    backbone = classifier.backbone
    num_classes = num_classes_of(classifier)
    labels = [str(i) for i in range(num_classes)] if labels is None else [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ExportError(f"{type(classifier).__name__}: {num_classes} classes but {len(labels)} labels {labels}.")
    limit = getattr(backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise ExportError(f"seq_length {seq_length} exceeds the model's {limit} positions.")
    names = contracts.input_names(classifier)
    root = tf.train.Checkpoint()  # plain trackable (as the encoders)
    root.classifier = classifier
    if family == "gpt":
        specs = [tf.TensorSpec(classifier.input[n].shape, tf.int32, name=n) for n in text_inputs(family, pair)]

        def serve(token_ids, padding_mask):
            return head_outputs(tf, _logits(classifier({"token_ids": token_ids, "padding_mask": padding_mask},
                                                       training=False)), labels)
    else:
        specs = [tf.TensorSpec([None], tf.string, name=n) for n in text_inputs(family, pair)]
        encode = _elmo_encoder(tf, backbone, seq_length) if family == "elmo" else _text_encoder(
            tf, family, tokenizer, seq_length)
        root.tokenizer = tokenizer  # tracks its TF resources (vocabulary tables, SentencePiece model)

        def serve(*texts):
            x = encode(texts)
            if "task_type_ids" in names:  # ERNIE 2.0 task embeddings: task 0
                x["task_type_ids"] = tf.zeros_like(x["token_ids"])
            x = {name: x[name] for name in names}
            return head_outputs(tf, _logits(classifier(x, training=False)), labels)

    _variables(root, [classifier])
    with tracing_context(tf):
        root.serve = tf.function(serve, input_signature=specs, autograph=False)
        signature = root.serve.get_concrete_function()
    tf.saved_model.save(root, path, signatures={"serving_default": signature})
    return path


def num_classes_of(classifier):
    shape = classifier.output["logits"].shape if isinstance(classifier.output, dict) else classifier.output.shape
    return int(shape[-1])


def _text_encoder(tf, family, tokenizer, seq_length):
    if tokenizer is None or not hasattr(tokenizer, "get_vocabulary"):
        raise ExportError(f"{family}: serving strings needs the model's in-graph tokenizer; got {tokenizer!r}.")
    packing = packing_of_family(family)
    special = _SPECIAL_NAMES[packing]
    ids = {key: _special_id(tokenizer, *special[key]) for key in ("cls", "sep", "pad")}

    def tokenize(texts):
        result = tokenizer(texts)
        if not isinstance(result, tf.RaggedTensor):
            result = tf.RaggedTensor.from_tensor(result)
        return tf.cast(result, tf.int32)

    def encode(texts):  # as recipes.finetune packs for training
        return pack_ragged(tf, packing, [tokenize(t) for t in texts], seq_length, ids)

    return encode


def _elmo_encoder(tf, backbone, seq_length):
    from keras_pretrain.models.elmo import ElmoCharacterMapper

    mapper = ElmoCharacterMapper(max_characters=backbone.max_characters, sequence_length=seq_length)

    def encode(texts):
        words = [elmo_words(tf, t) for t in texts]
        if len(words) == 2:
            rows = words[0].nrows()
            separator = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), ELMO_PAIR_SEPARATOR))
            words = [tf.concat([words[0], separator, words[1]], axis=1)]
        return {"char_ids": mapper(words[0])}

    return encode
