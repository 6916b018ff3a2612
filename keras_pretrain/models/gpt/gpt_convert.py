"""Weight-name maps for GPT-1: OpenAI's original release and the Hugging Face layout -> ours.

Hugging Face `openai-gpt` names: `tokens_embed`, `positions_embed`,
`h.{i}.attn.c_attn` (q, k, v stacked on the output axis), `h.{i}.attn.c_proj`,
`h.{i}.ln_1`, `h.{i}.mlp.c_fc`, `h.{i}.mlp.c_proj`, `h.{i}.ln_2`, with a
`transformer.` prefix inside the LM / double-heads models. These are `Conv1D`
layers whose weight is already [in, out] (the layout of a Keras `Dense`
kernel): they are NOT transposed, unlike PyTorch `Linear` weights.

OpenAI's release (github.com/openai/finetune-transformer-lm, folder `model/`)
stores no names: `params_shapes.json` lists the shapes and `params_0.npy` ...
`params_9.npy` hold one flat float32 array cut in ten. Concatenated and split
at the shapes' cumulative sizes it gives, in order, the position table
[n_ctx, d], the token table [V, d], then for each block `model/h{i}/` the 12
arrays `attn/c_attn/w` [1, d, 3d], `attn/c_attn/b`, `attn/c_proj/w` [1, d, d],
`attn/c_proj/b`, `ln_1/g`, `ln_1/b`, `mlp/c_fc/w` [1, d, 4d], `mlp/c_fc/b`,
`mlp/c_proj/w` [1, 4d, d], `mlp/c_proj/b`, `ln_2/g`, `ln_2/b` (the order of the
original `train.py` graph's trainable variables). The `w` are the same
`Conv1D` weights as Hugging Face's with a leading axis of 1: both layouts
share one placing function (`load_decoder_block`), with their own names.
"""

import glob
import json
import os
import re
import tempfile

import keras
import numpy as np

from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import find_file
from keras_pretrain.checkpoints.names import hf_prefix as model_prefix
from keras_pretrain.checkpoints.weights import WeightLoader
from keras_pretrain.checkpoints.weights import columns
from keras_pretrain.checkpoints.weights import then
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.huggingface_export import bpe_files
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models.block_weights import load_layer_norm

# transformers' OpenAIGPT `ACT_FNS`: its "gelu" is `gelu_new`, the tanh form.
OPENAI_GPT_ACTIVATIONS = {
    "gelu": "gelu_approximate",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}

GPT_CONFIG_KEYS = ("vocab_size", "n_positions", "n_embd", "n_layer", "n_head")


def backbone_config(config, source):
    """An HF `openai-gpt` config dict -> `GPTBackbone` kwargs."""
    require(config, GPT_CONFIG_KEYS, source)
    dropouts = {config.get(k, 0.1) for k in ("embd_pdrop", "attn_pdrop", "resid_pdrop")}
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["n_layer"],
        "num_heads": config["n_head"],
        "hidden_dim": config["n_embd"],
        "intermediate_dim": 4 * config["n_embd"],  # fixed in the HF port
        "dropout": max(dropouts),
        "max_sequence_length": config["n_positions"],
        "activation": translate_activation(
            config.get("afn", "gelu"), OPENAI_GPT_ACTIVATIONS, source
        ),
        "layer_norm_epsilon": config.get("layer_norm_epsilon", 1e-5),
        "initializer_range": config.get("initializer_range", 0.02),
    }


def _split(part, hidden_dim):
    """Column block `part` (0 q, 1 k, 2 v) of a stacked c_attn array (invertible: exports stack them back)."""
    return columns(part, hidden_dim, 3)


# The parts of one GPT-1 block, by their relative names in both layouts.
BLOCK_PARTS = ("attn/c_attn", "attn/c_proj", "ln_1", "mlp/c_fc", "mlp/c_proj", "ln_2")


def hf_block_names(prefix):
    """{part: (weight name, bias name)} of the HF block under `prefix` (`h.3.`)."""
    return {part: HF.dense(prefix, part) for part in BLOCK_PARTS}


def openai_block_names(prefix):
    """{part: (w or g name, b name)} of the original block under `prefix` (`model/h3/`)."""
    return {
        part: (prefix + part + ("/g" if part.startswith("ln") else "/w"), prefix + part + "/b")
        for part in BLOCK_PARTS
    }


