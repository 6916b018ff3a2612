"""Encoder SavedModels with TF-Hub (TF2 reusable SavedModel) signatures.

`export_encoder(model, path)` writes the encoder of any family; what it takes
and returns is the family's contract (`keras_pretrain.export.contracts`):

- BERT-like (bert, albert, ernie) and RoBERTa-like (roberta, distil_bert):
  `obj(inputs, training=False)` with `inputs` a dict of `input_word_ids`,
  `input_mask`, `input_type_ids` (int32 [B, T]; RoBERTa / DistilBERT also
  accept the dict without `input_type_ids`, and ignore it; ERNIE with task
  embeddings also accepts `input_task_ids`) returns `pooled_output` [B, H],
  `sequence_output` [B, T, H], `encoder_outputs` (list, one [B, T, H] per
  layer) and `default` (= `pooled_output`). RoBERTa / DistilBERT have no
  pooler in pretraining: their `pooled_output` is the first token's (`<s>` /
  `[CLS]`) hidden state, unless the backbone was built with a pooler.
  `obj.mlm(inputs)` (when `model` is a pretrainer) also takes
  `masked_lm_positions` [B, P] and adds `mlm_logits` [B, P, V] and, when the
  pretrainer has a sentence head, `<name>_logits` [B, 2] (`sop_logits` for
  ALBERT, `nsp_logits` for BERT / ERNIE).
- GPT: `obj(inputs)` with `input_word_ids`, `input_mask` returns `logits`
  [B, T, V], `sequence_output`, `encoder_outputs`; `obj.generate(
  input_word_ids, input_mask, max_length)` continues right-padded prompts
  greedily, in-graph (`tf.while_loop` over the key/value cache), returning
  `output_ids` [B, max_length] (the prompt tokens kept).
- XLNet: `obj(inputs)` with `input_word_ids`, `input_mask`, `input_type_ids`
  and optionally `mems` (float [B, L, M, H], the previous segment's
  memories) returns `sequence_output`, `default` (the last position, where
  XLNet's inputs put `<cls>`) and `mems` (the new memories [B, L, M', H]).
- ELMo: `obj(strings)` (sentences, tokens separated by spaces) and
  `obj.tokens(tokens, sequence_len)` (a [B, T] string tensor padded with ""
  and the lengths), as the TF-Hub ELMo module, return `word_emb` [B, T, D],
  `lstm_outputs1` ... `lstm_outputs<L>` [B, T, 2D], `elmo` [B, T, 2D] (the
  module's trainable `ScalarMix` of the L + 1 layers), `default` [B, 2D]
  (mean of `elmo` over the tokens) and `sequence_len` [B]. Character ids and
  `<S>` / `</S>` are computed in-graph; the boundaries are removed from the
  outputs. Only the mix is trainable (as TF-Hub's ELMo).

`obj(..., training=True)` (dropout on) is traced for the contract's main
input dict (the strings for ELMo); `obj.mlm`, `obj.tokens`, `obj.generate`
and the other input structures are inference-only (training=False).

Every encoder object has `variables`, `trainable_variables` and
`regularization_losses` (so `tensorflow_hub.KerasLayer` can fine-tune it;
`obj.mlm` has its own lists, with the heads),
the endpoint `serve` (= `obj.__call__`, `keras.layers.TFSMLayer`'s default)
and signatures for `saved_model_cli` (flat dicts: `encoder_outputs` become
`encoder_outputs_0`, ...): `serving_default`, plus `mlm` (masked-LM
pretrainers), `generate` (GPT), `with_memories` (XLNet), `default` and
`tokens` (ELMo; `serving_default` = `default`).

Export runs on the TensorFlow backend (the SavedModel holds TF graphs);
under JAX or PyTorch these functions raise a clear error
(`hub_modules.export` runs them in a TensorFlow subprocess).
"""

import contextlib
import os

import keras

from keras_pretrain.errors import KerasPretrainError
from keras_pretrain.export import contracts

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
            "recipes.albert_to_savedmodel ...`, or use `hub_modules.export`, "
            "which does it in a subprocess; the model can be saved as .keras "
            "on any backend and reloaded there."
        )
    import tensorflow as tf

    return tf


