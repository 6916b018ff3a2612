"""Weight-name maps for RoBERTa: Hugging Face layout and fairseq releases -> ours.

Hugging Face folders reuse BERT's placing (the same blocks, plus `lm_head`);
fairseq's `model.pt` (the original release, `roberta.base.tar.gz`) has its
own names, placed by `load_fairseq_backbone` / `load_fairseq_heads`, and its
own vocabulary order (`dict.txt`), which the tokenizer follows.
"""

import contextlib
import glob
import os
import re
import tempfile

import numpy as np

from keras_pretrain.checkpoints.names import HF
from keras_pretrain.checkpoints.names import block_names
from keras_pretrain.checkpoints.names import find_file
from keras_pretrain.checkpoints.names import hf_prefix
from keras_pretrain.checkpoints.weights import WeightLoader
from keras_pretrain.checkpoints.weights import torch_linear
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.layers.activations import translate_activation
from keras_pretrain.models import conversion
from keras_pretrain.models import huggingface_export
from keras_pretrain.models.block_weights import load_dense
from keras_pretrain.models.huggingface_export import bpe_files
from keras_pretrain.models.huggingface_export import hf_activation
from keras_pretrain.models.block_weights import load_bert_encoder
from keras_pretrain.models.block_weights import load_layer_norm
from keras_pretrain.models.block_weights import load_masked_lm_head
from keras_pretrain.models.block_weights import load_transformer_encoder
from keras_pretrain.models.roberta.roberta_tokenizer import FairseqRobertaTokenizer
from keras_pretrain.models.roberta.roberta_tokenizer import RobertaTokenizer

HF_IGNORE = ("lm_head.decoder.weight", "lm_head.decoder.bias", "*position_ids")


def backbone_config(config, source, use_pooler=False):
    kwargs = conversion.bert_style_config(config, source, HF_ACTIVATIONS)
    kwargs["layer_norm_epsilon"] = config.get("layer_norm_eps", 1e-5)
    kwargs["padding_id"] = config.get("pad_token_id", 1)
    kwargs["use_pooler"] = use_pooler
    return kwargs


def hf_config(folder, use_pooler=False):
    kwargs = conversion.hf_config(HF_SPEC, folder)
    kwargs["use_pooler"] = use_pooler
    return kwargs


def hf_checks(kwargs, config_path, shapes):
    from keras_pretrain.models.bert.bert_convert import hf_checks as bert_checks

    return bert_checks(kwargs, config_path, shapes, "roberta.")


def load_hf_backbone(backbone, loader, model_prefix="roberta."):
    load_bert_encoder(backbone, loader, HF, hf_prefix(loader, model_prefix))


def load_hf_heads(pretrainer, loader):
    h = "lm_head."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *HF.dense(h, "dense"),
        *HF.dense(h, "layer_norm"), h + "bias", HF.linear,
    )


def load_hf_pretrainer(pretrainer, loader, model_prefix="roberta."):
    load_hf_backbone(pretrainer.backbone, loader, model_prefix)
    load_hf_heads(pretrainer, loader)


def prepare(loader, kwargs, pretrainer):
    """The pooler is loaded (`use_pooler=True`) when the backbone's weights hold one."""
    has_pooler = hf_prefix(loader, "roberta.") + "pooler.dense.weight" in loader
    kwargs["use_pooler"] = has_pooler and not pretrainer
    if pretrainer and has_pooler:
        loader.ignore += ("*pooler.*",)
    return {}


def bpe_tokenizer(paths, lowercase, options):
    return RobertaTokenizer(vocabulary=paths[0], merges=paths[1])


def load_hf_classifier_head(classifier, loader):
    """`RobertaClassificationHead`: `classifier.dense` (tanh) on `<s>`, then `classifier.out_proj`."""
    load_dense(loader, classifier.head_dense, *HF.dense("", "classifier/dense"), HF.linear)
    load_dense(loader, classifier.output_dense, *HF.dense("", "classifier/out_proj"), HF.linear)