def load_decoder_block(loader, layer, names, hidden_dim, kernel=None):
    """keras-hub `TransformerDecoder` (no cross-attention) from one GPT-1 block.

    Args:
        loader: the `WeightLoader`.
        layer: the decoder block.
        names: {part: (weight, bias) names} for `BLOCK_PARTS`
            (`hf_block_names` or `openai_block_names`).
        hidden_dim: the model width (to split the stacked q, k, v).
        kernel: the transform of the dense weights into [in, out] (None:
            already so, as HF `Conv1D` weights are).
    """
    attention = layer._self_attention_layer
    weight, bias = names["attn/c_attn"]
    for part, dense in enumerate(
        (attention._query_dense, attention._key_dense, attention._value_dense)
    ):
        split = _split(part, hidden_dim)
        loader.assign(dense.kernel, weight, then(kernel, split), reshape=True)
        loader.assign(dense.bias, bias, split, reshape=True)
    weight, bias = names["attn/c_proj"]
    loader.assign(attention._output_dense.kernel, weight, kernel, reshape=True)
    loader.assign(attention._output_dense.bias, bias)
    load_layer_norm(loader, layer._self_attention_layer_norm, *names["ln_1"])
    load_dense(loader, layer._feedforward_intermediate_dense, *names["mlp/c_fc"], kernel)
    load_dense(loader, layer._feedforward_output_dense, *names["mlp/c_proj"], kernel)
    load_layer_norm(loader, layer._feedforward_layer_norm, *names["ln_2"])


def hf_prefix(loader):
    """'transformer.' when the state dict comes from an LM / heads model."""
    return model_prefix(loader, "transformer.", probe="positions_embed.weight")


def load_hf_backbone(backbone, loader):
    p = hf_prefix(loader)
    # Tied weights are stored once: some heads models keep only `lm_head.weight`.
    tokens = loader.first_present(p + "tokens_embed.weight", "lm_head.weight")
    loader.assign(backbone.token_embedding.embeddings, tokens)
    loader.assign(backbone.position_embedding.position_embeddings, p + "positions_embed.weight")
    for i, layer in enumerate(backbone.transformer_layers):
        load_decoder_block(loader, layer, hf_block_names(f"{p}h.{i}."), backbone.hidden_dim)


def load_hf_multiple_choice_head(classifier, loader):
    """The double-heads `multiple_choice_head.summary` Linear(hidden, 1)."""
    load_dense(loader, classifier.output_dense, *HF.dense("", "multiple_choice_head/summary"), HF.linear)


def load_hf_classifier(classifier, loader):
    """Backbone plus the double-heads `multiple_choice_head.summary` Linear."""
    load_hf_backbone(classifier.backbone, loader)
    load_hf_multiple_choice_head(classifier, loader)


def check_double_heads(config, path):
    if config.get("summary_activation") not in (None, "", "linear") or not config.get("summary_use_proj", True):
        raise ConfigError(
            f"{path}: only the default multiple-choice summary (a linear projection, "
            f"no activation) is supported; found summary_activation="
            f"{config.get('summary_activation')!r}, summary_use_proj={config.get('summary_use_proj')!r}."
        )


def build_multiple_choice(backbone, config, path, lm_weight=0.5):
    """`OpenAIGPTDoubleHeadsModel` -> `GPTClassifier(task="multiple_choice")` (reads the last real token)."""
    from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier

    check_double_heads(config, path)
    return GPTClassifier(backbone, task="multiple_choice", lm_weight=lm_weight,
                         dropout=config.get("summary_first_dropout", 0.1))


def to_hf_config(backbone):
    if backbone.intermediate_dim != 4 * backbone.hidden_dim:
        raise ExportError(f"GPTBackbone(intermediate_dim={backbone.intermediate_dim}): transformers' OpenAIGPT "
                          f"fixes it at 4 * hidden_dim ({4 * backbone.hidden_dim}).")
    activations = {ours: theirs for theirs, ours in reversed(list(OPENAI_GPT_ACTIVATIONS.items()))}
    return {
        "vocab_size": backbone.vocabulary_size, "n_positions": backbone.max_sequence_length,
        "n_embd": backbone.hidden_dim, "n_layer": backbone.num_layers, "n_head": backbone.num_heads,
        "afn": hf_activation(backbone.activation, "GPT activation", activations),
        "embd_pdrop": backbone.dropout, "attn_pdrop": backbone.dropout, "resid_pdrop": backbone.dropout,
        "layer_norm_epsilon": backbone.layer_norm_epsilon, "initializer_range": backbone.initializer_range,
    }


