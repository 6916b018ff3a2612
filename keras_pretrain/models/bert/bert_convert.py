"""Weight-name maps for BERT: Hugging Face and original Google TF1 layouts."""

import os

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.casing import guess_lowercase  # noqa: F401 - re-exported
from keras_pretrain.checkpoints.blocks import load_dense
from keras_pretrain.checkpoints.blocks import load_layer_norm
from keras_pretrain.checkpoints.blocks import load_masked_lm_head
from keras_pretrain.checkpoints.blocks import load_transformer_encoder
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import TF1_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation

BERT_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def backbone_config(config, source, activations):
    """A BERT-style config dict (HF or Google) -> `BertBackbone` kwargs."""
    require(config, BERT_CONFIG_KEYS, source)
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "dropout": config.get("hidden_dropout_prob", 0.1),
        "max_sequence_length": config["max_position_embeddings"],
        "num_segments": config["type_vocab_size"],
        "activation": translate_activation(
            config.get("hidden_act", "gelu"), activations, source
        ),
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "initializer_range": config.get("initializer_range", 0.02),
    }


# --- Hugging Face ----------------------------------------------------------


def hf_norm(loader, prefix):
    """(gamma, beta) names of a LayerNorm, old (gamma/beta) or new naming."""
    return (
        loader.first_present(prefix + ".weight", prefix + ".gamma"),
        loader.first_present(prefix + ".bias", prefix + ".beta"),
    )


def hf_block_names(loader, p):
    names = {}
    for part, hf in (("query", "attention.self.query"), ("key", "attention.self.key"),
                     ("value", "attention.self.value"), ("attention_output", "attention.output.dense"),
                     ("intermediate", "intermediate.dense"), ("output", "output.dense")):
        names[part] = f"{p}{hf}.weight"
        names[part + "_bias"] = f"{p}{hf}.bias"
    names["attention_norm"], names["attention_norm_bias"] = hf_norm(loader, f"{p}attention.output.LayerNorm")
    names["output_norm"], names["output_norm_bias"] = hf_norm(loader, f"{p}output.LayerNorm")
    return names


def hf_prefix(loader, model_prefix):
    """'bert.' when the state dict comes from a *ForXxx model, else ''."""
    probe = "embeddings.word_embeddings.weight"
    return model_prefix if (model_prefix + probe) in loader else ""


def load_hf_backbone(backbone, loader, model_prefix="bert."):
    p = hf_prefix(loader, model_prefix)
    e = p + "embeddings."
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings.weight")
    loader.assign(
        backbone.position_embedding.position_embeddings,
        e + "position_embeddings.weight",
    )
    loader.assign(backbone.segment_embedding.embeddings, e + "token_type_embeddings.weight")
    load_layer_norm(loader, backbone.embeddings_layer_norm, *hf_norm(loader, e + "LayerNorm"))
    for i, layer in enumerate(backbone.transformer_layers):
        names = hf_block_names(loader, f"{p}encoder.layer.{i}.")
        load_transformer_encoder(loader, layer, names, torch_linear)
    load_dense(loader, backbone.pooled_dense, p + "pooler.dense.weight",
               p + "pooler.dense.bias", torch_linear)


def load_hf_pretrainer(pretrainer, loader, model_prefix="bert."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    t = "cls.predictions.transform."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, t + "dense.weight", t + "dense.bias",
        *hf_norm(loader, t + "LayerNorm"), "cls.predictions.bias", torch_linear,
    )
    if pretrainer.sentence_head is not None:
        load_dense(loader, pretrainer.sentence_head, "cls.seq_relationship.weight",
                   "cls.seq_relationship.bias", torch_linear)


# Tied or derived copies that HF state dicts may carry.
HF_IGNORE = (
    "cls.predictions.decoder.weight",
    "cls.predictions.decoder.bias",
    "*position_ids",
)


# --- Original Google TF1 checkpoints ---------------------------------------


def tf1_block_names(p):
    names = {}
    for part, tf in (("query", "attention/self/query"), ("key", "attention/self/key"),
                     ("value", "attention/self/value"), ("attention_output", "attention/output/dense"),
                     ("intermediate", "intermediate/dense"), ("output", "output/dense")):
        names[part] = f"{p}{tf}/kernel"
        names[part + "_bias"] = f"{p}{tf}/bias"
    for part, tf in (("attention_norm", "attention/output/LayerNorm"), ("output_norm", "output/LayerNorm")):
        names[part] = f"{p}{tf}/gamma"
        names[part + "_bias"] = f"{p}{tf}/beta"
    return names


def load_tf1_backbone(backbone, loader):
    e = "bert/embeddings/"
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings")
    loader.assign(backbone.position_embedding.position_embeddings, e + "position_embeddings")
    loader.assign(backbone.segment_embedding.embeddings, e + "token_type_embeddings")
    load_layer_norm(loader, backbone.embeddings_layer_norm, e + "LayerNorm/gamma", e + "LayerNorm/beta")
    for i, layer in enumerate(backbone.transformer_layers):
        load_transformer_encoder(loader, layer, tf1_block_names(f"bert/encoder/layer_{i}/"))
    load_dense(loader, backbone.pooled_dense, "bert/pooler/dense/kernel", "bert/pooler/dense/bias")


