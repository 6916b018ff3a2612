"""Module contracts: TF-Hub input / output names of each family, backend-neutral.

One object per contract (a `Contract`: `BERT`, `ROBERTA`, `GPT`, `XLNET`,
`ELMO`) maps a dict of TF-Hub style inputs to the backbone's inputs and its
outputs to the TF-Hub names, and writes the encoder SavedModel's endpoints. The same code runs in
the exported SavedModels (TensorFlow) and in `hub_modules.HubEncoder` (any
backend), so both give the same numbers.

Each family holds its contract object in `keras_pretrain.families` (`Family.contract`).

- `bert` (bert, albert, ernie): `input_word_ids`, `input_mask`,
  `input_type_ids` (+ optional `input_task_ids`, ERNIE 2.0 task embeddings;
  default task 0) -> `pooled_output`, `sequence_output`, `encoder_outputs`,
  `default` (= `pooled_output`).
- `roberta` (roberta, distil_bert): `input_word_ids`, `input_mask`
  (`input_type_ids` accepted and ignored: one token type) -> as `bert`;
  `pooled_output` is the pooler's when the backbone has one, else the first
  token's (`<s>` / `[CLS]`) hidden state (both are pretrained without one).
- `gpt`: `input_word_ids`, `input_mask` -> `logits` [B, T, V] (tied
  embeddings), `sequence_output`, `encoder_outputs`.
- `xlnet`: `input_word_ids`, `input_mask` (1 = real token, as TF-Hub's and
  the preprocessor's; the original XLNet code's `input_mask` is 1 = padding,
  so `XLNetBackbone` and the XLNet tasks refuse that name), `input_type_ids` (+ optional
  `mems` [B, L, M, H]) -> `sequence_output`, `default` (the last position,
  where XLNet inputs put `<cls>`), `mems` (the new memories [B, L, M', H]).
- `elmo`: `char_ids` [B, W + 2, 50] with `<S>` / `</S>`
  (`ElmoCharacterMapper`) -> `word_emb`, `lstm_outputs1` ... `lstm_outputs<L>`,
  `elmo`, `default`, `sequence_len`, boundaries removed (see `elmo_outputs`).

All integer inputs are [B, T] int32; masks are 1 for real tokens.
"""

import keras
from keras import ops

from keras_pretrain.export import tracing

TASK_IDS = "input_task_ids"


def input_names(backbone):
    """Names of a functional backbone's inputs (empty for subclassed ones: XLNet)."""
    try:
        return sorted(backbone.input)
    except (AttributeError, ValueError):
        return []


def has_mlm(model):
    return getattr(model, "masked_lm_head", None) is not None and hasattr(model, "backbone")


