"""Weight-name maps for ALBERT and the loader of the published archives.

Original Google TF1 checkpoints (`albert_{base,...}_{v2,zh}.tar.gz`, extracted
folders, TF1 hub modules) and Hugging Face `AlbertModel` /
`AlbertForPreTraining` folders. See shared/specs/albert-published-checkpoints.md.
"""

import fnmatch
import glob
import os

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.blocks import load_dense
from keras_pretrain.checkpoints.blocks import load_layer_norm
from keras_pretrain.checkpoints.blocks import load_masked_lm_head
from keras_pretrain.checkpoints.blocks import load_transformer_encoder
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import TF1_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models.bert.bert_convert import hf_norm
from keras_pretrain.models.bert.bert_convert import load_tf1_heads

ALBERT_CONFIG_KEYS = (
    "vocab_size",
    "embedding_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def backbone_config(config, source, activations):
    """An ALBERT config dict (Google or HF) -> `AlbertBackbone` kwargs.

    Unknown keys are ignored. The research options of the original code
    (`net_structure_type`, `down_scale_factor`, ...) must keep their
    defaults: no published model changes them.
    """
    require(config, ALBERT_CONFIG_KEYS, source)
    for key, default in (("net_structure_type", 0), ("down_scale_factor", 1)):
        if config.get(key, default) != default:
            raise ConfigError(
                f"{source}: {key}={config[key]!r} is not supported (only the "
                f"standard ALBERT network, {key}={default})."
            )
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "embedding_dim": config["embedding_size"],
        "num_groups": config.get("num_hidden_groups", 1),
        "num_inner_repetitions": config.get("inner_group_num", 1),
        "dropout": config.get("hidden_dropout_prob", 0.0),
        "max_sequence_length": config["max_position_embeddings"],
        "num_segments": config["type_vocab_size"],
        "activation": translate_activation(
            config.get("hidden_act", "gelu"), activations, source
        ),
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "initializer_range": config.get("initializer_range", 0.02),
    }


def each_block(backbone):
    for g, group in enumerate(backbone.transformer_layers):
        for i, block in enumerate(group):
            yield g, i, block


# --- Original Google TF1 checkpoints ---------------------------------------


def tf1_block_names(g, i):
    p = f"bert/encoder/transformer/group_{g}/inner_group_{i}/"
    names = {}
    for part, tf in (
        ("query", "attention_1/self/query"),
        ("key", "attention_1/self/key"),
        ("value", "attention_1/self/value"),
        ("attention_output", "attention_1/output/dense"),
        ("intermediate", "ffn_1/intermediate/dense"),
        ("output", "ffn_1/intermediate/output/dense"),
    ):
        names[part] = f"{p}{tf}/kernel"
        names[part + "_bias"] = f"{p}{tf}/bias"
    for part, tf in (("attention_norm", "LayerNorm"), ("output_norm", "LayerNorm_1")):
        names[part] = f"{p}{tf}/gamma"
        names[part + "_bias"] = f"{p}{tf}/beta"
    return names


def load_tf1_backbone(backbone, loader):
    e = "bert/embeddings/"
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings")
    loader.assign(backbone.position_embedding.position_embeddings, e + "position_embeddings")
    loader.assign(backbone.segment_embedding.embeddings, e + "token_type_embeddings")
    load_layer_norm(loader, backbone.embeddings_layer_norm, e + "LayerNorm/gamma", e + "LayerNorm/beta")
    m = "bert/encoder/embedding_hidden_mapping_in/"
    load_dense(loader, backbone.embeddings_projection, m + "kernel", m + "bias")
    for g, i, block in each_block(backbone):
        load_transformer_encoder(loader, block, tf1_block_names(g, i))
    load_dense(loader, backbone.pooled_dense, "bert/pooler/dense/kernel", "bert/pooler/dense/bias")


# --- Hugging Face ----------------------------------------------------------


def hf_block_names(loader, p):
    names = {}
    for part, hf in (
        ("query", "attention.query"),
        ("key", "attention.key"),
        ("value", "attention.value"),
        ("attention_output", "attention.dense"),
        ("intermediate", "ffn"),
        ("output", "ffn_output"),
    ):
        names[part] = f"{p}{hf}.weight"
        names[part + "_bias"] = f"{p}{hf}.bias"
    names["attention_norm"], names["attention_norm_bias"] = hf_norm(loader, f"{p}attention.LayerNorm")
    names["output_norm"], names["output_norm_bias"] = hf_norm(loader, f"{p}full_layer_layer_norm")
    return names


