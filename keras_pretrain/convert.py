"""Importing published checkpoints into keras_pretrain models.

`from_huggingface(folder)` reads a local Hugging Face model folder and
dispatches on its `config.json` `model_type`; `from_tf1_checkpoint(path)` reads
an original Google TF1 checkpoint folder. Each family registers its converter
below (module path and function), so adding a family is one line here.
Nothing is downloaded: the folder must be on disk.
"""

import importlib
import os

from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError

# model_type in config.json -> "module:function(folder, pretrainer)".
HUGGINGFACE_CONVERTERS = {
    "bert": "keras_pretrain.models.bert.bert_convert:convert_huggingface",
    "albert": "keras_pretrain.models.albert.albert_convert:convert_huggingface",
    "xlnet": "keras_pretrain.models.xlnet.xlnet_convert:convert_huggingface",
    "roberta": "keras_pretrain.models.roberta.roberta_convert:convert_huggingface",
    "distilbert": "keras_pretrain.models.distil_bert.distil_bert_convert:convert_huggingface",
    "ernie": "keras_pretrain.models.ernie.ernie_convert:convert_huggingface",
    "openai-gpt": "keras_pretrain.models.gpt.gpt_convert:convert_huggingface",
}

# family -> "module:function(path, pretrainer)" for original TF1 checkpoints.
TF1_CONVERTERS = {
    "bert": "keras_pretrain.models.bert.bert_convert:convert_tf1",
    "albert": "keras_pretrain.models.albert.albert_convert:convert_tf1",
}


def _resolve(spec):
    module, function = spec.split(":")
    return getattr(importlib.import_module(module), function)


# Byte-level BPE families: their tokenizers have no casing option.
NO_CASING = ("roberta", "openai-gpt")


def from_huggingface(path, pretrainer=False, lowercase=None):
    """Loads a local Hugging Face folder into our model and tokenizer.

    Args:
        path: folder with `config.json`, `model.safetensors` or
            `pytorch_model.bin`, and tokenizer files (`vocab.txt`, ...).
        pretrainer: bool. Also load the pretraining heads and return the
            family's pretrainer task instead of the bare backbone.
        lowercase: the tokenizer's casing (WordPiece and SentencePiece
            families); None: `do_lower_case` of `tokenizer_config.json`, else
            the folder's name, else a guess from the vocabulary
            (`keras_pretrain.casing`). The choice is printed.

    Returns:
        `(model, tokenizer)`; tokenizer is None when the folder has none.
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        raise CheckpointFormatError(f"{path}: not a folder.")
    config_path = os.path.join(path, "config.json")
    model_type = read_json(config_path).get("model_type")
    if model_type not in HUGGINGFACE_CONVERTERS:
        raise ConfigError(
            f"{config_path}: model_type {model_type!r} is not supported; "
            f"supported: {sorted(HUGGINGFACE_CONVERTERS)}."
        )
    kwargs = {}
    if lowercase is not None:
        if model_type in NO_CASING:
            raise ConfigError(
                f"{config_path}: lowercase= does not apply to {model_type} (byte-level BPE, no casing option)."
            )
        kwargs["lowercase"] = lowercase
    return _resolve(HUGGINGFACE_CONVERTERS[model_type])(path, pretrainer=pretrainer, **kwargs)


def from_tf1_checkpoint(path, family="bert", pretrainer=False, **kwargs):
    """Loads an original TF1 checkpoint (Google layout) of `family`.

    `path`: a folder, an explicit checkpoint prefix (`.../model.ckpt-1000`,
    loaded exactly) or a released archive (`.zip`, `.tar.gz`). In a folder
    with several checkpoints the one the `checkpoint` state file names is
    loaded, else the highest global step, else `*-best`; the choice is
    printed (`keras_pretrain.checkpoints.tf1.tf1_checkpoint`).

    `lowercase=` (None: from the release name, else guessed / the published
    default, printed) sets the tokenizer's casing; see `keras_pretrain.casing`.
    """
    if family not in TF1_CONVERTERS:
        raise ConfigError(
            f"No TF1 checkpoint converter for family {family!r}; "
            f"supported: {sorted(TF1_CONVERTERS)}."
        )
    return _resolve(TF1_CONVERTERS[family])(path, pretrainer=pretrainer, **kwargs)
