"""TF-Hub-style SavedModels (TF2 convention) for BERT-like encoders.

`export_encoder(model, path)` writes an encoder SavedModel:

- `obj(inputs)` with `inputs` a dict of `input_word_ids`, `input_mask`,
  `input_type_ids` (int32 [B, T]) returns a dict `pooled_output` [B, H],
  `sequence_output` [B, T, H], `encoder_outputs` (list, one [B, T, H] per
  layer) and `default` (= `pooled_output`).
- `obj.mlm(inputs)` (when `model` is a pretrainer) also takes
  `masked_lm_positions` [B, P] and adds `mlm_logits` [B, P, V] and, when the
  pretrainer has a sentence head, `<name>_logits` [B, 2] (`sop_logits` for
  ALBERT, `nsp_logits` for BERT).
- signatures `serving_default` (encoder; `encoder_outputs` flattened to
  `encoder_outputs_0`, ... since signatures return flat dicts) and `mlm`, so
  `saved_model_cli run` works; `serve` (= `obj.__call__`) and `serve_mlm`
  (= `obj.mlm`) are the endpoints for `keras.layers.TFSMLayer`.

`export_preprocessor(tokenizer, path, seq_length=128)` writes a preprocessor
SavedModel: `obj(strings)` -> the three encoder inputs [B, seq_length];
`obj.tokenize(strings)` -> ragged ids [B, (tokens)]; `obj.bert_pack_inputs(
[seg_a] or [seg_a, seg_b], seq_length=N)` -> encoder inputs packed as
`[CLS] A [SEP] (B [SEP])`, round-robin truncation; variables
`cls_id`, `sep_id`, `pad_id`, `mask_id`, `vocab_size`; and signatures
`serving_default` (one segment, input `text`), `pair` (`text_a`, `text_b`);
endpoint `serve` (= `obj.__call__`) for `keras.layers.TFSMLayer`.

The model may be any keras_pretrain backbone whose inputs are `token_ids`,
`segment_ids`, `padding_mask` and outputs `sequence_output`, `pooled_output`,
`encoder_outputs` (BERT, ALBERT, ...), or a pretrainer with `.backbone`,
`.masked_lm_head` and optionally `.sentence_head` / `.sentence_output`. The
tokenizer may be any keras-hub tokenizer with `cls`/`sep`/`pad` special
tokens (`BertTokenizer`, `AlbertTokenizer`).

Export runs on the TensorFlow backend (the SavedModel holds TF graphs);
under JAX or PyTorch these functions raise a clear error: run the export
(e.g. `python -m recipes.albert_to_savedmodel`) with KERAS_BACKEND=tensorflow.
"""

import keras

from keras_pretrain.errors import KerasPretrainError

# TF-Hub input name -> our input name.
TFHUB_INPUTS = {
    "input_word_ids": "token_ids",
    "input_mask": "padding_mask",
    "input_type_ids": "segment_ids",
}


class ExportError(KerasPretrainError, RuntimeError):
    """The model cannot be exported as asked (wrong backend, wrong model)."""


def _require_tensorflow_backend():
    if keras.config.backend() != "tensorflow":
        raise ExportError(
            "Writing a SavedModel needs the TensorFlow backend (found "
            f"KERAS_BACKEND={keras.config.backend()!r}). Run the export with "
            "KERAS_BACKEND=tensorflow, e.g. `KERAS_BACKEND=tensorflow python -m "
            "recipes.albert_to_savedmodel ...`; the model can be saved as "
            ".keras on any backend and reloaded there."
        )
    import tensorflow as tf

    return tf


def _split(model):
    """(backbone, masked_lm_head or None, sentence_head or None, sentence name)."""
    backbone = getattr(model, "backbone", model)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        if name not in backbone.input:
            raise ExportError(
                f"{type(backbone).__name__}: expected the inputs token_ids, "
                f"segment_ids, padding_mask; found {sorted(backbone.input)}."
            )
    head = getattr(model, "masked_lm_head", None)
    sentence = getattr(model, "sentence_head", None)
    return backbone, head, sentence, getattr(model, "sentence_output", "sentence")


