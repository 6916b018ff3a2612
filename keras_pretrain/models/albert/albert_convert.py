"""Weight-name maps for ALBERT and the loader of the published archives.

Original Google TF1 checkpoints (`albert_{base,...}_{v2,zh}.tar.gz`, extracted
folders, TF1 hub modules) and Hugging Face `AlbertModel` /
`AlbertForPreTraining` folders. See shared/specs/albert-published-checkpoints.md.
"""

import fnmatch
import glob
import os
import re

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import TF1
from keras_pretrain.checkpoints.names import block_names
from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import TF1_ACTIVATIONS
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.bert import bert_convert
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.huggingface_export import sentencepiece_files
from keras_pretrain.models.block_weights import load_bert_embeddings
from keras_pretrain.models.block_weights import load_bert_heads
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models.block_weights import load_masked_lm_head
from keras_pretrain.models.block_weights import load_transformer_encoder

# BERT's keys plus the embedding size (in the order errors list missing ones).
ALBERT_CONFIG_KEYS = conversion.BERT_CONFIG_KEYS[:1] + ("embedding_size",) + conversion.BERT_CONFIG_KEYS[1:]


def backbone_config(config, source, activations):
    """An ALBERT config dict (Google or HF) -> `AlbertBackbone` kwargs.

    BERT's keys plus the factorised embedding and the shared groups. Unknown
    keys are ignored. The research options of the original code
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
    kwargs = conversion.bert_style_config(config, source, activations)
    kwargs.update(
        embedding_dim=config["embedding_size"],
        num_groups=config.get("num_hidden_groups", 1),
        num_inner_repetitions=config.get("inner_group_num", 1),
        dropout=config.get("hidden_dropout_prob", 0.0),
    )
    return kwargs


def each_block(backbone):
    for g, group in enumerate(backbone.transformer_layers):
        for i, block in enumerate(group):
            yield g, i, block


# --- Names and placing (both layouts) ---------------------------------------

# Special to ALBERT: the shared groups (`num_groups` x `num_inner_repetitions`
# blocks, called again for every layer) and their names in each layout.
BLOCK_NAMES = {
    TF1: {
        "group": "encoder/transformer/group",
        "inner": "inner_group",
        "denses": (
            ("query", "attention_1/self/query"),
            ("key", "attention_1/self/key"),
            ("value", "attention_1/self/value"),
            ("attention_output", "attention_1/output/dense"),
            ("intermediate", "ffn_1/intermediate/dense"),
            ("output", "ffn_1/intermediate/output/dense"),
        ),
        "norms": (("attention_norm", "LayerNorm"), ("output_norm", "LayerNorm_1")),
        "pooler": "pooler/dense",
    },
    HF: {
        "group": "encoder/albert_layer_groups",
        "inner": "albert_layers",
        "denses": (
            ("query", "attention/query"),
            ("key", "attention/key"),
            ("value", "attention/value"),
            ("attention_output", "attention/dense"),
            ("intermediate", "ffn"),
            ("output", "ffn_output"),
        ),
        "norms": (("attention_norm", "attention/LayerNorm"), ("output_norm", "full_layer_layer_norm")),
        "pooler": "pooler",
    },
}


def block_scope(layout, p, g, i):
    """The prefix of block `i` of group `g`."""
    names = BLOCK_NAMES[layout]
    return layout.scope(p, layout.item(names["group"], g) + "/" + layout.item(names["inner"], i))


def load_backbone(backbone, loader, layout, p):
    """BERT's embeddings, the projection to the hidden size, the shared groups, the pooler."""
    names = BLOCK_NAMES[layout]
    load_bert_embeddings(backbone, loader, layout, layout.scope(p, "embeddings"))
    load_dense(loader, backbone.embeddings_projection,
               *layout.dense(p, "encoder/embedding_hidden_mapping_in"), layout.linear)
    for g, i, block in each_block(backbone):
        scope = block_scope(layout, p, g, i)
        load_transformer_encoder(
            loader, block, block_names(loader, layout, scope, names["denses"], names["norms"]), layout.linear
        )
    load_dense(loader, backbone.pooled_dense, *layout.dense(p, names["pooler"]), layout.linear)


def size_checks(kwargs, config_path, shapes, layout, p):
    """`(sizes, layers, unchecked)` of `keras_pretrain.checkpoints.checks.check_config`: BERT's sizes with
    the factorised embedding, the groups and inner blocks counted; `num_hidden_layers` (the shared groups
    called again) is bounded only."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "num_attention_heads", kwargs["num_heads"], "hidden_size", kwargs["hidden_dim"])
    names = BLOCK_NAMES[layout]
    intermediate = layout.dense(block_scope(layout, p, 0, 0), names["denses"][4][1])[0]
    mapping = layout.dense(p, "encoder/embedding_hidden_mapping_in")[0]
    sizes, _ = bert_convert.size_checks(kwargs, layout, p, intermediate)
    sizes = [s for s in sizes if s[0] != "hidden_size"]
    tf1 = layout.linear is None
    word = layout.embedding(layout.scope(p, "embeddings"), "word_embeddings")
    sizes += [("embedding_size", kwargs["embedding_dim"], [(word, 1), (mapping, 0 if tf1 else 1)]),
              ("hidden_size", kwargs["hidden_dim"], [(mapping, 1 if tf1 else 0), (intermediate, 0 if tf1 else 1)])]
    group = layout.name(p, names["group"])
    sep = "_" if tf1 else r"\."
    layers = [
        ("num_hidden_groups", kwargs["num_groups"], "^" + re.escape(group) + sep + r"(\d+)" + re.escape(layout.sep)),
        ("inner_group_num", kwargs["num_inner_repetitions"],
         "^" + re.escape(group + ("_0" if tf1 else ".0") + layout.sep + layout.name("", names["inner"])) + sep
         + r"(\d+)" + re.escape(layout.sep)),
    ]
    return sizes, layers, [("num_hidden_layers", kwargs["num_layers"])]


def hf_checks(kwargs, config_path, shapes):
    return size_checks(kwargs, config_path, shapes, HF, hf_prefix(shapes, "albert."))


# --- Original Google TF1 checkpoints ---------------------------------------


def load_tf1_backbone(backbone, loader):
    load_backbone(backbone, loader, TF1, "bert/")


def load_tf1_heads(pretrainer, loader):
    """BERT's heads and names (`cls/predictions`; the SOP head is `cls/seq_relationship`)."""
    load_bert_heads(pretrainer, loader, TF1)