def _check_inputs(backbone, contract):
    if contract == "xlnet":  # a subclassed model: no symbolic inputs to check
        return
    if contract == "elmo":
        expected = ("char_ids",)
    elif contract == "bert":
        expected = ("token_ids", "segment_ids", "padding_mask")
    else:
        expected = ("token_ids", "padding_mask")
    found = contracts.input_names(backbone)
    missing = [name for name in expected if name not in found]
    if missing:
        raise ExportError(
            f"{type(backbone).__name__}: the {contract!r} contract expects the "
            f"inputs {list(expected)}; found {found}."
        )


def _flat(outputs):
    """A signature's flat dict: list outputs become `name_0`, `name_1`, ..."""
    result = {}
    for key, value in outputs.items():
        if isinstance(value, (list, tuple)):
            for i, x in enumerate(value):
                result[f"{key}_{i}"] = x
        else:
            result[key] = value
    return result


def _tracked(layers, attribute="weights"):
    """Unique tf.Variables of `layers` (Keras 3 variables wrap them)."""
    seen, result = set(), []
    for layer in layers:
        for weight in getattr(layer, attribute):
            value = weight.value
            if id(value) not in seen:
                seen.add(id(value))
                result.append(value)
    return result


def _variables(obj, layers, trainable=None):
    """`variables`, `trainable_variables`, `regularization_losses` (TF-Hub reusable SavedModel)."""
    obj.variables = _tracked(layers)
    if trainable is None:
        obj.trainable_variables = [v for v in obj.variables if v.trainable]
    else:
        obj.trainable_variables = _tracked(trainable)
    # Dropout's seed generator states (used by the training=True traces).
    weights = {id(v) for v in obj.variables}
    obj.other_variables = [v for v in _tracked(layers, "variables") if id(v) not in weights]
    obj.regularization_losses = []


def _int_specs(tf, names):
    return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in names}


def _tf_function(tf, fn, **kwargs):
    # No autograph: our functions and Keras layers need none (tracing is faster).
    return tf.function(fn, autograph=False, **kwargs)


def tracing_context(tf):
    """Trace as `tf.saved_model.save` will (its default `SaveOptions`).

    `tf.function` caches traces per context, and `save` runs in a save
    context: functions traced outside it are traced a second time while
    saving. Tracing inside the same context halves the export time. Private
    TensorFlow API (pinned 2.21); without it, tracing is merely repeated.
    """
    try:
        from tensorflow.python.saved_model import save_context
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    if save_context.in_save_context():
        return contextlib.nullcontext()
    return save_context.save_context(tf.saved_model.SaveOptions())


def _function(tf, fn, specs, training=True):
    """A `tf.function` traced for each input structure, training=False.

    With `training`, the first structure (the contract's main one) is also
    traced with training=True (dropout on: fine-tuning through
    `tensorflow_hub.KerasLayer(..., trainable=True)`). Returns the function
    and its training=False concrete functions, one per structure, which the
    flat signatures call instead of tracing again.
    """
    function = _tf_function(tf, fn)
    concrete = []
    for i, spec in enumerate(specs):
        for mode in (False, True) if training and i == 0 else (False,):
            traced = function.get_concrete_function(spec, training=mode)
            if not mode:
                concrete.append(traced)
    return function, concrete


def _signature(tf, concrete, spec):
    """A flat-output signature calling an already traced function."""
    return _tf_function(
        tf, lambda inputs: _flat(concrete(inputs, training=False)), input_signature=[spec]
    ).get_concrete_function()