def double_heads_config(classifier):
    return {"summary_type": "cls_index", "summary_use_proj": True, "summary_activation": None,
            "summary_proj_to_labels": True, "summary_first_dropout": classifier.dropout, "num_labels": 1}


def load_hf_score_head(classifier, loader):
    """`OpenAIGPTForSequenceClassification`'s `score`: Linear(hidden, num_labels), no bias."""
    loader.assign(classifier.output_dense.kernel, "score.weight", HF.linear)


def build_classification(backbone, config, path):
    """`OpenAIGPTForSequenceClassification` -> `GPTClassifier(task="classification", use_bias=False)`: the
    last real token (transformers: the last one that is not `pad_token_id`), no dropout before `score`."""
    from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier

    count, problem = conversion.num_labels(config, path)
    if problem != "single_label_classification":
        raise ConfigError(f"{path}: problem_type {problem!r}: GPTClassifier is a single-label classifier.")
    return GPTClassifier(backbone, num_classes=count, task="classification", use_bias=False, dropout=0.0)


def classification_config(classifier):
    """`num_labels` and `pad_token_id` 0 (the id `transform_inputs` pads with: transformers then reads the
    last real token, the extract token, as ours does). A classifier with a bias has no transformers form."""
    bias = classifier.output_dense.bias
    if bias is not None and np.any(keras.ops.convert_to_numpy(bias) != 0):
        raise ExportError("GPTClassifier with a bias: OpenAIGPTForSequenceClassification's score has none "
                          "(fine-tune with GPTClassifier(use_bias=False) to export it).")
    labels = {str(i): f"LABEL_{i}" for i in range(classifier.num_classes)}
    return {"id2label": labels, "label2id": {v: int(k) for k, v in labels.items()}, "pad_token_id": 0}


def is_classification(model):
    from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier

    return isinstance(model, GPTClassifier) and model.task == "classification"


def is_multiple_choice(model):
    from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier

    return isinstance(model, GPTClassifier) and model.task == "multiple_choice"


# The LM head is tied to tokens_embed; the causal-mask buffers are derived.
HF_IGNORE = ("lm_head.weight", "*attn.bias", "*attn.masked_bias", "*position_ids")


def gpt_tokenizer(paths, lowercase, options):
    """Our `GPTTokenizer` from `vocab.json` + `merges.txt` (`unk_token` of `tokenizer_config.json`)."""
    from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer

    unk = options.get("unk_token", "<unk>")
    if isinstance(unk, dict):
        unk = unk.get("content", "<unk>")
    return GPTTokenizer.from_folder(os.path.dirname(paths[0]), unk_token=unk)