def _ours(tf, inputs):
    return {
        ours: tf.cast(inputs[hub], "int32") for hub, ours in TFHUB_INPUTS.items()
    }


def export_encoder(model, path, include_mlm=True):
    """Writes `model` (backbone or pretrainer) as a TF-Hub TF2 encoder SavedModel.

    Args:
        model: a backbone, or a pretrainer (adds the `mlm` sub-object).
        path: the output folder.
        include_mlm: bool. Export the `mlm` sub-object when the model has a
            masked-LM head.
    """
    tf = _require_tensorflow_backend()
    backbone, head, sentence, sentence_name = _split(model)
    spec = {
        name: tf.TensorSpec([None, None], tf.int32, name=name)
        for name in TFHUB_INPUTS
    }
    mlm_spec = dict(spec)
    mlm_spec["masked_lm_positions"] = tf.TensorSpec(
        [None, None], tf.int32, name="masked_lm_positions"
    )

    def encode(inputs):
        outputs = backbone(_ours(tf, inputs), training=False)
        return {
            "pooled_output": outputs["pooled_output"],
            "sequence_output": outputs["sequence_output"],
            "encoder_outputs": list(outputs["encoder_outputs"]),
            "default": outputs["pooled_output"],
        }

    def flat(outputs):
        result = {k: v for k, v in outputs.items() if k != "encoder_outputs"}
        for i, x in enumerate(outputs["encoder_outputs"]):
            result[f"encoder_outputs_{i}"] = x
        return result

    root = tf.Module()
    # Track every variable (Keras 3 variables are tf.Variables on this backend).
    root.variables_ = [v.value for v in getattr(model, "weights", backbone.weights)]
    root.__call__ = tf.function(encode, input_signature=[spec])
    root.serve = root.__call__  # `keras.layers.TFSMLayer`'s default endpoint
    signatures = {
        "serving_default": tf.function(
            lambda inputs: flat(encode(inputs)), input_signature=[spec]
        ).get_concrete_function()
    }
    if include_mlm and head is not None:

        def mlm(inputs):
            outputs = backbone(_ours(tf, inputs), training=False)
            positions = tf.cast(inputs["masked_lm_positions"], "int32")
            result = {
                "pooled_output": outputs["pooled_output"],
                "sequence_output": outputs["sequence_output"],
                "encoder_outputs": list(outputs["encoder_outputs"]),
                "default": outputs["pooled_output"],
                "mlm_logits": head(
                    outputs["sequence_output"], mask_positions=positions
                ),
            }
            if sentence is not None:
                result[f"{sentence_name}_logits"] = sentence(
                    outputs["pooled_output"]
                )
            return result

        root.mlm = tf.Module()
        root.mlm.__call__ = tf.function(mlm, input_signature=[mlm_spec])
        root.serve_mlm = root.mlm.__call__
        signatures["mlm"] = tf.function(
            lambda inputs: flat(mlm(inputs)), input_signature=[mlm_spec]
        ).get_concrete_function()
    tf.saved_model.save(root, path, signatures=signatures)
    return path


def _special_id(tokenizer, *names):
    for name in names:
        value = getattr(tokenizer, f"{name}_token_id", None)
        if value is not None:
            return int(value)
    raise ExportError(
        f"{type(tokenizer).__name__}: no {names[0]} token id; the preprocessor "
        "needs cls, sep and pad tokens."
    )