class Contract:
    """A TF-Hub module contract: input and output names, and the encoder SavedModel's endpoints.

    Attributes:
        name: the contract's name (written to metadata.json; code asks the object, never the name).
        required, optional: the TF-Hub inputs it needs, and those it accepts when present.
        backbone_inputs_needed: the backbone inputs it feeds (None: a subclassed backbone, not checked).
        mlm: a masked-LM pretrainer adds the `mlm` endpoint.
        segment_ids: `input_type_ids` reaches the backbone.
        trains_backbone: `hub_modules.load` trains the backbone by default (ELMo: only the mix).
        scalar_mix: the module holds a trainable `ScalarMix` (ELMo).
        serving_requires: what loading the serving SavedModel needs ("tensorflow_text" or "tensorflow").
        serving_takes_strings: the serving SavedModel takes strings (GPT's takes token ids).
    """

    name = "bert"
    required = ("input_word_ids", "input_mask", "input_type_ids")
    optional = (TASK_IDS,)
    backbone_inputs_needed = ("token_ids", "segment_ids", "padding_mask")
    mlm = True
    segment_ids = True
    trains_backbone = True
    scalar_mix = False
    serving_requires = "tensorflow_text"
    serving_takes_strings = True

    def __repr__(self):
        return f"{type(self).__name__}()"

    # --- backend-neutral: the SavedModels and `hub_modules.HubEncoder` --------

    def check_inputs(self, inputs):
        missing = [k for k in self.required if k not in inputs]
        if missing:
            raise KeyError(
                f"{self.name} module inputs: missing {missing}; got {sorted(inputs)} "
                f"(expected {list(self.required)}, optional {list(self.optional)})."
            )

    def missing_backbone_inputs(self, backbone):
        """The backbone inputs this contract feeds that `backbone` lacks ([] when it has them all)."""
        if self.backbone_inputs_needed is None:
            return []
        found = input_names(backbone)
        return [name for name in self.backbone_inputs_needed if name not in found]

    def backbone_inputs(self, backbone, inputs):
        """The backbone's input dict from TF-Hub named `inputs`."""
        self.check_inputs(inputs)
        token_ids = ops.cast(inputs["input_word_ids"], "int32")
        x = {"token_ids": token_ids, "padding_mask": ops.cast(inputs["input_mask"], "int32")}
        if self.segment_ids:
            x["segment_ids"] = ops.cast(inputs["input_type_ids"], "int32")
        if "task_type_ids" in input_names(backbone):
            task = inputs.get(TASK_IDS)
            x["task_type_ids"] = ops.zeros_like(token_ids) if task is None else ops.cast(task, "int32")
        return x

    def outputs(self, backbone, inputs, training=None, scalar_mix=None):
        """TF-Hub named outputs of `backbone` on TF-Hub named `inputs`.

        `encoder_outputs` stays a list (the SavedModel's `__call__` returns it so;
        signatures flatten it to `encoder_outputs_0`, ...).
        """
        outputs = backbone(self.backbone_inputs(backbone, inputs), training=training)
        sequence = outputs["sequence_output"]
        pooled = outputs.get("pooled_output")
        if pooled is None:  # RoBERTa / DistilBERT without a pooler
            pooled = sequence[:, 0, :]
        return {
            "pooled_output": pooled,
            "sequence_output": sequence,
            "encoder_outputs": list(outputs["encoder_outputs"]),
            "default": pooled,
        }

    def mlm_outputs(self, model, inputs, training=None):
        """`encoder_outputs` plus `mlm_logits` (and `<sentence>_logits`).

        `model` is a masked-LM pretrainer (`masked_lm_head`, optional
        `sentence_head`); `inputs` adds `masked_lm_positions` [B, P].
        """
        backbone = model.backbone
        outputs = backbone(self.backbone_inputs(backbone, inputs), training=training)
        sequence = outputs["sequence_output"]
        pooled = outputs.get("pooled_output")
        result = {
            "pooled_output": sequence[:, 0, :] if pooled is None else pooled,
            "sequence_output": sequence,
            "encoder_outputs": list(outputs["encoder_outputs"]),
        }
        result["default"] = result["pooled_output"]
        positions = ops.cast(inputs["masked_lm_positions"], "int32")
        result["mlm_logits"] = model.masked_lm_head(sequence, mask_positions=positions)
        sentence = getattr(model, "sentence_head", None)
        if sentence is not None and pooled is not None:
            name = getattr(model, "sentence_output", "sentence")
            result[f"{name}_logits"] = sentence(pooled)
        return result

    def module_scalar_mix(self, model, backbone, values=None):
        """The module's `ScalarMix` (None: the contract has none)."""
        return None

    # --- TensorFlow: the encoder SavedModel's endpoints (`export_encoder`) ----

    def signature_names(self):
        """The inputs of `serving_default`."""
        return list(self.required)

    def encoder_specs(self, tf, backbone):
        """Input structures `obj(...)` is traced for (the first: `serving_default`'s)."""
        names = self.signature_names()
        specs = [tracing.int_specs(tf, names)]
        if "task_type_ids" in input_names(backbone):
            specs.append(tracing.int_specs(tf, names + [TASK_IDS]))
        return specs

    def mlm_layers(self, model, backbone, include_mlm):
        """The layers of the `mlm` sub-object ([]: no such endpoint)."""
        if not (include_mlm and self.mlm and has_mlm(model)):
            return []
        layers = [backbone, model.masked_lm_head]
        if getattr(model, "sentence_head", None) is not None:
            layers.append(model.sentence_head)
        return layers

    def write_endpoints(self, tf, root, model, backbone, signatures, mlm_layers, scalar_mix=None):
        """`root.__call__` / `serve` and the signatures (+ `mlm` when `mlm_layers`)."""
        specs = self.encoder_specs(tf, backbone)

        def encode(inputs, training=False):
            return self.outputs(backbone, inputs, training=training)

        root.__call__, concrete = tracing.function(tf, encode, specs)
        root.serve = root.__call__  # `keras.layers.TFSMLayer`'s default endpoint
        signatures["serving_default"] = tracing.signature(tf, concrete[0], specs[0])
        self.extra_endpoints(tf, root, backbone, signatures, specs, concrete)
        if mlm_layers:
            spec = tracing.int_specs(tf, self.signature_names() + ["masked_lm_positions"])

            def mlm(inputs, training=False):
                return self.mlm_outputs(model, inputs, training=training)

            root.mlm = tf.train.Checkpoint()
            root.mlm.__call__, mlm_concrete = tracing.function(tf, mlm, [spec], training=False)
            root.serve_mlm = root.mlm.__call__
            signatures["mlm"] = tracing.signature(tf, mlm_concrete[0], spec)
            tracing.set_variables(root.mlm, mlm_layers)

    def extra_endpoints(self, tf, root, backbone, signatures, specs, concrete):
        """Endpoints beyond `serving_default` (GPT's `generate`, XLNet's `with_memories`)."""

    def trainable_layers(self, layers, scalar_mix):
        """The layers whose variables the module trains (None: every trainable one)."""
        return None


