"""Weight-name maps for DistilBERT: Hugging Face layout -> ours."""

import dataclasses
import re

from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import block_names
from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.bert import bert_convert
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models.block_weights import load_layer_norm
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.block_weights import load_masked_lm_head
from keras_pretrain.models.block_weights import load_transformer_encoder

HF_IGNORE = ("vocab_projector.weight", "*position_ids")
CONFIG_KEYS = ("vocab_size", "dim", "n_layers", "n_heads", "hidden_dim", "max_position_embeddings")

# Relative names inside `transformer.layer.{i}`; the LayerNorms are `.weight` / `.bias` only.
BLOCK = (
    ("query", "attention/q_lin"),
    ("key", "attention/k_lin"),
    ("value", "attention/v_lin"),
    ("attention_output", "attention/out_lin"),
    ("intermediate", "ffn/lin1"),
    ("output", "ffn/lin2"),
    ("attention_norm", "sa_layer_norm"),
    ("output_norm", "output_layer_norm"),
)


def backbone_config(config, path):
    require(config, CONFIG_KEYS, path)
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


def hf_checks(kwargs, config_path, shapes):
    """config.json's sizes against the weights' shapes (`keras_pretrain.checkpoints.checks`)."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "n_heads", kwargs["num_heads"], "dim", kwargs["hidden_dim"])
    p = hf_prefix(shapes, "distilbert.")
    word = p + "embeddings.word_embeddings.weight"
    lin1 = p + "transformer.layer.0.ffn.lin1.weight"
    sizes = [("vocab_size", kwargs["vocabulary_size"], [(word, 0)]),
             ("dim", kwargs["hidden_dim"], [(word, 1), (lin1, 1)]),
             ("hidden_dim", kwargs["intermediate_dim"], [(lin1, 0)]),
             ("max_position_embeddings", kwargs["max_sequence_length"],
              [(p + "embeddings.position_embeddings.weight", 0)])]
    return sizes, [("n_layers", kwargs["num_layers"], "^" + re.escape(p + "transformer.layer.") + r"(\d+)\.")]


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def load_hf_backbone(backbone, loader, model_prefix="distilbert."):
    p = hf_prefix(loader, model_prefix)
    e = p + "embeddings."
    loader.assign(backbone.token_embedding.embeddings, HF.embedding(e, "word_embeddings"))
    loader.assign(backbone.position_embedding.position_embeddings, HF.embedding(e, "position_embeddings"))
    load_layer_norm(loader, backbone.embeddings_layer_norm, *HF.dense(e, "LayerNorm"))
    for i, layer in enumerate(backbone.transformer_layers):
        names = block_names(loader, HF, HF.scope(p, HF.item("transformer/layer", i)), BLOCK)
        load_transformer_encoder(loader, layer, names, HF.linear)


def load_hf_heads(pretrainer, loader):
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *HF.dense("", "vocab_transform"),
        *HF.dense("", "vocab_layer_norm"), "vocab_projector.bias", HF.linear,
    )


def load_hf_pretrainer(pretrainer, loader, model_prefix="distilbert."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    load_hf_heads(pretrainer, loader)


def load_hf_classifier_head(classifier, loader):
    """`pre_classifier` (Dense(H, relu) on the first token) and `classifier` (`*ForSequenceClassification`,
    `*ForMultipleChoice`)."""
    load_dense(loader, classifier.head_dense, *HF.dense("", "pre_classifier"), HF.linear)
    load_dense(loader, classifier.output_dense, *HF.dense("", "classifier"), HF.linear)


def to_hf_config(backbone):
    return {
        "vocab_size": backbone.vocabulary_size, "dim": backbone.hidden_dim, "n_layers": backbone.num_layers,
        "n_heads": backbone.num_heads, "hidden_dim": backbone.intermediate_dim, "dropout": backbone.dropout,
        "attention_dropout": backbone.dropout, "max_position_embeddings": backbone.max_sequence_length,
        "activation": hf_activation(backbone.activation), "initializer_range": backbone.initializer_range,
        "sinusoidal_pos_embds": False, "pad_token_id": 0,
    }


def pretrainer_suffix(pretrainer):
    return "ForMaskedLM"


HF_SPEC = dataclasses.replace(
    bert_convert.HF_SPEC,
    backbone="keras_pretrain.models.distil_bert.distil_bert_backbone:DistilBertBackbone",
    pretrainer="keras_pretrain.models.distil_bert.distil_bert_pretrainer:DistilBertPretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads,
    ignore=HF_IGNORE, prepare=None, after_load=None,
    # A backbone can come from any DistilBertFor* folder: its heads stay unused.
    heads=("vocab_transform.*", "vocab_layer_norm.*", "vocab_projector.*", "pre_classifier.*", "classifier.*"),
    model_type="distilbert", architecture="DistilBert", prefix="distilbert.", to_config=to_hf_config,
    pretrainer_suffix=pretrainer_suffix,
    tasks=(conversion.sequence_classification(
        "keras_pretrain.models.distil_bert.distil_bert_classifier:DistilBertClassifier",
        load_hf_classifier_head, ("pre_classifier.*", "classifier.*"), dropout_key="seq_classif_dropout"),
           conversion.multiple_choice(load_hf_classifier_head, ("pre_classifier.*", "classifier.*"),
                                      dropout_key="seq_classif_dropout"),
           conversion.question_answering(dropout_key="qa_dropout"),
           conversion.token_classification(("dropout",))),
)


def convert_huggingface(folder, pretrainer=False, lowercase=None, task=False):
    """A Hugging Face DistilBERT folder -> `DistilBertPretrainer`, `DistilBertBackbone` or classifier."""
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase, task), folder, HF_SPEC)


def export_huggingface(model, folder, tokenizer=None):
    """DistilBERT backbone, pretrainer or classifier -> a Hugging Face folder."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)