def export_preprocessor(tokenizer, path, seq_length=128):
    """Writes a TF-Hub TF2 preprocessor SavedModel for `tokenizer`.

    Args:
        tokenizer: a keras-hub tokenizer (`BertTokenizer`, `AlbertTokenizer`)
            whose call maps a batch of strings to ragged ids, in-graph.
        path: the output folder.
        seq_length: int. Packed length of the default call (128 as TF-Hub).
    """
    tf = _require_tensorflow_backend()
    import tensorflow_text as tf_text

    cls_id = _special_id(tokenizer, "cls", "start")
    sep_id = _special_id(tokenizer, "sep", "end")
    pad_id = _special_id(tokenizer, "pad")
    try:
        mask_id = _special_id(tokenizer, "mask")
    except ExportError:
        mask_id = -1
    strings = tf.TensorSpec([None], tf.string)

    def tokenize(texts):
        ids = tokenizer(texts)
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        return tf.cast(ids, tf.int32)

    def pack(segments, length):
        segments = [
            s if isinstance(s, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(s)
            for s in segments
        ]
        segments = [
            tf.cast(s.merge_dims(1, -1) if s.ragged_rank > 1 else s, tf.int32)
            for s in segments
        ]
        length = tf.cast(length, tf.int32)
        # [CLS] A [SEP] (B [SEP]): trim round-robin to leave room for them.
        trimmed = tf_text.RoundRobinTrimmer(length - 1 - len(segments)).trim(segments)
        token_ids, segment_ids = tf_text.combine_segments(
            trimmed, start_of_sequence_id=cls_id, end_of_segment_id=sep_id
        )
        shape = tf.stack([token_ids.nrows(out_type=tf.int32), length])
        token_ids = token_ids.to_tensor(default_value=pad_id, shape=shape)
        segment_ids = segment_ids.to_tensor(default_value=0, shape=shape)
        return {
            "input_word_ids": tf.cast(token_ids, tf.int32),
            "input_mask": tf.cast(token_ids != pad_id, tf.int32),
            "input_type_ids": tf.cast(segment_ids, tf.int32),
        }

    root = tf.Module()
    root.tokenizer = tokenizer  # tracks the tokenizer's TF resources
    root.cls_id = tf.Variable(cls_id, trainable=False, name="cls_id")
    root.sep_id = tf.Variable(sep_id, trainable=False, name="sep_id")
    root.pad_id = tf.Variable(pad_id, trainable=False, name="pad_id")
    root.mask_id = tf.Variable(mask_id, trainable=False, name="mask_id")
    root.vocab_size = tf.Variable(
        int(tokenizer.vocabulary_size()), trainable=False, name="vocab_size"
    )
    root.seq_length = tf.Variable(seq_length, trainable=False, name="seq_length")
    root.__call__ = tf.function(
        lambda texts: pack([tokenize(texts)], seq_length), input_signature=[strings]
    )
    root.serve = root.__call__  # `keras.layers.TFSMLayer`'s default endpoint
    root.tokenize = tf.function(tokenize, input_signature=[strings])
    ragged = tf.RaggedTensorSpec([None, None], tf.int32)
    length = tf.TensorSpec([], tf.int32)

    @tf.function
    def bert_pack_inputs(segments, seq_length=seq_length):
        return pack(list(segments), seq_length)

    for segments in ([ragged], [ragged, ragged]):
        bert_pack_inputs.get_concrete_function(segments)  # default length
        bert_pack_inputs.get_concrete_function(segments, length)
    root.bert_pack_inputs = bert_pack_inputs
    pair = tf.function(
        lambda text_a, text_b: pack(
            [tokenize(text_a), tokenize(text_b)], seq_length
        ),
        input_signature=[
            tf.TensorSpec([None], tf.string, name="text_a"),
            tf.TensorSpec([None], tf.string, name="text_b"),
        ],
    )
    signatures = {
        "serving_default": tf.function(
            lambda text: pack([tokenize(text)], seq_length),
            input_signature=[tf.TensorSpec([None], tf.string, name="text")],
        ).get_concrete_function(),
        "pair": pair.get_concrete_function(),
    }
    tf.saved_model.save(root, path, signatures=signatures)
    return path
