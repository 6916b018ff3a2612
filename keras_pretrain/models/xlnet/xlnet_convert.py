"""Weight-name maps for XLNet: the Hugging Face layout (`XLNetModel`,
`XLNetLMHeadModel`, ...) and the original TF1 release (`convert_tf1`).

Special to XLNet: the relative attention's own variables (`q`, `k`, `v`, `o`,
`r`, the `r_*_bias` and `seg_embed` tables), copied as they are (the original
stacks the biases and `seg_embed` of all layers in one array).
"""

import fnmatch
import functools
import os
import re

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import TF1
from keras_pretrain.checkpoints.names import find_file
from keras_pretrain.checkpoints.names import hf_prefix as model_prefix
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.huggingface_export import sentencepiece_files
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
    """'transformer.' when the state dict comes from a *ForXxx / LM-head model (`loader`: a `WeightLoader`
    or the weights' {name: shape})."""
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


def load_hf_classifier_head(classifier, loader):
    """`XLNetForSequenceClassification`'s (and `XLNetForMultipleChoice`'s) `sequence_summary.summary` (tanh,
    last token) and `logits_proj`."""
    load_dense(loader, classifier.summary_dense, *HF.dense("", "sequence_summary/summary"), HF.linear)
    load_dense(loader, classifier.output_dense, *HF.dense("", "logits_proj"), HF.linear)


def load_hf_classifier(classifier, loader):
    """`XLNetForSequenceClassification` -> `XLNetClassifier`."""
    load_hf_backbone(classifier.backbone, loader)
    load_hf_classifier_head(classifier, loader)


def to_hf_config(backbone):
    if not backbone.untie_r:
        raise ExportError("XLNetBackbone(untie_r=False): transformers' XLNet keeps one set of relative "
                          "biases per layer (untie_r=True) only.")
    return {
        "vocab_size": backbone.vocabulary_size, "d_model": backbone.hidden_dim, "n_layer": backbone.num_layers,
        "n_head": backbone.num_heads, "d_head": backbone.hidden_dim // backbone.num_heads,
        "d_inner": backbone.intermediate_dim, "ff_activation": hf_activation(backbone.activation),
        "untie_r": True, "attn_type": backbone.attn_type, "mem_len": backbone.mem_len,
        "reuse_len": backbone.reuse_len, "clamp_len": backbone.clamp_len, "same_length": backbone.same_length,
        "bi_data": backbone.bi_data, "dropout": backbone.dropout, "layer_norm_eps": backbone.layer_norm_epsilon,
        "initializer_range": backbone.initializer_range,
    }


def summary_config(task):
    """`XLNetSequenceSummary`'s keys of our summary (the last token, tanh projection, then dropout)."""
    return {"summary_type": "last", "summary_use_proj": True, "summary_activation": "tanh",
            "summary_last_dropout": task.dropout}


def classifier_config(classifier):
    config = conversion.sequence_classifier_config(classifier)
    config.update(summary_config(classifier))
    return config


def pretrainer_suffix(pretrainer):
    return "LMHeadModel"


# The output embedding is tied to the word embedding.
HF_IGNORE = ("lm_loss.weight",)
HF_HEADS = ("lm_loss.*", "sequence_summary.*", "logits_proj.*", "qa_outputs.*", "start_logits.*",
            "end_logits.*", "answer_class.*")


def load_hf_heads(pretrainer, loader):
    loader.assign(pretrainer.lm_head.bias, "lm_loss.bias")


def sentencepiece_tokenizer(paths, lowercase, options):
    return spiece_tokenizer(paths[0], lowercase)


def spiece_tokenizer(path, lowercase):
    """`XLNetTokenizer` of `spiece.model`; a file SentencePiece cannot read is a CheckpointFormatError
    naming it (not TensorFlow's InternalError, which names none)."""
    from keras_pretrain.checkpoints.checks import tokenizer_from_file
    from keras_pretrain.models.xlnet.xlnet_tokenizer import XLNetTokenizer

    return tokenizer_from_file(lambda: XLNetTokenizer(proto=path, lowercase=lowercase), path,
                               "SentencePiece model (XLNet's spiece.model)")