# The causal LM's head is the tied token embedding: no weights of its own, so
# the LM and double-heads models' heads are ignored (see
# `convert_huggingface_double_heads` for the multiple-choice head).
HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.gpt.gpt_backbone:GPTBackbone",
    pretrainer="keras_pretrain.models.gpt.gpt_causal_lm:GPTCausalLM",
    config=backbone_config, load_backbone=load_hf_backbone,
    ignore=HF_IGNORE, heads=("multiple_choice_head.*", "score.*"),
    tokenizer_files=("vocab.json", "merges.txt"), tokenizer=gpt_tokenizer,
    model_type="openai-gpt", architecture="OpenAIGPT", prefix="transformer.", probe="positions_embed.weight",
    to_config=to_hf_config, pretrainer_suffix=lambda model: "LMHeadModel",
    tasks=(conversion.HFHead("double_heads", "keras_pretrain.models.gpt.gpt_classifier:GPTClassifier",
                             load_hf_multiple_choice_head, names=("multiple_choice_head.*",),
                             build=build_multiple_choice, to_config=double_heads_config,
                             matches=is_multiple_choice),
           conversion.HFHead("sequence_classification", "keras_pretrain.models.gpt.gpt_classifier:GPTClassifier",
                             load_hf_score_head, names=("score.*",), build=build_classification,
                             to_config=classification_config, matches=is_classification)),
    write_tokenizer=bpe_files("OpenAIGPTTokenizer", lambda t: dict(t.vocabulary),
                              lambda t: [" ".join(m) for m in t.merges], unk_token="<unk>"),
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def hf_checks(kwargs, config_path, shapes):
    """config.json against the weights' shapes (`keras_pretrain.checkpoints.checks.check_config`)."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "n_head", kwargs["num_heads"], "n_embd", kwargs["hidden_dim"])
    p = hf_prefix(shapes)
    tokens = p + "tokens_embed.weight" if p + "tokens_embed.weight" in shapes else "lm_head.weight"
    fc = p + "h.0.mlp.c_fc.weight"  # Conv1D: [in, out]
    sizes = [("vocab_size", kwargs["vocabulary_size"], [(tokens, 0)]),
             ("n_embd", kwargs["hidden_dim"], [(tokens, 1), (p + "positions_embed.weight", 1), (fc, 0)]),
             ("4 x n_embd", kwargs["intermediate_dim"], [(fc, 1)]),
             ("n_positions", kwargs["max_sequence_length"], [(p + "positions_embed.weight", 0)])]
    return sizes, [("n_layer", kwargs["num_layers"], "^" + re.escape(p + "h.") + r"(\d+)\.")]


def hf_tokenizer(folder):
    """Our `GPTTokenizer` from `vocab.json` + `merges.txt`, or None."""
    return conversion.load_tokenizer(HF_SPEC, folder)


# --- Entry points (registered in keras_pretrain.convert) --------------------


def convert_huggingface(folder, pretrainer=False, task=False):
    """A local HF `openai-gpt` folder -> `GPTBackbone`, `GPTCausalLM` or multiple-choice `GPTClassifier`.

    Args:
        folder: `config.json`, `model.safetensors` / `pytorch_model.bin`,
            and optionally `vocab.json` + `merges.txt`.
        pretrainer: return a `GPTCausalLM` (tied LM head) instead of the
            backbone.
        task: follow `architectures`: `OpenAIGPTDoubleHeadsModel` gives the
            multiple-choice classifier (`convert_huggingface_double_heads`).
    """
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, task=task), folder, HF_SPEC)


def export_huggingface(model, folder, tokenizer=None):
    """GPT-1 backbone, causal LM or multiple-choice classifier -> a Hugging Face folder (`OpenAIGPTModel`,
    `OpenAIGPTLMHeadModel`, `OpenAIGPTDoubleHeadsModel`)."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)


def convert_huggingface_double_heads(folder, lm_weight=0.5):
    """An HF `OpenAIGPTDoubleHeadsModel` folder -> multiple-choice `GPTClassifier`.

    The multiple-choice head is a `Linear(hidden, 1)` (`summary_type
    "cls_index"`, projection to `num_labels=1`, no activation): our
    classifier with `task="multiple_choice"`, reading the last real token.
    """
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone

    path = os.path.join(folder, conversion.CONFIG)
    config = read_json(path)
    check_double_heads(config, path)
    classifier = build_multiple_choice(GPTBackbone(**backbone_config(config, path)), config, path, lm_weight)
    loader = hf_loader(folder, ignore=HF_IGNORE)
    load_hf_classifier(classifier, loader)
    loader.finish()
    return classifier, hf_tokenizer(folder)


# --- OpenAI's original release (finetune-transformer-lm `model/`) -----------

SHAPES_FILE = "params_shapes.json"
PARAMS_FILES = tuple(f"params_{k}.npy" for k in range(10))
ENCODER_FILE = "encoder_bpe_40000.json"
MERGES_FILE = "vocab_40000.bpe"

# The release's arrays in their order: the two halves of the original
# `model/we` table (stored apart, positions first), then 12 per `model/h{i}/`.
OPENAI_EMBEDDINGS = ("model/we/positions", "model/we/tokens")
OPENAI_BLOCK = (
    "attn/c_attn/w", "attn/c_attn/b", "attn/c_proj/w", "attn/c_proj/b", "ln_1/g", "ln_1/b",
    "mlp/c_fc/w", "mlp/c_fc/b", "mlp/c_proj/w", "mlp/c_proj/b", "ln_2/g", "ln_2/b",
)