class RobertaContract(Contract):
    """RoBERTa / DistilBERT: no token types (`input_type_ids` accepted and ignored)."""

    name = "roberta"
    required = ("input_word_ids", "input_mask")
    optional = ("input_type_ids",)
    backbone_inputs_needed = ("token_ids", "padding_mask")
    segment_ids = False

    def signature_names(self):
        return list(self.required) + ["input_type_ids"]  # accepted (and ignored) in signatures

    def encoder_specs(self, tf, backbone):
        specs = super().encoder_specs(tf, backbone)
        specs.insert(1, tracing.int_specs(tf, self.required))
        return specs


class GPTContract(Contract):
    """GPT-1: `logits` over the (tied) vocabulary, and in-graph greedy generation."""

    name = "gpt"
    required = ("input_word_ids", "input_mask")
    optional = ()
    backbone_inputs_needed = ("token_ids", "padding_mask")
    mlm = False
    segment_ids = False
    serving_requires = "tensorflow"
    serving_takes_strings = False

    def outputs(self, backbone, inputs, training=None, scalar_mix=None):
        outputs = backbone(self.backbone_inputs(backbone, inputs), training=training)
        sequence = outputs["sequence_output"]
        return {
            "logits": backbone.token_embedding(sequence, reverse=True),
            "sequence_output": sequence,
            "encoder_outputs": list(outputs["encoder_outputs"]),
        }

    def extra_endpoints(self, tf, root, backbone, signatures, specs, concrete):
        inputs = [
            tf.TensorSpec([None, None], tf.int32, name="input_word_ids"),
            tf.TensorSpec([None, None], tf.int32, name="input_mask"),
            tf.TensorSpec([], tf.int32, name="max_length"),
        ]
        root.generate = tracing.tf_function(
            tf,
            lambda input_word_ids, input_mask, max_length: gpt_generate(
                tf, backbone, input_word_ids, input_mask, max_length
            ),
            input_signature=inputs,
        )
        signatures["generate"] = root.generate.get_concrete_function()


class XLNetContract(Contract):
    """XLNet: `default` is the last position (`<cls>`); memories in and out."""

    name = "xlnet"
    optional = ("mems",)
    backbone_inputs_needed = None  # a subclassed model: no symbolic inputs to check
    mlm = False

    def backbone_inputs(self, backbone, inputs):
        x = super().backbone_inputs(backbone, inputs)
        if inputs.get("mems") is not None:
            x["mems"] = inputs["mems"]  # stacked (B, L, M, H): the backbone splits it
        return x

    def outputs(self, backbone, inputs, training=None, scalar_mix=None):
        outputs = backbone(self.backbone_inputs(backbone, inputs), training=training)
        sequence = outputs["sequence_output"]
        return {
            "sequence_output": sequence,
            "default": sequence[:, -1, :],
            "mems": ops.stack(list(outputs["mems"]), axis=1),
        }

    def encoder_specs(self, tf, backbone):
        specs = super().encoder_specs(tf, backbone)
        with_mems = dict(specs[0])
        with_mems["mems"] = tf.TensorSpec(
            [None, backbone.num_layers, None, backbone.hidden_dim], tf.float32, name="mems"
        )
        return specs + [with_mems]

    def extra_endpoints(self, tf, root, backbone, signatures, specs, concrete):
        signatures["with_memories"] = tracing.signature(tf, concrete[-1], specs[-1])


class ElmoContract(Contract):
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
        from keras_pretrain.models.elmo import ElmoCharacterMapper
        from keras_pretrain.models.elmo.elmo_tokenizer import split_sentences

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


BERT = Contract()
ROBERTA = RobertaContract()
GPT = GPTContract()
XLNET = XLNetContract()
ELMO = ElmoContract()
CONTRACTS = {c.name: c for c in (BERT, ROBERTA, GPT, XLNET, ELMO)}


def get(contract):
    """The `Contract` object of `contract` (an object, or a name as metadata.json stores it)."""
    if isinstance(contract, Contract):
        return contract
    try:
        return CONTRACTS[contract]
    except KeyError:
        from keras_pretrain.errors import ConfigError

        raise ConfigError(f"unknown module contract {contract!r}; known: {sorted(CONTRACTS)}.") from None


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


def gpt_generate(tf, backbone, token_ids, padding_mask, max_length):
    """Greedy continuation of right-padded prompts to `max_length` tokens, in-graph.

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


def default_scalar_mix(backbone, weights=None, gamma=1.0):
    """ELMo's `ScalarMix` over the backbone's L + 1 layers (even mix by default)."""
    from keras_pretrain.models.elmo import ScalarMix

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