def size_checks(kwargs, config_path, layout, p, n_token="n_token"):
    """`(sizes, layers)` of `keras_pretrain.checkpoints.checks.check_config` (both layouts: `p` is
    `model/transformer/` or the HF prefix)."""
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(config_path, "n_head", kwargs["num_heads"], "d_model", kwargs["hidden_dim"])
    tf1 = layout is TF1
    word = p + ("word_embedding/lookup_table" if tf1 else "word_embedding.weight")
    layer0 = layout.scope(p, layout.item("layer", 0))
    q = layer0 + ("rel_attn/q/kernel" if tf1 else "rel_attn.q")
    ff1 = layer0 + ("ff/layer_1/kernel" if tf1 else "ff.layer_1.weight")
    sizes = [
        (n_token, kwargs["vocabulary_size"], [(word, 0)]),
        ("d_model", kwargs["hidden_dim"], [(word, 1), (q, 0), (ff1, 0 if tf1 else 1)]),
        ("n_head", kwargs["num_heads"], [(q, 1)]),
        ("d_inner", kwargs["intermediate_dim"], [(ff1, 1 if tf1 else 0)]),
    ]
    if tf1:  # the stacked per-layer tables tell the layer count too
        sizes.append(("n_layer", kwargs["num_layers"], [(p + "seg_embed", 0)]))
    pattern = "^" + re.escape(layout.name(p, "layer")) + ("_" if tf1 else r"\.") + r"(\d+)" + re.escape(layout.sep)
    return sizes, [("n_layer", kwargs["num_layers"], pattern)]


def hf_checks(kwargs, config_path, shapes):
    return size_checks(kwargs, config_path, HF, hf_prefix(shapes), "vocab_size")


def check_summary(config, source):
    """Only XLNet's published classification summary: the last token, a tanh projection."""
    for key, value in (("summary_type", "last"), ("summary_use_proj", True), ("summary_activation", "tanh")):
        if config.get(key, value) != value:
            raise ConfigError(f"{source}: {key}={config[key]!r} is not supported (XLNetClassifier: {value!r}).")


def build_classifier(backbone, config, source):
    check_summary(config, source)
    return conversion.build_sequence_classifier(
        conversion.resolve("keras_pretrain.models.xlnet.xlnet_classifier:XLNetClassifier"),
        dropout_key="summary_last_dropout")(backbone, config, source)


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.xlnet.xlnet_backbone:XLNetBackbone",
    pretrainer="keras_pretrain.models.xlnet.xlnet_pretrainer:XLNetPretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads,
    ignore=HF_IGNORE, heads=HF_HEADS,
    tokenizer_files=("spiece.model",), tokenizer=sentencepiece_tokenizer, casing=False,
    model_type="xlnet", architecture="XLNet", prefix="transformer.", probe="word_embedding.weight",
    to_config=to_hf_config, pretrainer_suffix=pretrainer_suffix,
    tasks=(conversion.HFHead("sequence_classification", "keras_pretrain.models.xlnet.xlnet_classifier:XLNetClassifier",
                             load_hf_classifier_head, names=("sequence_summary.*", "logits_proj.*"),
                             build=build_classifier, to_config=classifier_config,
                             matches=conversion.is_sequence_classifier),
           conversion.multiple_choice(load_hf_classifier_head, ("sequence_summary.*", "logits_proj.*"),
                                      dropout_key="summary_last_dropout", check=check_summary,
                                      to_config=summary_config),
           conversion.question_answering(suffix="ForQuestionAnsweringSimple"),
           conversion.beam_question_answering(),
           conversion.token_classification(())),
    write_tokenizer=sentencepiece_files("XLNetTokenizer", keep_accents=False),
)


def hf_config(folder):
    return conversion.hf_config(HF_SPEC, folder)


