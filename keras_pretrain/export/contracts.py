"""Module contracts: TF-Hub input / output names of each family, backend-neutral.

One function per contract maps a dict of TF-Hub style inputs to the
backbone's inputs and its outputs to the TF-Hub names. The same code runs in
the exported SavedModels (TensorFlow) and in `hub_modules.HubEncoder` (any
backend), so both give the same numbers.

Each family names its contract in `keras_pretrain.families`.

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

from keras_pretrain import families
from keras_pretrain.errors import ConfigError

TASK_IDS = "input_task_ids"
# Inputs each contract needs, and those it accepts when present.
REQUIRED_INPUTS = {
    "bert": ("input_word_ids", "input_mask", "input_type_ids"),
    "roberta": ("input_word_ids", "input_mask"),
    "gpt": ("input_word_ids", "input_mask"),
    "xlnet": ("input_word_ids", "input_mask", "input_type_ids"),
    "elmo": ("char_ids",),
}
OPTIONAL_INPUTS = {
    "bert": (TASK_IDS,),
    "roberta": ("input_type_ids",),
    "gpt": (),
    "xlnet": ("mems",),
    "elmo": (),
}


def family_of(model):
    """The family name of `model`'s backbone ("bert", "gpt", ...; "unknown" for none of ours)."""
    try:
        return families.family_of(model).name
    except ConfigError:
        return "unknown"


def input_names(backbone):
    """Names of a functional backbone's inputs (empty for subclassed ones: XLNet)."""
    try:
        return sorted(backbone.input)
    except (AttributeError, ValueError):
        return []


def contract_of(family):
    """The contract name of a family (ValueError for an unknown family)."""
    if family not in families.FAMILIES:
        raise ConfigError(f"No module contract for family {family!r}; known: {sorted(families.FAMILIES)}.")
    return families.get(family).contract


def _missing(contract, inputs):
    missing = [k for k in REQUIRED_INPUTS[contract] if k not in inputs]
    if missing:
        raise KeyError(
            f"{contract} module inputs: missing {missing}; got {sorted(inputs)} "
            f"(expected {list(REQUIRED_INPUTS[contract])}, optional "
            f"{list(OPTIONAL_INPUTS[contract])})."
        )


def backbone_inputs(contract, backbone, inputs):
    """The backbone's input dict from TF-Hub named `inputs`."""
    _missing(contract, inputs)
    token_ids = ops.cast(inputs["input_word_ids"], "int32")
    x = {"token_ids": token_ids, "padding_mask": ops.cast(inputs["input_mask"], "int32")}
    if contract in ("bert", "xlnet"):
        x["segment_ids"] = ops.cast(inputs["input_type_ids"], "int32")
    if "task_type_ids" in input_names(backbone):
        task = inputs.get(TASK_IDS)
        x["task_type_ids"] = (
            ops.zeros_like(token_ids) if task is None else ops.cast(task, "int32")
        )
    if contract == "xlnet" and inputs.get("mems") is not None:
        x["mems"] = inputs["mems"]  # stacked (B, L, M, H): the backbone splits it
    return x


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


def encoder_outputs(contract, backbone, inputs, training=None, scalar_mix=None):
    """TF-Hub named outputs of `backbone` on TF-Hub named `inputs`.

    `encoder_outputs` stays a list (the SavedModel's `__call__` returns it so;
    signatures flatten it to `encoder_outputs_0`, ...).
    """
    if contract == "elmo":
        _missing(contract, inputs)
        return elmo_outputs(backbone, inputs["char_ids"], scalar_mix, training)
    outputs = backbone(backbone_inputs(contract, backbone, inputs), training=training)
    sequence = outputs["sequence_output"]
    if contract == "gpt":
        return {
            "logits": backbone.token_embedding(sequence, reverse=True),
            "sequence_output": sequence,
            "encoder_outputs": list(outputs["encoder_outputs"]),
        }
    if contract == "xlnet":
        return {
            "sequence_output": sequence,
            "default": sequence[:, -1, :],
            "mems": ops.stack(list(outputs["mems"]), axis=1),
        }
    pooled = outputs.get("pooled_output")
    if pooled is None:  # RoBERTa / DistilBERT without a pooler
        pooled = sequence[:, 0, :]
    return {
        "pooled_output": pooled,
        "sequence_output": sequence,
        "encoder_outputs": list(outputs["encoder_outputs"]),
        "default": pooled,
    }


def mlm_outputs(contract, model, inputs, training=None):
    """`encoder_outputs` plus `mlm_logits` (and `<sentence>_logits`).

    `model` is a masked-LM pretrainer (`masked_lm_head`, optional
    `sentence_head`); `inputs` adds `masked_lm_positions` [B, P].
    """
    backbone = model.backbone
    outputs = backbone(backbone_inputs(contract, backbone, inputs), training=training)
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


def has_mlm(model):
    return getattr(model, "masked_lm_head", None) is not None and hasattr(model, "backbone")


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