def load_hf_backbone(backbone, loader):
    p = "albert." if "albert.embeddings.word_embeddings.weight" in loader else ""
    e = p + "embeddings."
    loader.assign(backbone.token_embedding.embeddings, e + "word_embeddings.weight")
    loader.assign(backbone.position_embedding.position_embeddings, e + "position_embeddings.weight")
    loader.assign(backbone.segment_embedding.embeddings, e + "token_type_embeddings.weight")
    load_layer_norm(loader, backbone.embeddings_layer_norm, *hf_norm(loader, e + "LayerNorm"))
    m = p + "encoder.embedding_hidden_mapping_in."
    load_dense(loader, backbone.embeddings_projection, m + "weight", m + "bias", torch_linear)
    for g, i, block in each_block(backbone):
        names = hf_block_names(loader, f"{p}encoder.albert_layer_groups.{g}.albert_layers.{i}.")
        load_transformer_encoder(loader, block, names, torch_linear)
    load_dense(loader, backbone.pooled_dense, p + "pooler.weight", p + "pooler.bias", torch_linear)


def load_hf_heads(pretrainer, loader):
    t = "predictions."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, t + "dense.weight", t + "dense.bias",
        *hf_norm(loader, t + "LayerNorm"), t + "bias", torch_linear,
    )
    if pretrainer.sentence_head is not None:
        load_dense(loader, pretrainer.sentence_head, "sop_classifier.classifier.weight",
                   "sop_classifier.classifier.bias", torch_linear)


# Tied or derived copies that HF state dicts may carry.
HF_IGNORE = ("predictions.decoder.weight", "predictions.decoder.bias", "*position_ids")


def hf_config(folder):
    path = os.path.join(folder, "config.json")
    return backbone_config(read_json(path), path, HF_ACTIVATIONS)


def convert_huggingface(folder, pretrainer=False, lowercase=None):
    """A local HF `AlbertModel` / `AlbertForPreTraining` folder -> ours.

    Returns `(model, tokenizer)`; the tokenizer comes from `spiece.model`
    (None when the folder has none).
    """
    from keras_pretrain.checkpoints.huggingface import hf_loader
    from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
    from keras_pretrain.models.albert.albert_pretrainer import AlbertPretrainer

    backbone = AlbertBackbone(**hf_config(folder))
    ignore = HF_IGNORE if pretrainer else HF_IGNORE + ("predictions.*", "sop_classifier.*")
    loader = hf_loader(folder, ignore=ignore)
    if pretrainer:
        model = AlbertPretrainer(backbone)
        load_hf_backbone(backbone, loader)
        load_hf_heads(model, loader)
    else:
        model = backbone
        load_hf_backbone(backbone, loader)
    loader.finish()
    tokenizer = None
    spiece = os.path.join(folder, "spiece.model")
    if os.path.exists(spiece):
        options = {}
        path = os.path.join(folder, "tokenizer_config.json")
        if os.path.exists(path):
            options = read_json(path)
        lowercase = choose_lowercase(
            spiece, lowercase, stated=options.get("do_lower_case"), stated_by=path, names=(folder,)
        )
        tokenizer = sentencepiece_tokenizer(spiece, lowercase, options.get("keep_accents", False))
    return model, tokenizer


# --- The published archives -------------------------------------------------

CONFIG_NAMES = ("albert_config.json",)
SENTENCEPIECE_NAMES = ("30k-clean.model", "spiece.model")
WORDPIECE_NAMES = ("vocab_chinese.txt", "vocab.txt")

# Marks of the community "albert_zh" checkpoints (brightmart/albert_zh).
ALBERT_ZH_PATTERNS = ("*layer_shared*", "*word_embeddings_2*")


def find_files(folder, *names):
    """Every file under `folder` (recursively) named one of `names`, by name order."""
    found = []
    for name in names:
        found += sorted(glob.glob(os.path.join(glob.escape(folder), "**", name), recursive=True))
    return [p for p in found if os.path.isfile(p)]


def check_not_albert_zh(names, source):
    marks = sorted(n for n in names if any(fnmatch.fnmatchcase(n, p) for p in ALBERT_ZH_PATTERNS))
    if marks:
        raise CheckpointFormatError(
            f"{source}: this is a community 'albert_zh' checkpoint (brightmart/albert_zh: "
            f"variables such as {marks[0]!r}), a different format from Google's ALBERT "
            "(bert/encoder/transformer/group_0/inner_group_0/..., "
            "bert/encoder/embedding_hidden_mapping_in). It is not supported; use the "
            "Google albert_*_zh archives or convert it to that layout first."
        )