def hf_tokenizer(folder, lowercase=None):
    """Our `XLNetTokenizer` from `spiece.model` (+ `tokenizer_config.json`), or None."""
    return conversion.load_tokenizer(HF_SPEC, folder, lowercase)


def convert_huggingface(folder, pretrainer=False, lowercase=None, task=False):
    """A local HF XLNet folder -> `XLNetBackbone` (or `XLNetPretrainer`, `XLNetClassifier`), tokenizer."""
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, lowercase, task), folder,
                          HF_SPEC)


def export_huggingface(model, folder, tokenizer=None):
    """XLNet backbone, pretrainer or classifier -> a Hugging Face folder (`XLNetModel`, `XLNetLMHeadModel`,
    `XLNetForSequenceClassification`)."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)


# --- The original TF1 release (zihangdai/xlnet, also the Chinese XLNet) ------
#
# `xlnet_cased_L-12_H-768_A-12.zip`: `xlnet_model.ckpt.{index,data-*,meta}`,
# `xlnet_config.json` and `spiece.model`. Names and shapes: see
# shared/specs/original-checkpoints.md, "XLNet". The run-config items
# (`mem_len`, `clamp_len`, ...) are flags of the original scripts, not in the
# json: the caller passes them.

TF1_CONFIG = "xlnet_config.json"
TF1_VOCABULARY = "spiece.model"
TF1_CONFIG_KEYS = ("n_token", "n_layer", "d_model", "n_head", "d_head", "d_inner", "ff_activation", "untie_r")
# `modeling.positionwise_ffn` knows these two; its "gelu" is the tanh form.
TF1_ACTIVATIONS = {"gelu": "gelu_approximate", "relu": "relu"}
# The original fine-tuning defaults (`run_classifier.py` flags).
TF1_RUN_CONFIG = {
    "mem_len": None, "reuse_len": None, "bi_data": False, "clamp_len": -1, "same_length": False, "attn_type": "bi",
}
TF1_PREFIX = "model/transformer/"
TF1_BIASES = ("r_w_bias", "r_r_bias", "r_s_bias")
SHARED_BIASES_HINT = " (one set shared by all layers: the checkpoint has untie_r=false, xlnet_config.json says true)"
TF1_MASK_EMB = TF1_PREFIX + "mask_emb/mask_emb"
TF1_LM_BIAS = "model/lm_loss/bias"
TF1_LM_WEIGHT = "model/lm_loss/weight"  # only with `tie_weight=False`, never published
TF1_HEADS = ("model/lm_loss/*",)
# Heads of fine-tuned checkpoints (run_classifier.py, run_race.py, run_squad.py):
# neither the backbone nor the pretrainer has them, so they are skipped (printed).
TF1_FINETUNED_HEADS = (
    "model/sequnece_summary/*",  # sic
    "model/classification_*",
    "model/regression_*",
    "start_logits/*",
    "end_logits/*",
    "answer_class/*",
)
# run_squad.py's head (`function_builder.get_qa_outputs`): loaded as `BeamQuestionAnswering` when present.
TF1_SQUAD_PROBE = "answer_class/dense_0/kernel"
TF1_SQUAD_HEADS = ("start_logits/*", "end_logits/*", "answer_class/*")
# Only an explicit "cased" / "uncased" in a release name tells XLNet's casing
# (Google's BERT convention "chinese_* = uncased" does not carry over).
_CASING_WORD = re.compile(r"(^|[^a-z])(un)?cased([^a-z]|$)", re.I)


def is_tf1_xlnet(names):
    """Whether checkpoint variable `names` are the original XLNet's (`model/transformer/...`)."""
    return any(name.startswith(TF1_PREFIX) for name in names)


