"""Weight-name maps for DistilBERT: Hugging Face layout -> ours."""

import os

from keras_pretrain.checkpoints.blocks import load_layer_norm
from keras_pretrain.checkpoints.blocks import load_masked_lm_head
from keras_pretrain.checkpoints.blocks import load_transformer_encoder
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models.bert.bert_convert import hf_prefix
from keras_pretrain.models.bert.bert_convert import hf_tokenizer

HF_IGNORE = ("vocab_projector.weight", "*position_ids")
CONFIG_KEYS = ("vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings")


def hf_config(folder):
    path = os.path.join(folder, "config.json")
    config = require(read_json(path), CONFIG_KEYS, path)
    if config.get("sinusoidal_pos_embds", False):
        raise ConfigError(f"{path}: sinusoidal_pos_embds=true is not supported (released models use false).")
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["n_layers"],
        "num_heads": config["n_heads"],
        "hidden_dim": config["dim"],
        "intermediate_dim": config["hidden_dim"],
        "dropout": config.get("dropout", 0.1),
        "max_sequence_length": config["max_position_embeddings"],
        "activation": translate_activation(config.get("activation", "gelu"), HF_ACTIVATIONS, path),
        "initializer_range": config.get("initializer_range", 0.02),
    }


def block_names(p):
    names = {}
    for part, hf in (("query", "attention.q_lin"), ("key", "attention.k_lin"), ("value", "attention.v_lin"),
                     ("attention_output", "attention.out_lin"), ("intermediate", "ffn.lin1"),
                     ("output", "ffn.lin2"), ("attention_norm", "sa_layer_norm"),
                     ("output_norm", "output_layer_norm")):
        names[part] = f"{p}{hf}.weight"
        names[part + "_bias"] = f"{p}{hf}.bias"
    return names


def load_hf_backbone(backbone, loader, model_prefix="distilbert."):
    p = hf_prefix(loader, model_prefix)
    e = p + "embeddings."
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings.weight")
    loader.assign(backbone.position_embedding.position_embeddings, e + "position_embeddings.weight")
    load_layer_norm(loader, backbone.embeddings_layer_norm, e + "LayerNorm.weight", e + "LayerNorm.bias")
    for i, layer in enumerate(backbone.transformer_layers):
        load_transformer_encoder(loader, layer, block_names(f"{p}transformer.layer.{i}."), torch_linear)


def load_hf_pretrainer(pretrainer, loader, model_prefix="distilbert."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, "vocab_transform.weight", "vocab_transform.bias",
        "vocab_layer_norm.weight", "vocab_layer_norm.bias", "vocab_projector.bias", torch_linear,
    )


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A Hugging Face DistilBERT folder -> `DistilBertPretrainer` or `DistilBertBackbone`."""
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
    from keras_pretrain.models.distil_bert.distil_bert_pretrainer import DistilBertPretrainer

    backbone = DistilBertBackbone(**hf_config(folder))
    # A backbone can come from any DistilBertFor* folder: its heads stay unused.
    head = ("vocab_transform.*", "vocab_layer_norm.*", "vocab_projector.*", "pre_classifier.*", "classifier.*")
    loader = hf_loader(folder, ignore=HF_IGNORE if pretrainer else HF_IGNORE + head)
    if pretrainer:
        model = DistilBertPretrainer(backbone)
        load_hf_pretrainer(model, loader)
    else:
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    return model, hf_tokenizer(folder, lowercase)
