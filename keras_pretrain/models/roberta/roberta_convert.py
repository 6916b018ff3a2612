"""Weight-name maps for RoBERTa: Hugging Face layout -> ours."""

import os

from keras_pretrain.checkpoints.blocks import load_dense
from keras_pretrain.checkpoints.blocks import load_layer_norm
from keras_pretrain.checkpoints.blocks import load_masked_lm_head
from keras_pretrain.checkpoints.blocks import load_transformer_encoder
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.models.bert.bert_convert import backbone_config
from keras_pretrain.models.bert.bert_convert import find_file
from keras_pretrain.models.bert.bert_convert import hf_block_names
from keras_pretrain.models.bert.bert_convert import hf_norm
from keras_pretrain.models.bert.bert_convert import hf_prefix

HF_IGNORE = ("lm_head.decoder.weight", "lm_head.decoder.bias", "*position_ids")


def hf_config(folder, use_pooler=False):
    path = os.path.join(folder, "config.json")
    config = read_json(path)
    kwargs = backbone_config(config, path, HF_ACTIVATIONS)
    kwargs["layer_norm_epsilon"] = config.get("layer_norm_eps", 1e-5)
    kwargs["padding_id"] = config.get("pad_token_id", 1)
    kwargs["use_pooler"] = use_pooler
    return kwargs


def load_hf_backbone(backbone, loader, model_prefix="roberta."):
    p = hf_prefix(loader, model_prefix)
    e = p + "embeddings."
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings.weight")
    loader.assign(backbone.position_embedding.embeddings, e + "position_embeddings.weight")
    loader.assign(backbone.segment_embedding.embeddings, e + "token_type_embeddings.weight")
    load_layer_norm(loader, backbone.embeddings_layer_norm, *hf_norm(loader, e + "LayerNorm"))
    for i, layer in enumerate(backbone.transformer_layers):
        names = hf_block_names(loader, f"{p}encoder.layer.{i}.")
        load_transformer_encoder(loader, layer, names, torch_linear)
    if backbone.pooled_dense is not None:
        load_dense(loader, backbone.pooled_dense, p + "pooler.dense.weight",
                   p + "pooler.dense.bias", torch_linear)


def load_hf_pretrainer(pretrainer, loader, model_prefix="roberta."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    h = "lm_head."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, h + "dense.weight", h + "dense.bias",
        h + "layer_norm.weight", h + "layer_norm.bias", h + "bias", torch_linear,
    )


def hf_tokenizer(folder):
    """Our `RobertaTokenizer` from `vocab.json` + `merges.txt` (None if absent)."""
    from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer

    vocab = find_file(folder, "vocab.json")
    merges = find_file(folder, "merges.txt")
    if vocab is None or merges is None:
        return None
    return RobertaTokenizer(vocabulary=vocab, merges=merges)


def convert_huggingface(folder, pretrainer=False):
    """A Hugging Face RoBERTa folder -> `RobertaPretrainer` or `RobertaBackbone`.

    The pooler is loaded (`use_pooler=True`) when the backbone's weights hold
    one (`RobertaModel`); `RobertaForMaskedLM` folders have none.
    """
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
    from keras_pretrain.models.roberta.roberta_pretrainer import RobertaPretrainer

    loader = hf_loader(folder, ignore=HF_IGNORE if pretrainer else HF_IGNORE + ("lm_head.*", "classifier.*"))
    has_pooler = hf_prefix(loader, "roberta.") + "pooler.dense.weight" in loader
    use_pooler = has_pooler and not pretrainer
    if pretrainer and has_pooler:
        loader.ignore += ("*pooler.*",)
    backbone = RobertaBackbone(**hf_config(folder, use_pooler))
    if pretrainer:
        model = RobertaPretrainer(backbone)
        load_hf_pretrainer(model, loader)
    else:
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    return model, hf_tokenizer(folder)