def tf1_config(config, source, **run_config):
    """An original `xlnet_config.json` dict -> `XLNetBackbone` kwargs.

    Args:
        config: the json's dict (`n_layer, d_model, n_head, d_head, d_inner,
            ff_activation, untie_r, n_token`).
        source: the file, for error messages.
        **run_config: `mem_len`, `reuse_len`, `bi_data`, `clamp_len`,
            `same_length`, `attn_type`; the ones not given keep the original
            fine-tuning defaults (`TF1_RUN_CONFIG`). `dropout` keeps the
            backbone's default, 0.1, that of the original flags.

    Raises:
        ConfigError (naming `source`): a missing key, `d_head * n_head !=
            d_model`, an activation the original code does not know.
    """
    unknown = sorted(set(run_config) - set(TF1_RUN_CONFIG))
    if unknown:
        raise TypeError(f"Unknown XLNet run-config argument(s) {unknown}; expected {sorted(TF1_RUN_CONFIG)}.")
    require(config, TF1_CONFIG_KEYS, source)
    if config["d_head"] * config["n_head"] != config["d_model"]:
        raise ConfigError(
            f"{source}: d_head {config['d_head']} * n_head {config['n_head']} != d_model "
            f"{config['d_model']} (XLNetBackbone splits d_model into n_head heads)."
        )
    kwargs = {
        "vocabulary_size": config["n_token"],
        "num_layers": config["n_layer"],
        "num_heads": config["n_head"],
        "hidden_dim": config["d_model"],
        "intermediate_dim": config["d_inner"],
        "activation": translate_activation(config["ff_activation"], TF1_ACTIVATIONS, source),
        "layer_norm_epsilon": 1e-12,
        "untie_r": bool(config["untie_r"]),
    }
    return {**kwargs, **TF1_RUN_CONFIG, **run_config}


def assign_per_layer(loader, variables, name, hint=""):
    """Slice `i` of the stacked checkpoint array `name` (`[L, ...]`) into `variables[i]`.

    `hint` is added to the message when the checkpoint holds one unstacked slice.
    """
    value = loader.get(name)
    if value is None:
        return
    expected = (len(variables),) + tuple(variables[0].shape)
    if tuple(value.shape) != expected:
        loader.problems.append(
            f"shape mismatch for {name!r}: checkpoint has {tuple(value.shape)}, the model expects "
            f"{expected} (one slice per layer){hint if tuple(value.shape) == expected[1:] else ''}"
        )
        return
    for variable, part in zip(variables, value):
        variable.assign(part.astype(variable.dtype))


def load_tf1_backbone(backbone, loader, mask_emb_optional=False):
    """Places the original `model/transformer/*` variables into `backbone`.

    `r_w_bias`, `r_r_bias`, `r_s_bias` are `[L, N, Dh]` (one set per layer,
    `untie_r=True`, the published models) or `[N, Dh]` (shared,
    `backbone.shared_biases`); `seg_embed` is always `[L, 2, N, Dh]`. All
    kernels are stored in the layout we use (`[d, N, Dh]`, dense `[in, out]`).
    `mask_emb_optional`: fine-tuned checkpoints have no `mask_emb` (built
    only for the query stream); it then keeps its initial value.
    """
    p = TF1_PREFIX
    loader.assign(backbone.token_embedding.embeddings, p + "word_embedding/lookup_table")
    if not mask_emb_optional or TF1_MASK_EMB in loader:
        loader.assign(backbone.mask_emb, TF1_MASK_EMB)
    attention_layers = backbone.attention_layers
    for name in TF1_BIASES:
        if backbone.shared_biases is not None:
            loader.assign(getattr(backbone.shared_biases, name), p + name)
        else:
            assign_per_layer(loader, [getattr(a, name) for a in attention_layers], p + name, SHARED_BIASES_HINT)
    assign_per_layer(loader, [a.seg_embed for a in attention_layers], p + "seg_embed")
    for i, (attention, feedforward) in enumerate(zip(attention_layers, backbone.feedforward_layers)):
        a = TF1.scope(p, TF1.item("layer", i) + "/rel_attn")
        for name in ("q", "k", "v", "o", "r"):
            loader.assign(getattr(attention, name), a + name + "/kernel")
        load_layer_norm(loader, attention.layer_norm, *TF1.norm(loader, a, "LayerNorm"))
        f = TF1.scope(p, TF1.item("layer", i) + "/ff")
        load_dense(loader, feedforward.layer_1, *TF1.dense(f, "layer_1"))
        load_dense(loader, feedforward.layer_2, *TF1.dense(f, "layer_2"))
        load_layer_norm(loader, feedforward.layer_norm, *TF1.norm(loader, f, "LayerNorm"))


