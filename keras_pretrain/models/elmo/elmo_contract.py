"""ELMo's TF-Hub contract: characters (or strings, in the SavedModel) in, the biLM layers and their mix out."""

import keras
from keras import ops

from keras_pretrain.export import contracts
from keras_pretrain.export import tracing
from keras_pretrain.models.elmo.elmo_layers import ScalarMix
from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper
from keras_pretrain.models.elmo.elmo_tokenizer import split_sentences


class ElmoContract(contracts.Contract):
    """ELMo: characters (or strings, in the SavedModel) in, the biLM layers and their trainable mix out."""

    name = "elmo"
    required = ("char_ids",)
    optional = ()
    backbone_inputs_needed = ("char_ids",)
    mlm = False
    trains_backbone = False
    scalar_mix = True

    def outputs(self, backbone, inputs, training=None, scalar_mix=None):
        self.check_inputs(inputs)
        return elmo_outputs(backbone, inputs["char_ids"], scalar_mix, training)

    def module_scalar_mix(self, model, backbone, values=None):
        """The model's own mix (an `ElmoEmbedder`'s), else one from `values` / an even one."""
        mix = getattr(model, "scalar_mix", None)
        if mix is not None and values is None:
            return mix
        values = values or {}
        return default_scalar_mix(backbone, values.get("weights"), values.get("gamma", 1.0))

    def mlm_layers(self, model, backbone, include_mlm):
        return []

    def trainable_layers(self, layers, scalar_mix):
        return [scalar_mix]  # as TF-Hub's ELMo, only the mix is trainable

    def write_endpoints(self, tf, root, model, backbone, signatures, mlm_layers, scalar_mix=None):
        mapper = ElmoCharacterMapper(max_characters=backbone.max_characters)

        def from_words(words, training=False):
            char_ids = mapper(words)
            return elmo_outputs(backbone, char_ids, scalar_mix, training=training)

        def strings_fn(strings, training=False):  # words as bilm-tf's `sentence.split()`
            return from_words(split_sentences(strings), training)

        def tokens_fn(tokens, sequence_len, training=False):
            words = tf.RaggedTensor.from_tensor(tokens, lengths=tf.cast(sequence_len, tf.int64))
            return from_words(words, training)

        strings = tf.TensorSpec([None], tf.string, name="strings")
        tokens = tf.TensorSpec([None, None], tf.string, name="tokens")
        lengths = tf.TensorSpec([None], tf.int32, name="sequence_len")
        root.__call__, concrete = tracing.function(tf, strings_fn, [strings])
        root.serve = root.__call__
        root.tokens = tracing.tf_function(tf, tokens_fn)
        tokens_concrete = root.tokens.get_concrete_function(tokens, lengths, training=False)
        default = tracing.tf_function(
            tf, lambda strings: concrete[0](strings, training=False), input_signature=[strings]
        ).get_concrete_function()
        signatures["default"] = default
        signatures["serving_default"] = default
        signatures["tokens"] = tracing.tf_function(
            tf,
            lambda tokens, sequence_len: tokens_concrete(tokens, sequence_len, training=False),
            input_signature=[tokens, lengths],
        ).get_concrete_function()


ELMO_CONTRACT = contracts.register(ElmoContract())


def elmo_outputs(backbone, char_ids, scalar_mix, training=None):
    """The ELMo hub module's outputs from char ids with sentence boundaries.

    As bilm-tf (and the TF-Hub ELMo module) the `<S>` / `</S>` positions are
    removed from every output: [B, W + 2, ...] -> [B, W, ...], zero past
    `sequence_len`; `elmo` is the scalar mix of the stripped layers and
    `default` its mean over the real tokens.
    """
    outputs = backbone({"char_ids": char_ids}, training=training)
    mask = outputs["padding_mask"]  # (B, W + 2), boundaries included
    sequence_len = ops.sum(mask, axis=1) - 2
    width = ops.shape(mask)[1] - 2
    real = ops.cast(ops.arange(width)[None, :] < sequence_len[:, None], "int32")

    def strip(x):
        return x[:, 1:-1] * ops.cast(real, x.dtype)[:, :, None]

    layers = [strip(x) for x in outputs["encoder_outputs"]]
    result = {"word_emb": strip(outputs["token_output"])}
    for i, layer in enumerate(layers[1:], start=1):
        result[f"lstm_outputs{i}"] = layer
    elmo = scalar_mix(layers, mask=real)
    count = ops.maximum(ops.cast(sequence_len, elmo.dtype), 1.0)[:, None]
    result["elmo"] = elmo
    result["default"] = ops.sum(elmo, axis=1) / count
    result["sequence_len"] = sequence_len
    return result


def default_scalar_mix(backbone, weights=None, gamma=1.0):
    """ELMo's `ScalarMix` over the backbone's L + 1 layers (even mix by default)."""
    mix = ScalarMix(
        backbone.num_layers + 1,
        initial_weights=weights,
        initial_gamma=gamma,
        dtype=backbone.dtype_policy,
        name="scalar_mix",
    )
    dim = 2 * backbone.hidden_dim
    mix.build([(None, None, dim)] * (backbone.num_layers + 1))
    return mix


def scalar_mix_values(mix):
    """(weights list, gamma) of a built `ScalarMix` (for metadata.json)."""
    weights = [float(v) for v in keras.ops.convert_to_numpy(mix.scalar_weights)]
    return weights, float(keras.ops.convert_to_numpy(mix.gamma))