def export_encoder(model, path, include_mlm=True, family=None, scalar_mix=None, assets=()):
    """Writes `model` (backbone or task) as a TF-Hub TF2 encoder SavedModel.

    Args:
        model: a backbone, or a task with `.backbone` (a masked-LM pretrainer
            adds the `mlm` sub-object; an `ElmoEmbedder` gives its mix).
        path: the output folder.
        include_mlm: bool. Export the `mlm` sub-object when the model has a
            masked-LM head.
        family: the family name; default from the backbone's class.
        scalar_mix: ELMo only: the `ScalarMix` of the `elmo` output (default
            the model's own, else an even mix).
        assets: files copied into the SavedModel's `assets/` (GPT ships its
            `vocab.json` / `merges.txt` there: its BPE runs in Python only).
    """
    tf = _require_tensorflow_backend()
    family = family or contracts.family_of(model)
    try:
        contract = contracts.contract_of(family)
    except ValueError as e:
        raise ExportError(f"{type(model).__name__}: {e}") from None
    backbone = getattr(model, "backbone", model)
    _check_inputs(backbone, contract)
    root = tf.train.Checkpoint()  # plain trackable: list attributes allowed
    signatures = {}
    layers = [backbone]
    mlm_layers = []
    if contract == "elmo":
        scalar_mix = scalar_mix or getattr(model, "scalar_mix", None)
        if scalar_mix is None:
            scalar_mix = contracts.default_scalar_mix(backbone)
        layers.append(scalar_mix)
    elif include_mlm and contracts.has_mlm(model) and contract in ("bert", "roberta"):
        mlm_layers = [backbone, model.masked_lm_head]
        if getattr(model, "sentence_head", None) is not None:
            mlm_layers.append(model.sentence_head)
    with tracing_context(tf):
        if contract == "elmo":
            _elmo_endpoints(tf, root, backbone, scalar_mix, signatures)
        else:
            _encoder_endpoints(tf, root, contract, backbone, signatures)
            if mlm_layers:
                _mlm_endpoints(tf, root, contract, model, signatures)
                _variables(root.mlm, mlm_layers)
            if contract == "gpt":
                _gpt_endpoints(tf, root, backbone, signatures)
    # As TF-Hub's ELMo, only the mix is trainable.
    _variables(root, layers, trainable=[scalar_mix] if contract == "elmo" else None)
    root.asset_files = [tf.saved_model.Asset(os.fspath(p)) for p in assets]
    tf.saved_model.save(root, path, signatures=signatures)
    return path


def _encoder_endpoints(tf, root, contract, backbone, signatures):
    names = list(contracts.REQUIRED_INPUTS[contract])
    if contract == "roberta":
        names.append("input_type_ids")  # accepted (and ignored) in signatures
    specs = [_int_specs(tf, names)]
    if contract == "roberta":
        specs.append(_int_specs(tf, contracts.REQUIRED_INPUTS[contract]))
    if "task_type_ids" in contracts.input_names(backbone):
        specs.append(_int_specs(tf, names + [contracts.TASK_IDS]))
    if contract == "xlnet":
        with_mems = dict(specs[0])
        with_mems["mems"] = tf.TensorSpec(
            [None, backbone.num_layers, None, backbone.hidden_dim], tf.float32, name="mems"
        )
        specs.append(with_mems)

    def encode(inputs, training=False):
        return contracts.encoder_outputs(contract, backbone, inputs, training=training)

    root.__call__, concrete = _function(tf, encode, specs)
    root.serve = root.__call__  # `keras.layers.TFSMLayer`'s default endpoint
    signatures["serving_default"] = _signature(tf, concrete[0], specs[0])
    if contract == "xlnet":
        signatures["with_memories"] = _signature(tf, concrete[-1], specs[-1])


def _mlm_endpoints(tf, root, contract, model, signatures):
    names = list(contracts.REQUIRED_INPUTS[contract])
    if contract == "roberta":
        names.append("input_type_ids")
    spec = _int_specs(tf, names + ["masked_lm_positions"])

    def mlm(inputs, training=False):
        return contracts.mlm_outputs(contract, model, inputs, training=training)

    root.mlm = tf.train.Checkpoint()
    root.mlm.__call__, concrete = _function(tf, mlm, [spec], training=False)
    root.serve_mlm = root.mlm.__call__
    signatures["mlm"] = _signature(tf, concrete[0], spec)


# --- GPT: greedy generation over the key/value cache ------------------------