# --- Hugging Face ----------------------------------------------------------


def load_hf_backbone(backbone, loader):
    load_backbone(backbone, loader, HF, hf_prefix(loader, "albert."))


def load_hf_heads(pretrainer, loader):
    t = "predictions."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *HF.dense(t, "dense"),
        *HF.norm(loader, t, "LayerNorm"), t + "bias", HF.linear,
    )
    if pretrainer.sentence_head is not None:
        load_dense(loader, pretrainer.sentence_head, *HF.dense("", "sop_classifier/classifier"), HF.linear)


# Tied or derived copies that HF state dicts may carry.
HF_IGNORE = ("predictions.decoder.weight", "predictions.decoder.bias", "*position_ids")


def hf_backbone_config(config, source):
    return backbone_config(config, source, HF_ACTIVATIONS)


def hf_sentencepiece_tokenizer(paths, lowercase, options):
    return sentencepiece_tokenizer(paths[0], lowercase, options.get("keep_accents", False))


def prepare(loader, kwargs, pretrainer):
    """The SOP head only when the folder has one (`AlbertForPreTraining`; `AlbertForMaskedLM` has none)."""
    return {"sentence_head": "sop_classifier.classifier.weight" in loader}


def to_hf_config(backbone):
    config = conversion.bert_style_hf_config(backbone, hf_activation)
    config.update(embedding_size=backbone.embedding_dim, num_hidden_groups=backbone.num_groups,
                  inner_group_num=backbone.num_inner_repetitions,
                  classifier_dropout_prob=0.1)
    return config


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.albert.albert_backbone:AlbertBackbone",
    pretrainer="keras_pretrain.models.albert.albert_pretrainer:AlbertPretrainer",
    config=hf_backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads,
    ignore=HF_IGNORE, heads=("predictions.*", "sop_classifier.*"),
    tokenizer_files=("spiece.model",), tokenizer=hf_sentencepiece_tokenizer, casing=True,
    prepare=prepare, after_load=bert_convert.forgive_missing_pooler("albert."), left_out=bert_convert.pooler_not_in,
    model_type="albert", architecture="Albert", prefix="albert.", to_config=to_hf_config,
    pretrainer_suffix=bert_convert.pretrainer_suffix,
    tasks=(conversion.sequence_classification("keras_pretrain.models.albert.albert_classifier:AlbertClassifier",
                                              bert_convert.load_hf_classifier_head, ("classifier.*",),
                                              dropout_key="classifier_dropout_prob"),
           conversion.multiple_choice(bert_convert.load_hf_classifier_head, ("classifier.*",),
                                      dropout_key="classifier_dropout_prob"),
           conversion.question_answering(),
           conversion.token_classification(("classifier_dropout_prob", "hidden_dropout_prob"))),
    write_tokenizer=sentencepiece_files("AlbertTokenizer"),
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def convert_huggingface(folder, pretrainer=False, lowercase=None, task=False):
    """A local HF `AlbertModel` / `AlbertForPreTraining` / `AlbertForSequenceClassification` folder -> ours.

    Returns `(model, tokenizer)`; the tokenizer comes from `spiece.model`
    (None when the folder has none).
    """
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase, task), folder,
                          HF_SPEC)


def export_huggingface(model, folder, tokenizer=None):
    """ALBERT backbone, pretrainer or classifier -> a Hugging Face folder."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)


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
    kwargs = backbone_config(read_json(configs[0]), configs[0], TF1_ACTIVATIONS)
    from keras_pretrain.checkpoints.checks import check_config

    check_config(configs[0], prefix, loader.shapes, *size_checks(kwargs, configs[0], loader.shapes, TF1, "bert/"))
    model = conversion.build_and_load(
        AlbertBackbone, AlbertPretrainer, kwargs, loader, pretrainer, load_tf1_backbone, load_tf1_heads
    )
    loader.finish()
    tokenizer = find_tokenizer(folder, lowercase, source)
    if tokenizer is None:
        from keras_pretrain.checkpoints.checks import no_tokenizer

        no_tokenizer(source, " / ".join(SENTENCEPIECE_NAMES + ("*.model",) + WORDPIECE_NAMES))
    return model, tokenizer


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
