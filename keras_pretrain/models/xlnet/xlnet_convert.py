"""Weight-name maps for XLNet: the Hugging Face layout (`XLNetModel`, `XLNetLMHeadModel`, ...)."""

import os

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.blocks import load_dense
from keras_pretrain.checkpoints.blocks import load_layer_norm
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation

XLNET_CONFIG_KEYS = ("vocab_size", "d_model", "n_layer", "n_head", "d_inner")


def backbone_config(config, source):
    """An HF `XLNetConfig` dict -> `XLNetBackbone` kwargs."""
    require(config, XLNET_CONFIG_KEYS, source)
    d_head = config.get("d_head")
    if d_head is not None and d_head * config["n_head"] != config["d_model"]:
        raise ConfigError(
            f"{source}: d_head {d_head} * n_head {config['n_head']} != d_model {config['d_model']}."
        )
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["n_layer"],
        "num_heads": config["n_head"],
        "hidden_dim": config["d_model"],
        "intermediate_dim": config["d_inner"],
        "dropout": config.get("dropout", 0.1),
        "activation": translate_activation(config.get("ff_activation", "gelu"), HF_ACTIVATIONS, source),
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "initializer_range": config.get("initializer_range", 0.02),
        "attn_type": config.get("attn_type", "bi"),
        "mem_len": config.get("mem_len"),
        "reuse_len": config.get("reuse_len"),
        "clamp_len": config.get("clamp_len", -1),
        "same_length": config.get("same_length", False),
        "bi_data": config.get("bi_data", False),
        # The PyTorch port always keeps one set of relative biases per layer.
        "untie_r": True,
    }


def hf_prefix(loader):
    """'transformer.' when the state dict comes from a *ForXxx / LM-head model."""
    return "transformer." if "transformer.word_embedding.weight" in loader else ""


def load_hf_backbone(backbone, loader):
    p = hf_prefix(loader)
    loader.assign(backbone.token_embedding.embeddings, p + "word_embedding.weight")
    loader.assign(backbone.mask_emb, p + "mask_emb")
    for i, (attention, feedforward) in enumerate(zip(backbone.attention_layers, backbone.feedforward_layers)):
        a = f"{p}layer.{i}.rel_attn."
        for name in ("q", "k", "v", "o", "r", "r_w_bias", "r_r_bias", "r_s_bias", "seg_embed"):
            loader.assign(getattr(attention, name), a + name)
        load_layer_norm(loader, attention.layer_norm, a + "layer_norm.weight", a + "layer_norm.bias")
        f = f"{p}layer.{i}.ff."
        load_dense(loader, feedforward.layer_1, f + "layer_1.weight", f + "layer_1.bias", torch_linear)
        load_dense(loader, feedforward.layer_2, f + "layer_2.weight", f + "layer_2.bias", torch_linear)
        load_layer_norm(loader, feedforward.layer_norm, f + "layer_norm.weight", f + "layer_norm.bias")


def load_hf_pretrainer(pretrainer, loader):
    load_hf_backbone(pretrainer.backbone, loader)
    loader.assign(pretrainer.lm_head.bias, "lm_loss.bias")


def load_hf_classifier(classifier, loader):
    """`XLNetForSequenceClassification` -> `XLNetClassifier`."""
    load_hf_backbone(classifier.backbone, loader)
    load_dense(loader, classifier.summary_dense, "sequence_summary.summary.weight",
               "sequence_summary.summary.bias", torch_linear)
    load_dense(loader, classifier.output_dense, "logits_proj.weight", "logits_proj.bias", torch_linear)


# The output embedding is tied to the word embedding.
HF_IGNORE = ("lm_loss.weight",)
HF_HEADS = ("lm_loss.*", "sequence_summary.*", "logits_proj.*", "qa_outputs.*", "start_logits.*",
            "end_logits.*", "answer_class.*")


def hf_config(folder):
    path = os.path.join(folder, "config.json")
    return backbone_config(read_json(path), path)


def hf_tokenizer(folder, lowercase=None):
    """Our `XLNetTokenizer` from `spiece.model` (+ `tokenizer_config.json`), or None."""
    from keras_pretrain.models.xlnet.xlnet_tokenizer import XLNetTokenizer

    path = os.path.join(folder, "spiece.model")
    if not os.path.exists(path):
        return None
    options = {}
    config_path = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(config_path):
        options = read_json(config_path)
    lowercase = choose_lowercase(
        path, lowercase, stated=options.get("do_lower_case"), stated_by=config_path,
        names=(folder,), default=False,
    )
    return XLNetTokenizer(proto=path, lowercase=lowercase)


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A local HF XLNet folder -> `XLNetBackbone` (or `XLNetPretrainer`), tokenizer."""
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
    from keras_pretrain.models.xlnet.xlnet_pretrainer import XLNetPretrainer

    backbone = XLNetBackbone(**hf_config(folder))
    if pretrainer:
        loader = hf_loader(folder, ignore=HF_IGNORE)
        model = XLNetPretrainer(backbone)
        load_hf_pretrainer(model, loader)
    else:
        loader = hf_loader(folder, ignore=HF_IGNORE + HF_HEADS)
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    return model, hf_tokenizer(folder, lowercase)