def load_hf_multiple_choice_head(task, loader):
    """`RobertaForMultipleChoice`: its pooler `roberta.pooler.dense` (tanh on `<s>`) is the task's
    `pooler_dense` projection (the family's `choice_summary`), then `classifier` Linear(H, 1).

    The task is built on a backbone without a pooler (the head's `backbone_options`); one that has its own
    (`use_pooler=True`, unused by the task) has no place in the folder: transformers' model has one pooler.
    """
    if task.backbone.pooled_dense is not None:
        raise ExportError(
            f"{loader.source}: this MultipleChoice's backbone has a pooler of its own (use_pooler=True), which "
            "the task does not read; RobertaForMultipleChoice has one pooler, the task's pooler_dense. Build "
            "the task on a RobertaBackbone(use_pooler=False)."
        )
    load_dense(loader, task.pooler_dense, *HF.dense(hf_prefix(loader, "roberta."), "pooler/dense"), HF.linear)
    load_dense(loader, task.output_dense, *HF.dense("", "classifier"), HF.linear)


def to_hf_config(backbone):
    config = conversion.bert_style_hf_config(backbone, hf_activation)
    config.update(pad_token_id=backbone.padding_id, bos_token_id=0, eos_token_id=2)
    return config


def pooler_not_in(architecture):
    """`RobertaForQuestionAnswering` and `RobertaForTokenClassification` have no pooler (`add_pooling_layer=
    False`): a task's backbone built with one (`use_pooler=True`, unread by the task) exports without it."""
    return ("*pooler.*",) if architecture.endswith(("ForQuestionAnswering", "ForTokenClassification")) else ()


def pretrainer_suffix(pretrainer):
    return "ForMaskedLM"


HF_SPEC = conversion.HFSpec(
    backbone="keras_pretrain.models.roberta.roberta_backbone:RobertaBackbone",
    pretrainer="keras_pretrain.models.roberta.roberta_pretrainer:RobertaPretrainer",
    config=backbone_config, load_backbone=load_hf_backbone, load_heads=load_hf_heads, prepare=prepare,
    ignore=HF_IGNORE, heads=("lm_head.*", "classifier.*"),
    tokenizer_files=("vocab.json", "merges.txt"), tokenizer=bpe_tokenizer, tokenizer_options=False,
    model_type="roberta", architecture="Roberta", prefix="roberta.", to_config=to_hf_config,
    pretrainer_suffix=pretrainer_suffix,
    tasks=(conversion.sequence_classification("keras_pretrain.models.roberta.roberta_classifier:RobertaClassifier",
                                              load_hf_classifier_head, ("classifier.*",)),
           conversion.multiple_choice(load_hf_multiple_choice_head, ("classifier.*",),
                                      dropout_key="hidden_dropout_prob", backbone_options={"use_pooler": False}),
           conversion.question_answering(backbone_options={"use_pooler": False}),
           conversion.token_classification(backbone_options={"use_pooler": False})),
    left_out=pooler_not_in,
    write_tokenizer=bpe_files("RobertaTokenizer", lambda t: dict(t.vocabulary), lambda t: list(t.merges),
                              bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
                              unk_token="<unk>", pad_token="<pad>", mask_token="<mask>", add_prefix_space=False),
)


def hf_tokenizer(folder):
    """Our `RobertaTokenizer` from `vocab.json` + `merges.txt` (None if absent)."""
    return conversion.load_tokenizer(HF_SPEC, folder)


def export_huggingface(model, folder, tokenizer=None):
    """RoBERTa backbone, pretrainer or classifier -> a Hugging Face folder (`RobertaModel`, ...)."""
    return huggingface_export.export_huggingface(HF_SPEC, model, folder, tokenizer)


def convert_huggingface(folder, pretrainer=False, task=False):
    """A Hugging Face RoBERTa folder -> `RobertaPretrainer` or `RobertaBackbone`.

    The pooler is loaded (`use_pooler=True`) when the backbone's weights hold
    one (`RobertaModel`); `RobertaForMaskedLM` folders have none.
    """
    from keras_pretrain.checkpoints.checks import check_hf_folder
    from keras_pretrain.checkpoints.checks import tokenizer_note

    check_hf_folder(folder, HF_SPEC, hf_checks)
    return tokenizer_note(conversion.convert_huggingface(HF_SPEC, folder, pretrainer, task=task), folder, HF_SPEC)


# --- fairseq releases (model.pt + dict.txt; GPT-2's encoder.json + vocab.bpe) ---
#
# `roberta.base.tar.gz` extracts to `roberta.base/` with `model.pt` (a pickle:
# `args` / `cfg`, `model`, optimizer and training state), `dict.txt` and
# `NOTE`; GPT-2's `encoder.json` and `vocab.bpe` are downloaded separately.

FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # fairseq's Dictionary: ids 0..3
FAIRSEQ_PAD = 1
FAIRSEQ_MASK = "<mask>"  # appended by fairseq's masked_lm task after dict.txt
OVERWRITE_FLAG = "#fairseq:overwrite"
# `Dictionary.pad_to_multiple_` entries: no BPE token.
MADEUP_WORD = re.compile(r"madeupword[0-9]+")
GPT2_ID = re.compile(r"[0-9]+")

# fairseq's `utils.get_activation_fn` names -> ours ("gelu" is the erf form).
FAIRSEQ_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_fast": "gelu_approximate",
    "gelu_accurate": "gelu_approximate",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
    "swish": "silu",
}
# `base_architecture` defaults of fairseq's roberta models (values absent from args).
FAIRSEQ_DEFAULTS = {
    "encoder_layers": 12, "encoder_embed_dim": 768, "encoder_ffn_embed_dim": 3072,
    "encoder_attention_heads": 12, "dropout": 0.1, "activation_fn": "gelu",
}
FAIRSEQ_ARCH_DEFAULTS = {
    "roberta_large": {"encoder_layers": 24, "encoder_embed_dim": 1024, "encoder_ffn_embed_dim": 4096,
                      "encoder_attention_heads": 16},
}
# Settings that would build a network RobertaBackbone is not: key -> required value.
FAIRSEQ_REQUIRED = {
    "encoder_normalize_before": False,
    "layernorm_embedding": True,
    "no_token_positional_embeddings": False,
    "encoder_learned_pos": True,
}
# One `TransformerSentenceEncoderLayer` (`layers.{i}.`), relative names.
FAIRSEQ_BLOCK = (
    ("query", "self_attn/q_proj"),
    ("key", "self_attn/k_proj"),
    ("value", "self_attn/v_proj"),
    ("attention_output", "self_attn/out_proj"),
    ("intermediate", "fc1"),
    ("output", "fc2"),
)
FAIRSEQ_BLOCK_NORMS = (
    ("attention_norm", "self_attn_layer_norm"),
    ("output_norm", "final_layer_norm"),
)
# Buffers, fine-tuning heads: never part of our models.
FAIRSEQ_IGNORE = ("*version", "*_float_tensor", "classification_heads.*")