def load_tf1_heads(pretrainer, loader):
    """`model/lm_loss/bias`; the output weight is the word embedding (tied)."""
    loader.assign(pretrainer.lm_head.bias, TF1_LM_BIAS)
    if TF1_LM_WEIGHT in loader:
        loader.used.add(TF1_LM_WEIGHT)
        loader.problems.append(
            f"{TF1_LM_WEIGHT!r}: an untied output layer (tie_weight=False) is not supported; "
            "XLNetPretrainer ties it to the word embedding as the published models"
        )


def tf1_lowercase(spiece, lowercase, names):
    """The casing of an original release (printed): `lowercase`, else an explicit
    `cased` / `uncased` in the release name, else cased (every published XLNet is)."""
    names = tuple(n for n in names if n and _CASING_WORD.search(os.path.basename(os.path.normpath(n))))
    return choose_lowercase(
        spiece, lowercase, names=names, default=False,
        default_reason="the published XLNet models are cased",
    )


def convert_tf1(path, pretrainer=False, lowercase=None, extract_to=None, max_extract_bytes=None,
                mem_len=None, reuse_len=None, bi_data=False, clamp_len=-1, same_length=False, attn_type="bi",
                task=True, start_n_top=5, end_n_top=5):
    """An original XLNet release -> `(XLNetBackbone or XLNetPretrainer, XLNetTokenizer)`; a run_squad.py
    fine-tuned checkpoint (`start_logits/*`, `end_logits/*`, `answer_class/*`) -> `BeamQuestionAnswering`
    with its head (`task=False`: the backbone; `start_n_top` / `end_n_top`, the beam, are flags of the script,
    not stored: the script's defaults 5 and 5).

    Args:
        path: the folder (`xlnet_model.ckpt.*`, `xlnet_config.json`,
            `spiece.model`), a checkpoint prefix inside it (loaded exactly),
            or the released archive (`xlnet_cased_L-12_H-768_A-12.zip`,
            `chinese_xlnet_base_L-12_H-768_A-12.zip`; extracted safely). In a
            folder with several checkpoints, the one its `checkpoint` state
            file names, else the highest global step (printed; see
            `keras_pretrain.checkpoints.tf1`).
        pretrainer: also load `model/lm_loss/bias` and return an
            `XLNetPretrainer`; else `model/lm_loss/*` is ignored.
        lowercase: the tokenizer's casing; None: `cased` / `uncased` in the
            release name, else cased (printed).
        extract_to, max_extract_bytes: where an archive is extracted (default:
            a temporary folder, removed) and its size limit.
        mem_len, reuse_len, bi_data, clamp_len, same_length, attn_type: the
            run configuration, not stored in the release; the defaults are
            those of the original fine-tuning scripts.

    `global_step` and optimizer slots are ignored; so are the heads of
    fine-tuned checkpoints (`model/sequnece_summary/*`,
    `model/classification_*`, `model/regression_*`, SQuAD's `start_logits/*`
    ...), with a printed note. A fine-tuned checkpoint has no `mask_emb`: a
    backbone then keeps its initial one (used only by the query stream).

    Returns:
        `(model, tokenizer)`; the tokenizer is None when there is no
        `spiece.model` beside the checkpoint or in the folder given.

    Raises:
        CheckpointFormatError: no checkpoint or config, not an XLNet
            checkpoint, or variables missing / mis-shaped / unexpected (all
            listed at once, naming the checkpoint). ConfigError: a bad
            `xlnet_config.json`.
    """
    from keras_pretrain.checkpoints.tf1 import tf1_checkpoint

    path = os.fspath(path)
    run_config = dict(mem_len=mem_len, reuse_len=reuse_len, bi_data=bi_data, clamp_len=clamp_len,
                      same_length=same_length, attn_type=attn_type)
    squad = dict(start_n_top=start_n_top, end_n_top=end_n_top) if task and not pretrainer else None
    with tf1_checkpoint(path, extract_to, max_extract_bytes) as (root, prefix):
        return _convert_tf1(root, prefix, pretrainer, lowercase, path, run_config, squad)