def sentencepiece_tokenizer(path, lowercase=True, keep_accents=False):
    from keras_pretrain.models.albert.albert_tokenizer import AlbertTokenizer

    try:
        return AlbertTokenizer(proto=path, lowercase=lowercase, keep_accents=keep_accents)
    except CheckpointFormatError:
        raise
    except Exception as e:
        raise CheckpointFormatError(
            f"{path}: not a usable ALBERT SentencePiece model ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200] if str(e) else ''}); it needs the pieces "
            "<pad>, <unk>, [CLS], [SEP], [MASK]."
        ) from None


def find_tokenizer(folder, lowercase=None, source=None):
    """SentencePiece (`30k-clean.model`) or WordPiece (`vocab_chinese.txt`, `vocab.txt`).

    Casing: `lowercase`, else the release name of `source` / `folder`, else
    uncased: every published ALBERT (v1, v2 and zh) is.
    """
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    models = find_files(folder, *SENTENCEPIECE_NAMES) or find_files(folder, "*.model")
    vocabs = [] if models else find_files(folder, *WORDPIECE_NAMES)
    if not models and not vocabs:
        return None
    path = (models or vocabs)[0]
    lowercase = choose_lowercase(
        path, lowercase, names=(source, folder), default=True,
        default_reason="the published ALBERT models (v1, v2, zh) are all uncased",
    )
    if models:
        return sentencepiece_tokenizer(path, lowercase)
    return BertTokenizer(vocabulary=path, lowercase=lowercase)


def _load_folder(folder, prefix, pretrainer, lowercase, source):
    from keras_pretrain.checkpoints.tf1 import OPTIMIZER_PATTERNS
    from keras_pretrain.checkpoints.tf1 import tf1_loader
    from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
    from keras_pretrain.models.albert.albert_pretrainer import AlbertPretrainer

    ignore = OPTIMIZER_PATTERNS + (() if pretrainer else ("cls/*",))
    loader = tf1_loader(prefix, ignore=ignore)
    check_not_albert_zh(loader.names, f"{source} ({os.path.relpath(prefix, folder)})")
    configs = find_files(folder, *CONFIG_NAMES)
    if not configs:
        raise CheckpointFormatError(
            f"{source}: no albert_config.json found (searched every folder of it)."
        )
    backbone = AlbertBackbone(**backbone_config(read_json(configs[0]), configs[0], TF1_ACTIVATIONS))
    if pretrainer:
        model = AlbertPretrainer(backbone)
        load_tf1_backbone(backbone, loader)
        load_tf1_heads(model, loader)
    else:
        model = backbone
        load_tf1_backbone(backbone, loader)
    loader.finish()
    return model, find_tokenizer(folder, lowercase, source)


def load_albert(path, pretrainer=False, lowercase=None, extract_to=None, max_extract_bytes=None):
    """Loads a published ALBERT checkpoint (Google's TF1 format).

    Args:
        path: an `albert_*_{v2,zh}.tar.gz` archive (or a `.zip`), the folder
            it extracts to, a TF1 hub-module folder (`variables/`, `assets/`),
            or a checkpoint prefix (`.../model.ckpt-1000`, loaded exactly).
            `albert_config.json` and the vocabulary (`30k-clean.model`,
            `vocab_chinese.txt` or `vocab.txt`) may be anywhere inside; in a
            folder with several checkpoints, the one the `checkpoint` state
            file names, else the highest global step, else `*-best` (see
            `keras_pretrain.checkpoints.tf1`; the choice is printed).
        pretrainer: bool. Also load the MLM and SOP heads and return an
            `AlbertPretrainer` instead of the bare `AlbertBackbone`.
        lowercase: the tokenizer's casing; None: from the archive or
            folder name (`uncased`, `cased`, `_zh`), else True, as every
            published ALBERT. The choice is printed.
        extract_to: folder to extract an archive into (default: a temporary
            folder removed afterwards; the tokenizer keeps its vocabulary in
            memory).
        max_extract_bytes: size limit of an archive's contents (see
            `keras_pretrain.checkpoints.archives.safe_extract`).

    Returns:
        `(model, tokenizer)`; tokenizer is None when no vocabulary is found.

    Raises:
        CheckpointFormatError: truncated/corrupt/unsafe archive, no
            checkpoint, missing or mismatched variables, community
            "albert_zh" layout. ConfigError: a bad `albert_config.json`.
    """
    from keras_pretrain.checkpoints.tf1 import tf1_checkpoint

    path = os.fspath(path)
    with tf1_checkpoint(path, extract_to, max_extract_bytes) as (folder, prefix):
        return _load_folder(folder, prefix, pretrainer, lowercase, path)


def convert_tf1(path, pretrainer=False, **kwargs):
    """`convert.from_tf1_checkpoint(path, family="albert")`: see `load_albert`."""
    return load_albert(path, pretrainer=pretrainer, **kwargs)
