"""Importing published checkpoints into keras_pretrain models.

`from_huggingface(folder)` reads a local Hugging Face model folder and
dispatches on its `config.json` `model_type`; `from_tf1_checkpoint(path)` reads
an original Google TF1 checkpoint folder. The converters of each family are
named in its `keras_pretrain.families.Family` (`huggingface` model types and
`converters` per source format).
Nothing is downloaded: the folder must be on disk.
"""

import os

from keras_pretrain import families
from keras_pretrain.checkpoints.huggingface import read_json
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError


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
    family = families.from_huggingface_type(model_type, source=config_path)
    kwargs = {}
    if lowercase is not None:
        if not family.casing:
            raise ConfigError(
                f"{config_path}: lowercase= does not apply to {model_type} (byte-level BPE, no casing option)."
            )
        kwargs["lowercase"] = lowercase
    return family.converter("huggingface")(path, pretrainer=pretrainer, **kwargs)


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
    supported = sorted(f.name for f in families.FAMILIES.values() if "tf1" in f.converters)
    if family not in supported:
        raise ConfigError(f"No TF1 checkpoint converter for family {family!r}; supported: {supported}.")
    return families.get(family).converter("tf1")(path, pretrainer=pretrainer, **kwargs)