def _convert_tf1(root, prefix, pretrainer, lowercase, path, run_config, squad=None):
    from keras_pretrain.checkpoints.huggingface import read_json
    from keras_pretrain.checkpoints.tf1 import OPTIMIZER_PATTERNS
    from keras_pretrain.checkpoints.tf1 import tf1_loader
    from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone
    from keras_pretrain.models.xlnet.xlnet_pretrainer import XLNetPretrainer

    # The files beside the checkpoint, else in the folder given.
    folder = os.path.dirname(prefix)
    config_path = find_file(folder, TF1_CONFIG) or find_file(root, TF1_CONFIG)
    if config_path is None:
        raise CheckpointFormatError(
            f"{path}: no {TF1_CONFIG} beside {prefix} (copy the one used for training there)."
        )
    kwargs = tf1_config(read_json(config_path), config_path, **run_config)
    optimizer = OPTIMIZER_PATTERNS  # with `weight_decay=0` the original scripts train with plain Adam
    loader = tf1_loader(prefix, ignore=optimizer + TF1_FINETUNED_HEADS + (() if pretrainer else TF1_HEADS))
    if not is_tf1_xlnet(loader.names):
        raise CheckpointFormatError(
            f"{prefix}: not an original XLNet checkpoint (no variable under {TF1_PREFIX!r}; found "
            f"e.g. {sorted(loader.names)[:3]})."
        )
    from keras_pretrain.checkpoints.checks import check_config

    check_config(config_path, prefix, loader.shapes, *size_checks(kwargs, config_path, TF1, TF1_PREFIX))
    squad = squad if TF1_SQUAD_PROBE in loader else None
    finetuned = sorted(
        n for n in loader.names
        if any(fnmatch.fnmatchcase(n, p) for p in TF1_FINETUNED_HEADS)
        and not any(fnmatch.fnmatchcase(n, p) for p in optimizer)
        and not (squad is not None and any(fnmatch.fnmatchcase(n, p) for p in TF1_SQUAD_HEADS))
    )
    if finetuned:
        print(f"{prefix}: ignoring the fine-tuned heads {finetuned} (not part of "
              f"{'XLNetPretrainer' if pretrainer else 'XLNetBackbone'}).")
    if not pretrainer and TF1_MASK_EMB not in loader:
        print(f"{prefix}: no {TF1_MASK_EMB!r} (a fine-tuned checkpoint): the backbone's mask_emb keeps "
              "its initial value (it is used only by the query stream, with target_mapping).")
    model = conversion.build_and_load(
        XLNetBackbone, XLNetPretrainer, kwargs, loader, pretrainer,
        functools.partial(load_tf1_backbone, mask_emb_optional=not pretrainer), load_tf1_heads,
    )
    if squad is not None:
        from keras_pretrain.tasks.question_answering import BeamQuestionAnswering

        print(f"{prefix}: run_squad.py's head (start_logits, end_logits, answer_class): BeamQuestionAnswering "
              f"(start_n_top={squad['start_n_top']}, end_n_top={squad['end_n_top']}; task=False: the backbone).")
        model = BeamQuestionAnswering(model, dropout=kwargs.get("dropout", 0.1), **squad)
        conversion.load_beam_qa_head(model, loader, TF1)
    loader.finish()
    spiece = find_file(folder, TF1_VOCABULARY) or find_file(root, TF1_VOCABULARY)
    if spiece is None:
        from keras_pretrain.checkpoints.checks import no_tokenizer

        no_tokenizer(path, TF1_VOCABULARY)
        return model, None
    return model, spiece_tokenizer(spiece, tf1_lowercase(spiece, lowercase, (folder, path)))