def gpt_generate(tf, backbone, token_ids, padding_mask, max_length):
    """Greedy continuation of right-padded prompts to `max_length` tokens.

    Each step is the model's own (`keras_pretrain.models.gpt.gpt_causal_lm.cached_step`).
    """
    from keras_pretrain.models.gpt.gpt_causal_lm import cached_step
    from keras_pretrain.models.gpt.gpt_causal_lm import empty_cache

    token_ids = tf.cast(token_ids, tf.int32)
    padding_mask = tf.cast(padding_mask, tf.int32)
    tf.debugging.assert_less_equal(
        max_length,
        tf.constant(backbone.max_sequence_length, tf.int32),
        message=f"max_length exceeds the model's {backbone.max_sequence_length} positions",
    )
    width = tf.shape(token_ids)[1]
    pad = tf.maximum(max_length - width, 0)
    ids = tf.pad(token_ids, [[0, 0], [0, pad]])[:, :max_length]
    keep = tf.pad(padding_mask, [[0, 0], [0, pad]])[:, :max_length] > 0
    cache = empty_cache(backbone, tf.shape(ids)[0], max_length, backbone.compute_dtype)
    _, _, cache = cached_step(backbone, ids, cache, 0)  # the prompts, in one pass
    start = tf.maximum(tf.reduce_min(tf.reduce_sum(tf.cast(keep, tf.int32), axis=1)), 1)
    positions = tf.range(max_length)[None, :]

    def body(index, ids, cache):
        logits, _, cache = cached_step(backbone, ids[:, index - 1 : index], cache, index - 1)
        chosen = tf.argmax(logits[:, 0, :], axis=-1, output_type=tf.int32)
        new = tf.where(keep[:, index], ids[:, index], chosen)
        ids = tf.where(positions == index, new[:, None], ids)
        return index + 1, ids, cache

    _, ids, _ = tf.while_loop(
        lambda index, ids, cache: index < max_length, body, (start, ids, cache)
    )
    return {"output_ids": ids}


def _gpt_endpoints(tf, root, backbone, signatures):
    specs = [
        tf.TensorSpec([None, None], tf.int32, name="input_word_ids"),
        tf.TensorSpec([None, None], tf.int32, name="input_mask"),
        tf.TensorSpec([], tf.int32, name="max_length"),
    ]
    root.generate = _tf_function(
        tf,
        lambda input_word_ids, input_mask, max_length: gpt_generate(
            tf, backbone, input_word_ids, input_mask, max_length
        ),
        input_signature=specs,
    )
    signatures["generate"] = root.generate.get_concrete_function()


# --- ELMo: strings in -------------------------------------------------------


def _elmo_endpoints(tf, root, backbone, scalar_mix, signatures):
    from keras_pretrain.models.elmo import ElmoCharacterMapper

    mapper = ElmoCharacterMapper(max_characters=backbone.max_characters)

    def from_words(words, training=False):
        char_ids = mapper(words)
        return contracts.elmo_outputs(backbone, char_ids, scalar_mix, training=training)

    def strings_fn(strings, training=False):
        return from_words(tf.strings.split(strings), training)

    def tokens_fn(tokens, sequence_len, training=False):
        words = tf.RaggedTensor.from_tensor(tokens, lengths=tf.cast(sequence_len, tf.int64))
        return from_words(words, training)

    strings = tf.TensorSpec([None], tf.string, name="strings")
    tokens = tf.TensorSpec([None, None], tf.string, name="tokens")
    lengths = tf.TensorSpec([None], tf.int32, name="sequence_len")
    root.__call__, concrete = _function(tf, strings_fn, [strings])
    root.serve = root.__call__
    root.tokens = _tf_function(tf, tokens_fn)
    tokens_concrete = root.tokens.get_concrete_function(tokens, lengths, training=False)
    default = _tf_function(
        tf, lambda strings: concrete[0](strings, training=False), input_signature=[strings]
    ).get_concrete_function()
    signatures["default"] = default
    signatures["serving_default"] = default
    signatures["tokens"] = _tf_function(
        tf,
        lambda tokens, sequence_len: tokens_concrete(tokens, sequence_len, training=False),
        input_signature=[tokens, lengths],
    ).get_concrete_function()