def openai_names(num_layers):
    """The names of the release's arrays, in the order they are stored."""
    blocks = [f"model/h{i}/{name}" for i in range(num_layers) for name in OPENAI_BLOCK]
    return list(OPENAI_EMBEDDINGS) + blocks


def conv1d_kernel(w):
    """An original `Conv1D` weight [1, in, out] -> [in, out] (anything else unchanged)."""
    return w[0] if w.ndim == 3 and w.shape[0] == 1 else w


def is_openai_release(folder):
    """Whether `folder` (or its `model/`) holds `params_shapes.json`."""
    folder = os.fspath(folder)
    return any(os.path.isfile(os.path.join(folder, *sub, SHAPES_FILE)) for sub in ((), ("model",)))


def find_release(root, source=None):
    """The folder holding `params_shapes.json`: `root`, or up to two levels below it."""
    for pattern in ("", "model", "*", os.path.join("*", "*")):
        found = sorted(glob.glob(os.path.join(glob.escape(root), pattern, SHAPES_FILE)))
        if found:
            return os.path.dirname(found[0])
    raise CheckpointFormatError(
        f"{source or root}: no {SHAPES_FILE} found; an OpenAI GPT-1 release folder (`model/`) holds it "
        "with params_0.npy ... params_9.npy."
    )


def read_shapes(path):
    """The list of shapes in `params_shapes.json` (CheckpointFormatError naming it)."""
    if not os.path.isfile(path):
        raise CheckpointFormatError(f"{path}: file not found.")
    try:
        with open(path, encoding="utf-8") as f:
            shapes = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise CheckpointFormatError(f"{path}: not valid JSON ({e}).") from None
    valid = isinstance(shapes, list) and all(
        isinstance(s, list) and all(isinstance(n, int) and n >= 0 for n in s) for s in shapes
    )
    if not valid or len(shapes) < 3:
        raise CheckpointFormatError(
            f"{path}: expected a JSON list of at least 3 shapes (lists of sizes), the position and "
            "token tables then 12 arrays per block, e.g. [[512, 768], [40478, 768], [1, 768, 2304], ...]."
        )
    return shapes


def params_headers(folder, shapes_path=None, expected=None):
    """The paths of `params_0.npy` ... `params_9.npy` and their value counts, from the `.npy` headers only
    (`keras_pretrain.checkpoints.checks.npy_header`): a header claiming more than its file holds, a `.npz`
    saved as `.npy`, or counts that sum past `expected` (what `params_shapes.json` lists) are refused
    before any array is read."""
    from keras_pretrain.checkpoints.checks import npy_header

    paths, counts = [], []
    for name in PARAMS_FILES:
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise CheckpointFormatError(
                f"{path}: file not found; the release holds ten files params_0.npy ... params_9.npy."
            )
        shape, dtype, _ = npy_header(path)
        if not (np.issubdtype(dtype, np.integer) or np.issubdtype(dtype, np.floating)):
            raise CheckpointFormatError(f"{path}: holds {dtype} values, not numbers.")
        paths.append(path)
        counts.append(int(np.prod(shape, dtype=np.float64)) if shape else 1)
        if expected is not None and sum(counts) > expected:
            raise CheckpointFormatError(
                f"{path}: params_0.npy ... {name} already claim {sum(counts):,} values, more than the "
                f"{expected:,} that {shapes_path} lists; a file is forged or from another release (nothing "
                "was read).")
    return paths, counts


def read_params(folder, shapes_path=None, expected=None):
    """`params_0.npy` ... `params_9.npy` of `folder` as one flat float32 array (headers checked first)."""
    paths, _ = params_headers(folder, shapes_path, expected)
    parts = []
    for path in paths:
        try:
            parts.append(np.asarray(np.load(path, allow_pickle=False), "float32").reshape(-1))
        except (ValueError, OSError, EOFError) as e:
            raise CheckpointFormatError(
                f"{path}: truncated or not a NumPy .npy array ({e}). Download it again."
            ) from None
    return np.concatenate(parts)


