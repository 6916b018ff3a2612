"""One Hugging Face conversion driver, driven by a per-family `HFSpec`, and the
build-and-place step the original-format (TF1) loaders share with it.

Every family converts a local Hugging Face folder the same way: read
`config.json`, map it to our backbone's arguments, open the weights
(`model.safetensors` / `pytorch_model.bin`), build the backbone (or the
pretrainer around it), place the weights with the checked `WeightLoader`,
check that nothing but the declared ignorable names stays unused
(`HF_IGNORE`; the heads' names too when only a backbone is wanted), then
build the tokenizer from its files and choose its casing
(`keras_pretrain.casing`, printed). This module does that once; each
`<family>_convert.py` writes only its spec: the config-key mapping, the
weight-name maps and placing, its heads, its tokenizer files, and anything
special to it (hooks `prepare` and `after_load`). The BERT config format,
which the ALBERT, ERNIE and RoBERTa releases extend, is read here too.
"""

import dataclasses
import importlib
import os
from typing import Callable
from typing import Optional

from keras_pretrain.casing import choose_lowercase
from keras_pretrain.checkpoints.huggingface import hf_loader
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.checkpoints.huggingface import require
from keras_pretrain.layers.activations import translate_activation

CONFIG = "config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


BERT_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


def bert_style_config(config, source, activations):
    """A BERT-style config dict (HF or Google) -> `BertBackbone` kwargs.

    `activations`: the source's activation names (`HF_ACTIVATIONS`,
    `TF1_ACTIVATIONS`); ALBERT, ERNIE and RoBERTa add their own keys.
    """
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


@dataclasses.dataclass(frozen=True)
class HFSpec:
    """What differs between families in a Hugging Face conversion.

    Attributes:
        backbone: "module:Class" of the backbone (imported when used).
        pretrainer: "module:Class" of the pretrainer (called with the
            backbone and the keyword arguments `prepare` returns).
        config: `(config_dict, config_path) -> backbone kwargs` (raises
            `ConfigError` naming the file).
        load_backbone: `(backbone, loader)`: places the backbone's weights.
        load_heads: `(pretrainer, loader)`: places the heads' weights, or None
            (the pretrainer has no weights of its own, e.g. a tied LM head).
        ignore: glob patterns of names that may stay unused (tied or derived
            copies: `HF_IGNORE`).
        heads: glob patterns of the heads' names, also unused when only the
            backbone is loaded.
        tokenizer_files: the files the tokenizer needs; no tokenizer (None)
            when one is missing.
        tokenizer: `(paths, lowercase, options) -> tokenizer`: `paths` the
            `tokenizer_files` in the folder, `lowercase` the chosen casing
            (None for families without one), `options` the folder's
            `tokenizer_config.json` ({} when absent or not read).
        casing: the family's published default casing; None: the tokenizer
            has no casing option (byte-level BPE).
        guess_casing: guess the casing from the first tokenizer file (a
            WordPiece `vocab.txt`) when nothing states it.
        tokenizer_options: read `tokenizer_config.json`.
        prepare: optional `(loader, kwargs, pretrainer) -> pretrainer kwargs`,
            called once the weights are open, before anything is built; it
            may edit the backbone `kwargs` and `loader.ignore`.
        after_load: optional `(model, loader, pretrainer)`, called before the
            loader's check.
    """

    backbone: str
    pretrainer: str
    config: Callable
    load_backbone: Callable
    load_heads: Optional[Callable] = None
    ignore: tuple = ()
    heads: tuple = ()
    tokenizer_files: tuple = ()
    tokenizer: Optional[Callable] = None
    casing: Optional[bool] = None
    guess_casing: bool = False
    tokenizer_options: bool = True
    prepare: Optional[Callable] = None
    after_load: Optional[Callable] = None


def resolve(name):
    """The object "module:attribute" names."""
    module, attribute = name.split(":")
    return getattr(importlib.import_module(module), attribute)


def hf_config(spec, folder):
    """The backbone kwargs from `folder/config.json`."""
    path = os.path.join(folder, CONFIG)
    return spec.config(read_json(path), path)


def tokenizer_options(folder):
    """`tokenizer_config.json` of `folder` ({} when absent) and its path."""
    path = os.path.join(folder, TOKENIZER_CONFIG)
    return (read_json(path) if os.path.exists(path) else {}), path


def load_tokenizer(spec, folder, lowercase=None):
    """The family's tokenizer from `folder`, or None when a file is missing."""
    if spec.tokenizer is None:
        return None
    paths = [os.path.join(folder, name) for name in spec.tokenizer_files]
    if not all(os.path.exists(p) for p in paths):
        return None
    options, options_path = tokenizer_options(folder) if spec.tokenizer_options else ({}, None)
    if spec.casing is not None:
        lowercase = choose_lowercase(
            paths[0], lowercase, stated=options.get("do_lower_case"), stated_by=options_path,
            names=(folder,), vocab=paths[0] if spec.guess_casing else None, default=spec.casing,
        )
    return spec.tokenizer(paths, lowercase, options)


def build_and_load(backbone_cls, pretrainer_cls, kwargs, loader, pretrainer, load_backbone,
                   load_heads=None, task_kwargs=None):
    """The backbone (or the pretrainer around it) with the checkpoint's weights placed.

    Used by the Hugging Face driver and by the original-format (TF1) loaders;
    the caller runs `loader.finish()`.
    """
    backbone = backbone_cls(**kwargs)
    if not pretrainer:
        load_backbone(backbone, loader)
        return backbone
    model = pretrainer_cls(backbone, **(task_kwargs or {}))
    load_backbone(backbone, loader)
    if load_heads is not None:
        load_heads(model, loader)
    return model


def convert_huggingface(spec, folder, pretrainer=False, lowercase=None):
    """A local Hugging Face folder -> `(model, tokenizer)` for the family `spec`.

    Args:
        spec: the family's `HFSpec`.
        folder: `config.json`, `model.safetensors` / `pytorch_model.bin`,
            and the tokenizer files.
        pretrainer: build the family's pretrainer (with its heads' weights)
            instead of the bare backbone.
        lowercase: the tokenizer's casing; None: chosen by
            `keras_pretrain.casing` (printed).
    """
    kwargs = hf_config(spec, folder)
    loader = hf_loader(folder, ignore=spec.ignore if pretrainer else spec.ignore + spec.heads)
    task_kwargs = spec.prepare(loader, kwargs, pretrainer) if spec.prepare else None
    model = build_and_load(
        resolve(spec.backbone), resolve(spec.pretrainer) if pretrainer else None, kwargs, loader,
        pretrainer, spec.load_backbone, spec.load_heads, task_kwargs,
    )
    if spec.after_load is not None:
        spec.after_load(model, loader, pretrainer)
    loader.finish()
    return model, load_tokenizer(spec, folder, lowercase)
