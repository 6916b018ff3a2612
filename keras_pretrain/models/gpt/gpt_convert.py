"""Weight-name map for GPT-1: the Hugging Face `openai-gpt` layout -> ours.

HF names: `tokens_embed`, `positions_embed`, `h.{i}.attn.c_attn` (q, k, v
stacked on the output axis), `h.{i}.attn.c_proj`, `h.{i}.ln_1`,
`h.{i}.mlp.c_fc`, `h.{i}.mlp.c_proj`, `h.{i}.ln_2`, with a `transformer.`
prefix inside the LM / double-heads models. These are `Conv1D` layers whose
weight is already [in, out] (the layout of a Keras `Dense` kernel): they are
NOT transposed, unlike PyTorch `Linear` weights.
"""

import os

from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import hf_prefix as model_prefix
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
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
    """Column block `part` (0 q, 1 k, 2 v) of a stacked c_attn array."""
    return lambda w: w[..., part * hidden_dim : (part + 1) * hidden_dim]


def load_decoder_block(loader, layer, p, hidden_dim):
    """keras-hub `TransformerDecoder` (no cross-attention) from `h.{i}.`."""
    attention = layer._self_attention_layer
    for part, dense in enumerate(
        (attention._query_dense, attention._key_dense, attention._value_dense)
    ):
        loader.assign(dense.kernel, p + "attn.c_attn.weight", _split(part, hidden_dim), reshape=True)
        loader.assign(dense.bias, p + "attn.c_attn.bias", _split(part, hidden_dim), reshape=True)
    out = attention._output_dense
    loader.assign(out.kernel, p + "attn.c_proj.weight", reshape=True)
    loader.assign(out.bias, p + "attn.c_proj.bias")
    # Conv1D weights are already [in, out]: no transform.
    load_layer_norm(loader, layer._self_attention_layer_norm, *HF.dense(p, "ln_1"))
    load_dense(loader, layer._feedforward_intermediate_dense, *HF.dense(p, "mlp/c_fc"))
    load_dense(loader, layer._feedforward_output_dense, *HF.dense(p, "mlp/c_proj"))
    load_layer_norm(loader, layer._feedforward_layer_norm, *HF.dense(p, "ln_2"))


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
        load_decoder_block(loader, layer, f"{p}h.{i}.", backbone.hidden_dim)


def load_hf_classifier(classifier, loader):
    """Backbone plus the double-heads `multiple_choice_head.summary` Linear."""
    load_hf_backbone(classifier.backbone, loader)
    load_dense(loader, classifier.output_dense, *HF.dense("", "multiple_choice_head/summary"), HF.linear)


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
    ignore=HF_IGNORE + ("multiple_choice_head.*",),
    tokenizer_files=("vocab.json", "merges.txt"), tokenizer=gpt_tokenizer,
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def hf_tokenizer(folder):
    """Our `GPTTokenizer` from `vocab.json` + `merges.txt`, or None."""
    return conversion.load_tokenizer(HF_SPEC, folder)


# --- Entry points (registered in keras_pretrain.convert) --------------------


def convert_huggingface(folder, pretrainer=False):
    """A local HF `openai-gpt` folder -> `GPTBackbone` or `GPTCausalLM`.

    Args:
        folder: `config.json`, `model.safetensors` / `pytorch_model.bin`,
            and optionally `vocab.json` + `merges.txt`.
        pretrainer: return a `GPTCausalLM` (tied LM head) instead of the
            backbone. Heads of `OpenAIGPTDoubleHeadsModel` are ignored here;
            see `convert_huggingface_double_heads`.
    """
    return conversion.convert_huggingface(HF_SPEC, folder, pretrainer)


def convert_huggingface_double_heads(folder, lm_weight=0.5):
    """An HF `OpenAIGPTDoubleHeadsModel` folder -> multiple-choice `GPTClassifier`.

    The multiple-choice head is a `Linear(hidden, 1)` (`summary_type
    "cls_index"`, projection to `num_labels=1`, no activation): our
    classifier with `task="multiple_choice"`, reading the last real token.
    """
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
    from keras_pretrain.models.gpt.gpt_classifier import GPTClassifier

    path = os.path.join(folder, conversion.CONFIG)
    config = read_json(path)
    if config.get("summary_activation") not in (None, "", "linear") or not config.get("summary_use_proj", True):
        raise ConfigError(
            f"{path}: only the default multiple-choice summary (a linear projection, "
            f"no activation) is supported; found summary_activation="
            f"{config.get('summary_activation')!r}, summary_use_proj={config.get('summary_use_proj')!r}."
        )
    backbone = GPTBackbone(**backbone_config(config, path))
    classifier = GPTClassifier(backbone, task="multiple_choice", lm_weight=lm_weight,
                               dropout=config.get("summary_first_dropout", 0.1))
    loader = hf_loader(folder, ignore=HF_IGNORE)
    load_hf_classifier(classifier, loader)
    loader.finish()
    return classifier, hf_tokenizer(folder)
