"""Module contracts: TF-Hub input / output names of each family, backend-neutral.

One object per contract (a `Contract`: `BERT`, `ROBERTA`, `XLNET` here; GPT's and ELMo's in their
family folders, `keras_pretrain/models/gpt/gpt_contract.py` and `models/elmo/elmo_contract.py`) maps a dict of TF-Hub style inputs to the backbone's inputs and its
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

from keras_pretrain import lazy
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


CONTRACTS = {}


def register(contract):
    """Adds a contract object to those `get` finds by name (a family's own contract registers itself)."""
    CONTRACTS[contract.name] = contract
    return contract


BERT = register(Contract())
ROBERTA = register(RobertaContract())
XLNET = register(XLNetContract())


def get(contract):
    """The `Contract` object of `contract` (an object, or a name as metadata.json stores it)."""
    if isinstance(contract, Contract):
        return contract
    if contract not in CONTRACTS:  # a family's own contract registers when its folder is imported
        from keras_pretrain import families

        families.import_all()
    try:
        return CONTRACTS[contract]
    except KeyError:
        from keras_pretrain.errors import ConfigError

        raise ConfigError(f"unknown module contract {contract!r}; known: {sorted(CONTRACTS)}.") from None


# Old names of the GPT and ELMo contracts and their helpers, which now live in their family folders.
_MOVED = {
    "GPT": "keras_pretrain.models.gpt.gpt_contract:GPT_CONTRACT",
    "GPTContract": "keras_pretrain.models.gpt.gpt_contract:GPTContract",
    "gpt_generate": "keras_pretrain.models.gpt.gpt_contract:gpt_generate",
    "ELMO": "keras_pretrain.models.elmo.elmo_contract:ELMO_CONTRACT",
    "ElmoContract": "keras_pretrain.models.elmo.elmo_contract:ElmoContract",
    "elmo_outputs": "keras_pretrain.models.elmo.elmo_contract:elmo_outputs",
    "default_scalar_mix": "keras_pretrain.models.elmo.elmo_contract:default_scalar_mix",
    "scalar_mix_values": "keras_pretrain.models.elmo.elmo_contract:scalar_mix_values",
}


__getattr__ = lazy.attributes(__name__, _MOVED)