def read_openai_arrays(folder, shapes, num_layers):
    """{name: array} of the release in `folder` (its shapes already read)."""
    sizes = [int(np.prod(shape, dtype=np.float64)) for shape in shapes]
    flat = read_params(folder, os.path.join(folder, SHAPES_FILE), sum(sizes))
    if flat.size != sum(sizes):
        raise CheckpointFormatError(
            f"{folder}: params_0.npy ... params_9.npy hold {flat.size:,} values but the {len(shapes)} "
            f"shapes of {SHAPES_FILE} need {sum(sizes):,}; a file is truncated or from another release."
        )
    arrays = np.split(flat, np.cumsum(sizes)[:-1])
    arrays = [array.reshape(shape) for array, shape in zip(arrays, shapes)]
    return dict(zip(openai_names(num_layers), arrays))


def openai_config(shapes, source, num_heads, activation, layer_norm_epsilon):
    """`GPTBackbone` kwargs read from the release's shapes (`num_heads` is not stored in it)."""
    positions, tokens = shapes[0], shapes[1]
    if len(positions) != 2 or len(tokens) != 2 or positions[1] != tokens[1]:
        raise CheckpointFormatError(
            f"{source}: the first two shapes must be the position and token tables [rows, width] of "
            f"one width; found {positions} and {tokens}."
        )
    hidden_dim = tokens[1]
    if hidden_dim % num_heads:
        raise ConfigError(
            f"{source}: the width {hidden_dim} is not divisible by num_heads={num_heads} (the release "
            "does not store the number of heads; the published GPT-1 has 12)."
        )
    fc_bias = shapes[2 + OPENAI_BLOCK.index("mlp/c_fc/b")] if len(shapes) > 9 else []
    return {
        "vocabulary_size": tokens[0],
        "num_layers": -(-(len(shapes) - 2) // 12),  # a short list: the last block incomplete
        "num_heads": num_heads,
        "hidden_dim": hidden_dim,
        "intermediate_dim": fc_bias[-1] if fc_bias else 4 * hidden_dim,
        "max_sequence_length": positions[0],
        "activation": activation,
        "layer_norm_epsilon": layer_norm_epsilon,
    }


def load_openai_backbone(backbone, loader):
    loader.assign(backbone.token_embedding.embeddings, "model/we/tokens")
    loader.assign(backbone.position_embedding.position_embeddings, "model/we/positions")
    for i, layer in enumerate(backbone.transformer_layers):
        names = openai_block_names(f"model/h{i}/")
        load_decoder_block(loader, layer, names, backbone.hidden_dim, conv1d_kernel)


def openai_tokenizer(folder):
    """Our `GPTTokenizer` from `encoder_bpe_40000.json` + `vocab_40000.bpe`, or None when absent.

    The unknown token is "<unk>" when the vocabulary holds it, else the
    token of id 0: the original `text_utils.py` encodes unknown pieces as 0.
    """
    from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer

    encoder = find_file(folder, ENCODER_FILE, "vocab.json")
    merges = find_file(folder, MERGES_FILE, "merges.txt")
    if encoder is None or merges is None:
        from keras_pretrain.checkpoints.checks import no_tokenizer

        no_tokenizer(folder, f"{ENCODER_FILE} + {MERGES_FILE}")
        return None
    try:
        with open(encoder, encoding="utf-8") as f:
            vocabulary = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"{encoder}: not valid JSON ({e}).") from None
    if not isinstance(vocabulary, dict) or not vocabulary:
        raise ConfigError(f"{encoder}: expected a JSON object token -> id.")
    unk = "<unk>"
    if unk not in vocabulary:
        unk = min(vocabulary, key=vocabulary.get)
        print(f"{encoder}: no '<unk>'; unknown pieces get id {vocabulary[unk]} ({unk!r}), as in the original.")
    return GPTTokenizer(vocabulary, merges, unk_token=unk)


