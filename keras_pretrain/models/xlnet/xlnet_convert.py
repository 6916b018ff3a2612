"""Weight-name maps for XLNet: the Hugging Face layout (`XLNetModel`, `XLNetLMHeadModel`, ...).

Special to XLNet: the relative attention's own variables (`q`, `k`, `v`, `o`,
`r`, the `r_*_bias` and `seg_embed` tables), copied as they are.
"""

from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import hf_prefix as model_prefix
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models.block_weights import load_layer_norm

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
    return model_prefix(loader, "transformer.", probe="word_embedding.weight")


def load_hf_backbone(backbone, loader):
    p = hf_prefix(loader)
    loader.assign(backbone.token_embedding.embeddings, p + "word_embedding.weight")
    loader.assign(backbone.mask_emb, p + "mask_emb")
    for i, (attention, feedforward) in enumerate(zip(backbone.attention_layers, backbone.feedforward_layers)):
        a = f"{p}layer.{i}.rel_attn."
        for name in ("q", "k", "v", "o", "r", "r_w_bias", "r_r_bias", "r_s_bias", "seg_embed"):
            loader.assign(getattr(attention, name), a + name)
        load_layer_norm(loader, attention.layer_norm, *HF.dense(a, "layer_norm"))
        f = f"{p}layer.{i}.ff."
        load_dense(loader, feedforward.layer_1, *HF.dense(f, "layer_1"), HF.linear)
        load_dense(loader, feedforward.layer_2, *HF.dense(f, "layer_2"), HF.linear)
        load_layer_norm(loader, feedforward.layer_norm, *HF.dense(f, "layer_norm"))


def load_hf_pretrainer(pretrainer, loader):
    load_hf_backbone(pretrainer.backbone, loader)
    load_hf_heads(pretrainer, loader)


def load_hf_classifier(classifier, loader):
    """`XLNetForSequenceClassification` -> `XLNetClassifier`."""
    load_hf_backbone(classifier.backbone, loader)
    load_dense(loader, classifier.summary_dense, *HF.dense("", "sequence_summary/summary"), HF.linear)
    load_dense(loader, classifier.output_dense, *HF.dense("", "logits_proj"), HF.linear)


# The output embedding is tied to the word embedding.
HF_IGNORE = ("lm_loss.weight",)
HF_HEADS = ("lm_loss.*", "sequence_summary.*", "logits_proj.*", "qa_outputs.*", "start_logits.*",
            "end_logits.*", "answer_class.*")


def load_hf_heads(pretrainer, loader):
    loader.assign(pretrainer.lm_head.bias, "lm_loss.bias")


def sentencepiece_tokenizer(paths, lowercase, options):
    from keras_pretrain.models.xlnet.xlnet_tokenizer import XLNetTokenizer

    return XLNetTokenizer(proto=paths[0], lowercase=lowercase)


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.xlnet.xlnet_backbone:XLNetBackbone",
    pretrainer="keras_pretrain.models.xlnet.xlnet_pretrainer:XLNetPretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads,
    ignore=HF_IGNORE, heads=HF_HEADS,
    tokenizer_files=("spiece.model",), tokenizer=sentencepiece_tokenizer, casing=False,
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def hf_tokenizer(folder, lowercase=None):
    """Our `XLNetTokenizer` from `spiece.model` (+ `tokenizer_config.json`), or None."""
    return conversion.load_tokenizer(HF_SPEC, folder, lowercase)


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A local HF XLNet folder -> `XLNetBackbone` (or `XLNetPretrainer`), tokenizer."""
    return conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase)