def read_fairseq_dictionary(path, name=None):
    """fairseq's `Dictionary` of a RoBERTa release: `{symbol: id}`, and its size.

    `<s>`=0, `<pad>`=1, `</s>`=2, `<unk>`=3, then the lines of `dict.txt`
    (`<GPT-2 id> <count>`, in file order; `madeupword0000 0` ... pad the
    size to a multiple of 8) and `<mask>` last, as fairseq's `masked_lm` task
    adds it. A line flagged `#fairseq:overwrite` re-adds its symbol at a new id
    (the old id stays, unused), as fairseq does.

    Raises:
        CheckpointFormatError: naming the file (`name`, default `path`) and
            line: missing, not UTF-8, a line that is not `<token> <count>`, a
            token that is not a GPT-2 id, a duplicate without the overwrite flag.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise CheckpointFormatError(
            f"{name or path}: dict.txt not found (fairseq's dictionary, beside model.pt)."
        ) from None
    except UnicodeDecodeError as e:
        raise CheckpointFormatError(f"{name or path}: not UTF-8 text ({e}).") from None
    path = name or path
    indices = {symbol: i for i, symbol in enumerate(FAIRSEQ_SPECIALS)}
    size = len(indices)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = line.rstrip().rsplit(" ", 1)
        overwrite = len(fields) == 2 and fields[1] == OVERWRITE_FLAG
        if overwrite:
            fields = fields[0].rsplit(" ", 1)
        if len(fields) != 2 or not GPT2_ID.fullmatch(fields[1]):
            raise CheckpointFormatError(
                f"{path}, line {number}: expected '<token> <count> [{OVERWRITE_FLAG}]', found {line!r}."
            )
        symbol = fields[0]
        if not (GPT2_ID.fullmatch(symbol) or MADEUP_WORD.fullmatch(symbol)):
            raise CheckpointFormatError(
                f"{path}, line {number}: token {symbol!r} is not a GPT-2 BPE id (RoBERTa's dict.txt lists "
                "GPT-2 ids, e.g. '13 850314647'; this dictionary is not one)."
            )
        if symbol in indices and not overwrite:
            raise CheckpointFormatError(
                f"{path}, line {number}: duplicate token {symbol!r} (fairseq accepts it only with "
                f"{OVERWRITE_FLAG})."
            )
        indices[symbol], size = size, size + 1
    if FAIRSEQ_MASK not in indices:
        indices[FAIRSEQ_MASK], size = size, size + 1
    return indices, size


def fairseq_tokenizer(indices, size, encoder_json, vocab_bpe, dict_path):
    """Our byte-level BPE tokenizer with fairseq's ids (those of `roberta.encode`).

    Each GPT-2 token string (`encoder.json`: token -> GPT-2 id) gets the
    fairseq id `dict.txt` gives its GPT-2 id; the specials and `<mask>` keep
    theirs. GPT-2 tokens absent from `dict.txt` encode as `<unk>`, as fairseq
    encodes them (`FairseqRobertaTokenizer`).
    """
    from keras_pretrain.checkpoints.huggingface import read_json

    encoder = read_json(encoder_json)
    by_gpt2_id = {}
    for token, gpt2_id in encoder.items():
        if not isinstance(gpt2_id, int):
            raise CheckpointFormatError(f"{encoder_json}: token {token!r} has id {gpt2_id!r}, not an integer.")
        by_gpt2_id[str(gpt2_id)] = token
    vocabulary = {}
    for symbol, index in indices.items():
        if GPT2_ID.fullmatch(symbol):
            if symbol not in by_gpt2_id:
                raise CheckpointFormatError(
                    f"{dict_path}: GPT-2 id {symbol} is not in {encoder_json} ({len(encoder)} tokens); "
                    "encoder.json and vocab.bpe must be GPT-2's."
                )
            vocabulary[by_gpt2_id[symbol]] = index
        else:  # the specials, <mask>, madeupword padding
            vocabulary[symbol] = index
    absent = [token for token in encoder if token not in vocabulary]
    if not absent:
        return RobertaTokenizer(vocabulary=vocabulary, merges=vocab_bpe)
    print(f"{dict_path}: {len(absent)} GPT-2 token(s) not in the dictionary; they encode as <unk>, as in fairseq.")
    vocabulary.update({token: size + i for i, token in enumerate(absent)})
    return FairseqRobertaTokenizer(vocabulary=vocabulary, merges=vocab_bpe, num_ids=size)


def fairseq_model_config(state, path):
    """The model settings of a fairseq checkpoint: `args` (older) or `cfg['model']` (newer), plain dicts."""
    from keras_pretrain.checkpoints.torch_pickle import plain

    if state.get("args") is not None:
        config = plain(state["args"])
    elif state.get("cfg") is not None:
        cfg = plain(state["cfg"])
        config = cfg.get("model") if isinstance(cfg, dict) else None
    else:
        raise ConfigError(f"{path}: neither 'args' nor 'cfg' (the model settings); found {sorted(state)}.")
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: the model settings are a {type(config).__name__}, not a namespace or mapping.")
    arch = config.get("arch", config.get("_name"))
    return {**FAIRSEQ_DEFAULTS, **FAIRSEQ_ARCH_DEFAULTS.get(arch, {}), **config}


def fairseq_backbone_config(config, vocabulary_size, path, pretrainer=False):
    """fairseq model settings -> `RobertaBackbone` kwargs (ConfigError naming `path`)."""
    wrong = {k: config[k] for k, v in FAIRSEQ_REQUIRED.items() if config.get(k, v) != v}
    if wrong:
        raise ConfigError(
            f"{path}: settings {wrong} describe a network RobertaBackbone does not build "
            f"(it needs {dict((k, FAIRSEQ_REQUIRED[k]) for k in wrong)}: post-LN blocks, learned positions, "
            "an embedding LayerNorm)."
        )
    activation = translate_activation(config["activation_fn"], FAIRSEQ_ACTIVATIONS, path)
    if pretrainer and activation != "gelu":
        raise ConfigError(
            f"{path}: activation_fn {config['activation_fn']!r} is also the LM head's in fairseq; "
            "RobertaPretrainer's head uses exact GELU. Convert the backbone only (pretrainer=False)."
        )
    max_positions = config.get("max_positions") or config.get("tokens_per_sample") or 512
    return {
        "vocabulary_size": vocabulary_size,
        "num_layers": config["encoder_layers"],
        "num_heads": config["encoder_attention_heads"],
        "hidden_dim": config["encoder_embed_dim"],
        "intermediate_dim": config["encoder_ffn_embed_dim"],
        "dropout": config["dropout"],
        # Learned positions start past the padding id: max_positions + 2 rows (514).
        "max_sequence_length": max_positions + FAIRSEQ_PAD + 1,
        "num_segments": 1,
        "activation": activation,
        "layer_norm_epsilon": 1e-5,  # torch's LayerNorm default, fairseq's
        "padding_id": FAIRSEQ_PAD,
        "use_pooler": False,
    }


def split_in_proj(arrays):
    """Older fairseq stores each attention's q, k, v stacked (`in_proj_weight` [3d, d],
    `in_proj_bias` [3d], in that order): split into `q_proj` / `k_proj` / `v_proj`."""
    for name in [n for n in arrays if n.endswith((".in_proj_weight", ".in_proj_bias"))]:
        value = arrays[name]
        if value.shape[0] % 3:
            continue  # left as is: reported as unexpected, q / k / v as missing
        base, kind = name.rsplit(".in_proj_", 1)
        for part, chunk in zip("qkv", np.split(value, 3)):
            arrays[f"{base}.{part}_proj.{kind}"] = chunk
        del arrays[name]
    return arrays


def fairseq_prefix(loader):
    """`decoder.` (the published releases) or `encoder.` (checkpoints of newer fairseq)."""
    return "decoder." if "decoder.sentence_encoder.embed_tokens.weight" in loader else "encoder."


def load_fairseq_backbone(backbone, loader):
    """`RobertaBackbone` from `{decoder,encoder}.sentence_encoder.*`; fairseq has no token
    types, so the one segment row is zeros (as the historical conversion to transformers)."""
    s = fairseq_prefix(loader) + "sentence_encoder."
    loader.assign(backbone.token_embedding.embeddings, s + "embed_tokens.weight")
    loader.assign(backbone.position_embedding.embeddings, s + "embed_positions.weight")
    segment = backbone.segment_embedding.embeddings
    segment.assign(np.zeros(segment.shape, segment.dtype))
    norm = "emb_layer_norm" if s + "emb_layer_norm.weight" in loader else "layernorm_embedding"
    load_layer_norm(loader, backbone.embeddings_layer_norm, *HF.norm(loader, s, norm))
    for i, layer in enumerate(backbone.transformer_layers):
        names = block_names(loader, HF, HF.scope(s, HF.item("layers", i)), FAIRSEQ_BLOCK, FAIRSEQ_BLOCK_NORMS)
        load_transformer_encoder(loader, layer, names, torch_linear)


def load_fairseq_heads(pretrainer, loader):
    """The LM head (`lm_head.dense`, `.layer_norm`, `.bias`); its `weight` must be the
    token embedding (tied), which the pretrainer shares."""
    p = fairseq_prefix(loader)
    h = p + "lm_head."
    load_masked_lm_head(
        loader, pretrainer.masked_lm_head, *HF.dense(h, "dense"), *HF.norm(loader, h, "layer_norm"),
        h + "bias", torch_linear,
    )
    if h + "weight" in loader:
        weight, embedding = loader.get(h + "weight"), loader.get(p + "sentence_encoder.embed_tokens.weight")
        if embedding is not None and (weight.shape != embedding.shape or not np.array_equal(weight, embedding)):
            loader.problems.append(
                f"{h + 'weight'!r} differs from the token embedding: an untied output embedding "
                "(untie_weights_roberta), which RobertaPretrainer cannot hold (it ties them)"
            )


def find_model_pt(folder):
    """`folder/model.pt`, else the one `folder/*/model.pt` (an extracted release), else None."""
    direct = os.path.join(folder, "model.pt")
    if os.path.isfile(direct):
        return direct
    nested = sorted(glob.glob(os.path.join(glob.escape(folder), "*", "model.pt")))
    if len(nested) > 1:
        raise CheckpointFormatError(
            f"{folder}: several fairseq checkpoints ({[os.path.relpath(p, folder) for p in nested]}); "
            "pass the model.pt to load."
        )
    return nested[0] if nested else None


def is_fairseq_release(path):
    """Whether `path` is a fairseq RoBERTa release: a folder (or its one subfolder), a
    `model.pt` or an archive holding `model.pt` beside `dict.txt`. Reads names only."""
    from keras_pretrain.checkpoints.archives import is_archive
    from keras_pretrain.checkpoints.archives import member_names

    path = os.fspath(path)
    try:
        if os.path.isdir(path):
            model = find_model_pt(path)
            return model is not None and os.path.isfile(os.path.join(os.path.dirname(model), "dict.txt"))
        if os.path.isfile(path) and path.endswith(".pt"):  # a zip since torch 1.6, not an archive
            return os.path.isfile(os.path.join(os.path.dirname(path), "dict.txt"))
        if is_archive(path):
            names = member_names(path)
            folders = {os.path.dirname(n) for n in names if os.path.basename(n) == "model.pt"}
            return any(os.path.join(d, "dict.txt") in names for d in folders)
    except (OSError, CheckpointFormatError):
        return False
    return False


@contextlib.contextmanager
def fairseq_release(path, extract_to=None, max_extract_bytes=None):
    """Yields `(model_pt, name)` for a release folder, a `model.pt` or an archive
    (extracted safely to `extract_to`, or to a temporary folder removed on exit).
    `name` is what messages call the file: `archive/member` inside a temporary folder."""
    from keras_pretrain.checkpoints.archives import is_archive
    from keras_pretrain.checkpoints.archives import safe_extract

    if os.path.isdir(path):
        model = find_model_pt(path)
        if model is None:
            raise CheckpointFormatError(f"{path}: no model.pt in this folder or its subfolders (a fairseq release).")
        yield model, model
    elif os.path.isfile(path) and path.endswith(".pt"):  # torch >= 1.6 writes zip files: not an archive
        yield path, path
    elif is_archive(path):
        with contextlib.ExitStack() as stack:
            folder = extract_to or stack.enter_context(tempfile.TemporaryDirectory(prefix="fairseq_"))
            safe_extract(path, folder, max_extract_bytes=max_extract_bytes)
            model = find_model_pt(folder)
            if model is None:
                raise CheckpointFormatError(f"{path}: the archive holds no model.pt (a fairseq release).")
            yield model, model if extract_to else os.path.join(path, os.path.relpath(model, folder))
    elif os.path.isfile(path):
        raise CheckpointFormatError(f"{path}: not a fairseq release folder, model.pt or archive.")
    else:
        raise CheckpointFormatError(f"{path}: no such file or folder.")


def _bpe_file(given, name, model, path):
    """`given`, else `name` beside `model.pt`, else beside what the user passed; None if absent."""
    if given is not None:
        if not os.path.isfile(given):
            raise CheckpointFormatError(f"{given}: {name} not found.")
        return os.fspath(given)
    folders = [os.path.dirname(model), path if os.path.isdir(path) else os.path.dirname(path) or "."]
    return find_file(folders[0], name) or find_file(folders[1], name)


def convert_fairseq(path, pretrainer=False, encoder_json=None, vocab_bpe=None, extract_to=None,
                    max_extract_bytes=None):
    """A fairseq RoBERTa release -> `(RobertaBackbone or RobertaPretrainer, RobertaTokenizer or None)`.

    `model.pt` is read without running pickled code
    (`keras_pretrain.checkpoints.torch_pickle`). The configuration comes from
    its `args` (older releases) or `cfg['model']` (newer), the vocabulary
    size from `dict.txt`; shapes are checked against the weights, and every
    missing, mis-shaped or unexpected weight is listed in one
    `CheckpointFormatError` naming `model.pt`. Both fairseq namings load:
    `decoder.sentence_encoder.*` / `decoder.lm_head.*` (the published
    releases) and `encoder.*` (newer fairseq), with q / k / v stored apart or
    stacked (`in_proj_weight`). Fine-tuning heads (`classification_heads.*`)
    are not loaded.

    Args:
        path: the release folder (`roberta.base/`: `model.pt`, `dict.txt`), a
            `model.pt` (with `dict.txt` beside it) or the released archive
            (`roberta.base.tar.gz`, extracted safely).
        pretrainer: also load the LM head (returns `RobertaPretrainer`).
        encoder_json, vocab_bpe: GPT-2's BPE files; default: beside
            `model.pt`, else in the folder given (or the archive's folder).
            Without them no tokenizer is built (None, printed).
        extract_to: folder to extract an archive into (default: a temporary
            folder removed afterwards).
        max_extract_bytes: the most bytes an archive may expand to (see
            `keras_pretrain.checkpoints.archives`).

    The tokenizer's ids are fairseq's (`roberta.encode`): each GPT-2 token
    maps to the index `dict.txt` gives its GPT-2 id, `<s>`=0, `<pad>`=1,
    `</s>`=2, `<unk>`=3, `<mask>` last.
    """
    from keras_pretrain.checkpoints import torch_pickle

    path = os.fspath(path)
    with fairseq_release(path, extract_to, max_extract_bytes) as (model_pt, name):
        dict_path = os.path.join(os.path.dirname(model_pt), "dict.txt")
        dict_name = os.path.join(os.path.dirname(name), "dict.txt")
        if not os.path.isfile(dict_path) and not torch_pickle.looks_like_torch_file(model_pt):
            torch_pickle.load(model_pt, name)  # a file that is no checkpoint at all is said so, not dict.txt
        indices, size = read_fairseq_dictionary(dict_path, dict_name)
        state = torch_pickle.load(model_pt, name)
        model = _build_fairseq_model(state, name, dict_name, size, pretrainer)
        encoder_json = _bpe_file(encoder_json, "encoder.json", model_pt, path)
        vocab_bpe = _bpe_file(vocab_bpe, "vocab.bpe", model_pt, path)
        if encoder_json is None or vocab_bpe is None:
            missing = [n for n, p in (("encoder.json", encoder_json), ("vocab.bpe", vocab_bpe)) if p is None]
            print(f"{name}: no tokenizer: no {' / '.join(missing)} beside it (GPT-2's BPE files, downloaded "
                  "separately). Pass encoder_json= and vocab_bpe= to build one.", flush=True)
            return model, None
        return model, fairseq_tokenizer(indices, size, encoder_json, vocab_bpe, dict_name)


def check_fairseq_sizes(kwargs, loader, name):
    """The settings of `model.pt` against its own state dict, before anything is built."""
    from keras_pretrain.checkpoints.checks import check_config
    from keras_pretrain.checkpoints.checks import heads_divide

    heads_divide(name, "encoder_attention_heads", kwargs["num_heads"], "encoder_embed_dim", kwargs["hidden_dim"])
    s = fairseq_prefix(loader) + "sentence_encoder."
    tokens, positions, layer = s + "embed_tokens.weight", s + "embed_positions.weight", s + "layers.0."
    sizes = [
        ("encoder_embed_dim", kwargs["hidden_dim"],
         [(tokens, 1), (positions, 1), (layer + "fc1.weight", 1), (layer + "fc2.weight", 0)]),
        ("encoder_ffn_embed_dim", kwargs["intermediate_dim"],
         [(layer + "fc1.weight", 0), (layer + "fc1.bias", 0), (layer + "fc2.weight", 1)]),
        ("max_positions + 2", kwargs["max_sequence_length"], [(positions, 0)]),
    ]
    layers = [("encoder_layers", kwargs["num_layers"], "^" + re.escape(s + "layers.") + r"(\d+)\.")]
    check_config(f"{name} (its model settings)", f"{name} (its weights)", loader.shapes, sizes, layers)


def _build_fairseq_model(state, name, dict_name, size, pretrainer):
    """The backbone or pretrainer of a loaded `model.pt` (`name` in messages), weights checked."""
    from keras_pretrain.checkpoints import torch_pickle
    from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone
    from keras_pretrain.models.roberta.roberta_pretrainer import RobertaPretrainer

    arrays = split_in_proj(torch_pickle.state_dict_arrays(state, name))
    kwargs = fairseq_backbone_config(fairseq_model_config(state, name), size, name, pretrainer)
    embedding = [a for n, a in arrays.items() if n.endswith("coder.sentence_encoder.embed_tokens.weight")]
    if embedding and embedding[0].shape[0] != size:
        raise CheckpointFormatError(
            f"{name}: the token embedding has {embedding[0].shape[0]} rows but {dict_name} makes a "
            f"dictionary of {size} (4 specials, its lines, <mask>): this dict.txt is not the model's."
        )
    loader = WeightLoader.from_dict(arrays, name, FAIRSEQ_IGNORE + (() if pretrainer else ("*lm_head.*",)))
    check_fairseq_sizes(kwargs, loader, name)
    heads = sorted({n.split(".")[1] for n in arrays if n.startswith("classification_heads.")})
    if heads:
        print(f"{name}: fine-tuning heads {heads} are not loaded.")
    model = conversion.build_and_load(
        RobertaBackbone, RobertaPretrainer, kwargs, loader, pretrainer, load_fairseq_backbone, load_fairseq_heads
    )
    loader.finish()
    return model