def _convert_openai(folder, pretrainer, num_heads, activation, layer_norm_epsilon):
    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
    from keras_pretrain.models.gpt.gpt_causal_lm import GPTCausalLM

    shapes_path = os.path.join(folder, SHAPES_FILE)
    shapes = read_shapes(shapes_path)
    kwargs = openai_config(shapes, shapes_path, num_heads, activation, layer_norm_epsilon)
    num_layers = kwargs["num_layers"]
    _, counts = params_headers(folder, shapes_path)
    listed = sum(int(np.prod(shape, dtype=np.float64)) for shape in shapes)
    if sum(counts) != listed:  # before anything is read or built
        raise CheckpointFormatError(
            f"{folder}: params_0.npy ... params_9.npy hold {sum(counts):,} values (their headers) but the "
            f"{len(shapes)} shapes of {SHAPES_FILE} need {listed:,}; a file is truncated, forged or from another "
            "release (nothing was read)."
        )
    loader = WeightLoader.from_dict(read_openai_arrays(folder, shapes, num_layers), shapes_path)
    if len(shapes) != 2 + 12 * num_layers:
        loader.problems.append(
            f"{len(shapes)} arrays listed, not 2 + 12 x layers: read as {num_layers} layers, "
            f"{2 + 12 * num_layers - len(shapes)} array(s) short (an array absent from the middle "
            "shifts the ones after it, which then show as mis-shaped)"
        )
    model = conversion.build_and_load(
        GPTBackbone, GPTCausalLM, kwargs, loader, pretrainer, load_openai_backbone
    )
    loader.finish()
    print(
        f"{folder}: GPT-1 release, {num_layers} layers, width {kwargs['hidden_dim']}, "
        f"{kwargs['vocabulary_size']} tokens, {kwargs['max_sequence_length']} positions, "
        f"num_heads={num_heads} (not stored in the release)."
    )
    return model, openai_tokenizer(folder)


def convert_openai(path, pretrainer=False, num_heads=12, activation="gelu_approximate",
                   layer_norm_epsilon=1e-5, extract_to=None, max_extract_bytes=None):
    """GPT-1 from OpenAI's release (github.com/openai/finetune-transformer-lm, `model/`).

    Reads `params_shapes.json` and `params_0.npy` ... `params_9.npy` (see
    the module docstring for the order) and the BPE files
    `encoder_bpe_40000.json` (token -> id) and `vocab_40000.bpe` (merges).
    The result equals the Hugging Face conversion of the same release
    (`openai-gpt`, transformers' `load_tf_weights_in_openai_gpt`): the
    token table [V, d] and the full position table (512 rows) are kept
    apart. The original fine-tuning code instead cut the positions to its
    context length `n_ctx` and joined [tokens; `n_special` new random rows;
    positions] into one table; add such special tokens afterwards with
    `keras_pretrain.models.gpt.expand_vocabulary`.

    Args:
        path: the `model/` folder, a folder holding it (up to two levels
            down), its `params_shapes.json`, or an archive of the release
            (`.zip`, `.tar.gz`; extracted safely).
        pretrainer: return a `GPTCausalLM` (tied LM head) instead of the
            backbone.
        num_heads: attention heads, not stored in the release (12 in the
            published GPT-1).
        activation: the feed-forward activation (the original `gelu` is the
            tanh form, `"gelu_approximate"`).
        layer_norm_epsilon: LayerNorm epsilon (1e-5 in the original code).
        extract_to: folder to extract an archive into (default: a temporary
            folder removed afterwards).
        max_extract_bytes: the most bytes an archive may expand to (see
            `keras_pretrain.checkpoints.archives`).

    Returns:
        `(GPTBackbone or GPTCausalLM, GPTTokenizer or None)`: no tokenizer
        when the BPE files are absent.

    Raises:
        CheckpointFormatError: naming the file: a missing or truncated
            `params_k.npy`, values that do not fill the shapes, or (all at
            once) every missing and mis-shaped array.
    """
    from keras_pretrain.checkpoints.archives import is_archive
    from keras_pretrain.checkpoints.archives import safe_extract

    path = os.fspath(path)
    options = (pretrainer, num_heads, activation, layer_norm_epsilon)
    if os.path.isdir(path):
        return _convert_openai(find_release(path), *options)
    if os.path.basename(path) == SHAPES_FILE and os.path.isfile(path):
        return _convert_openai(os.path.dirname(path) or ".", *options)
    if is_archive(path):
        if extract_to is not None:
            safe_extract(path, extract_to, max_extract_bytes=max_extract_bytes)
            return _convert_openai(find_release(extract_to, path), *options)
        with tempfile.TemporaryDirectory(prefix="gpt_release_") as tmp:
            safe_extract(path, tmp, max_extract_bytes=max_extract_bytes)
            return _convert_openai(find_release(tmp, path), *options)
    if os.path.exists(path):
        raise CheckpointFormatError(f"{path}: not a GPT-1 release folder, {SHAPES_FILE} or archive.")
    raise CheckpointFormatError(f"{path}: no such file or folder.")