def load_tf1_heads(pretrainer, loader):
    t = "cls/predictions/transform/"
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, t + "dense/kernel", t + "dense/bias",
        t + "LayerNorm/gamma", t + "LayerNorm/beta", "cls/predictions/output_bias",
    )
    if pretrainer.sentence_head is not None:
        # output_weights is [2, H]: the transpose of a Dense kernel.
        load_dense(loader, pretrainer.sentence_head, "cls/seq_relationship/output_weights",
                   "cls/seq_relationship/output_bias", torch_linear)


def find_file(folder, *names):
    for name in names:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def hf_config(folder):
    path = os.path.join(folder, "config.json")
    return backbone_config(read_json(path), path, HF_ACTIVATIONS)


def tf1_config(path):
    return backbone_config(read_json(path), path, TF1_ACTIVATIONS)


# --- Entry points (registered in keras_pretrain.convert) --------------------


def hf_tokenizer(folder, lowercase=None):
    """Our `BertTokenizer` from `vocab.txt` + `tokenizer_config.json`.

    Casing: `lowercase`, else `do_lower_case` of `tokenizer_config.json`, else
    the folder's name, else a guess from the vocabulary (`keras_pretrain.casing`).
    """
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    vocab = find_file(folder, "vocab.txt")
    if vocab is None:
        return None
    options = {}
    path = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(path):
        options = read_json(path)
    lowercase = choose_lowercase(
        vocab, lowercase, stated=options.get("do_lower_case"), stated_by=path,
        names=(folder,), vocab=vocab,
    )
    return BertTokenizer(
        vocabulary=vocab,
        lowercase=lowercase,
        strip_accents=options.get("strip_accents"),
    )


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.bert.bert_backbone import BertBackbone
    from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer

    backbone = BertBackbone(**hf_config(folder))
    ignore = HF_IGNORE if pretrainer else HF_IGNORE + ("cls.*",)
    loader = hf_loader(folder, ignore=ignore)
    if pretrainer:
        model = BertPretrainer(backbone)
        load_hf_pretrainer(model, loader)
    else:
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    return model, hf_tokenizer(folder, lowercase)


def convert_tf1(path, pretrainer=False, lowercase=None, extract_to=None, max_extract_bytes=None):
    """Original Google BERT: `bert_config.json`, `bert_model.ckpt.*`, `vocab.txt`.

    Args:
        path: the folder, a checkpoint prefix inside it (`.../model.ckpt-1000`,
            loaded exactly), or a released archive (`uncased_L-12_H-768_A-12.zip`,
            `.tar.gz`; extracted safely). In a folder with several checkpoints
            (`run_pretraining.py` output), the one its `checkpoint` state file
            names, else the highest global step, else `*-best` (see
            `keras_pretrain.checkpoints.tf1`; the choice is printed).
        pretrainer: also load the MLM and NSP heads (returns `BertPretrainer`).
        lowercase: the casing of the vocabulary; None: from Google's release
            name of the folder (`uncased_L-12_H-768_A-12`, `cased_...`,
            `chinese_...`), else guessed from the vocabulary (uncased ones
            hold no upper-case pieces; `[unused0]`, `<S>` are ignored). The
            choice is printed.
        extract_to: folder to extract an archive into (default: a temporary
            folder removed afterwards).
        max_extract_bytes: the most bytes an archive may expand to (see
            `keras_pretrain.checkpoints.archives`).
    """
    from keras_pretrain.checkpoints.tf1 import tf1_checkpoint

    path = os.fspath(path)
    with tf1_checkpoint(path, extract_to, max_extract_bytes) as (root, prefix):
        return _convert_tf1(root, prefix, pretrainer, lowercase, path)


def _convert_tf1(root, prefix, pretrainer, lowercase, path):
    from keras_pretrain.checkpoints.tf1 import OPTIMIZER_PATTERNS
    from keras_pretrain.checkpoints.tf1 import tf1_loader
    from keras_pretrain.errors import CheckpointFormatError
    from keras_pretrain.models.bert.bert_backbone import BertBackbone
    from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    # The files beside the checkpoint, else in the folder given.
    folder = os.path.dirname(prefix)
    config_path = find_file(folder, "bert_config.json", "config.json") or find_file(
        root, "bert_config.json", "config.json"
    )
    if config_path is None:
        raise CheckpointFormatError(
            f"{folder}: no bert_config.json found (run_pretraining.py output folders do not "
            "hold it: copy the bert_config.json used for training beside the checkpoint)."
        )
    backbone = BertBackbone(**tf1_config(config_path))
    ignore = OPTIMIZER_PATTERNS + (() if pretrainer else ("cls/*",))
    loader = tf1_loader(prefix, ignore=ignore)
    if pretrainer:
        model = BertPretrainer(backbone)
        load_tf1_backbone(backbone, loader)
        load_tf1_heads(model, loader)
    else:
        model = backbone
        load_tf1_backbone(backbone, loader)
    loader.finish()
    vocab = find_file(folder, "vocab.txt") or find_file(root, "vocab.txt")
    tokenizer = None
    if vocab is not None:
        lowercase = choose_lowercase(vocab, lowercase, names=(folder, path), vocab=vocab)
        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=lowercase)
    return model, tokenizer
