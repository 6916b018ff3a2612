"""Which family and release format a path on disk holds, read from file and variable names only.

`detect(path)` looks at what a user passes to `keras_pretrain.convert.load` (a folder, an archive, a file, a
TF1 checkpoint prefix) without loading any weights and returns a `Source`: the family, the format (a key of
the family's `converters` in `keras_pretrain.families`) and what decided it. The formats:

| format | what identifies it | families |
|---|---|---|
| huggingface | `config.json` with a `model_type` | every family with Hugging Face weights |
| tf1 | `*.index` checkpoint; family from `bert_config.json` / `albert_config.json` / `xlnet_config.json`, else the variable names (`model/transformer/` XLNet, `bert/encoder/transformer/group_` ALBERT, `bert/` BERT) | BERT, ALBERT, XLNet |
| tf1 (hub module) | `tfhub_module.pb` and `variables/` holding `bert/` variables | ALBERT (`google/albert_base/3`) |
| tf1_hub | `tfhub_module.pb` and `variables/` holding bilm variables | ELMo (`google/elmo/3`) |
| bilm | `*options.json` with `lstm` and `char_cnn`, beside a `*.hdf5` | ELMo (bilm-tf / AllenNLP) |
| openai | `params_shapes.json` (in the folder or its `model/`) | GPT-1 (finetune-transformer-lm) |
| fairseq | `model.pt` (with `dict.txt`) | RoBERTa (fairseq) |

Archives (`.zip`, `.tar.gz`) are recognised by their member names, read from the archive's index without
extracting it; the converter then extracts it safely.
"""

import dataclasses
import fnmatch
import glob
import json
import os

from keras_pretrain import families
from keras_pretrain.checkpoints.archives import member_names
from keras_pretrain.errors import CheckpointFormatError

# The format names, for messages.
DESCRIPTIONS = {
    "huggingface": "Hugging Face folder",
    "tf1": "original TF1 checkpoint",
    "tf1_hub": "TF1 hub module",
    "bilm": "bilm-tf release (options.json + weights.hdf5)",
    "openai": "OpenAI finetune-transformer-lm release (params_*.npy)",
    "fairseq": "fairseq release (model.pt + dict.txt)",
}
TF1_CONFIGS = {"bert_config.json": "bert", "albert_config.json": "albert", "xlnet_config.json": "xlnet"}


@dataclasses.dataclass(frozen=True)
class Source:
    """What `detect` found: `family` (a `Family` name), `format` (its converter's key), `reason`, and
    `location`: what to hand to the converter (the folder holding the identifying file, else `path`)."""

    path: str
    family: str
    format: str
    reason: str
    location: str

    def describe(self):
        return f"{self.path}: {self.family}, {DESCRIPTIONS.get(self.format, self.format)} ({self.reason})"


def tf1_family(names, source):
    """The family of a TF1 checkpoint from its variable names (CheckpointFormatError if none fits)."""
    names = list(names)
    stripped = [n[len("module/"):] if n.startswith("module/") else n for n in names]
    if any(n.startswith("model/transformer/") for n in stripped):
        return "xlnet"
    if any(n.startswith(("bert/encoder/transformer/group_", "bert/encoder/embedding_hidden_mapping_in"))
           for n in stripped):
        return "albert"
    if any(n.startswith("bert/") for n in stripped):
        return "bert"
    if any(n.startswith(("bilm/", "CNN", "RNN_", "char_embed")) for n in stripped):
        return "elmo"
    shown = sorted(names)[:8]
    raise CheckpointFormatError(
        f"{source}: the variable names fit no known family (BERT 'bert/...', ALBERT "
        f"'bert/encoder/transformer/group_*', XLNet 'model/transformer/...', ELMo bilm); first names: {shown}."
    )


def _checkpoint_names(prefix, source):
    import tensorflow as tf

    try:
        return [name for name, _ in tf.train.list_variables(prefix)]
    except Exception as e:  # NotFoundError, DataLossError, ...
        raise CheckpointFormatError(
            f"{source}: unreadable TF1 checkpoint {prefix} ({type(e).__name__}: {str(e).splitlines()[0][:200]})"
        ) from None


def _by_names(path, names, read_json=None, checkpoint_names=None):
    """The `Source` of a set of relative file names, or None.

    Folders pass `read_json(name)` (reads one of them) and `checkpoint_names()` (the variables of the
    checkpoint); the `location` is then the folder of the identifying file. Archives pass neither.
    """
    base = {name: os.path.basename(name.rstrip("/")) for name in names}

    def has(pattern):
        return sorted(n for n, b in base.items() if fnmatch.fnmatch(b, pattern))

    def found(family, format, name, reason=None):
        location = os.path.join(path, os.path.dirname(name)) if read_json is not None else path
        return Source(path, family, format, reason or base[name], os.path.normpath(location))

    for name in has("config.json") if read_json is not None else ():
        model_type = read_json(name).get("model_type")
        if model_type is not None:
            family = families.from_huggingface_type(model_type, source=os.path.join(path, name))
            return found(family.name, "huggingface", name, f"{name}: model_type {model_type!r}")
    if has("params_shapes.json"):
        return found("gpt", "openai", has("params_shapes.json")[0])
    if has("model.pt"):
        reason = "model.pt" + (" and dict.txt" if has("dict.txt") else "")
        return found("roberta", "fairseq", has("model.pt")[0], reason)
    if has("tfhub_module.pb"):
        if checkpoint_names is not None:
            family = tf1_family(checkpoint_names(), path)
        else:  # an archive: ALBERT's modules carry their SentencePiece model / vocabulary as assets
            family = "albert" if has("*.model") or has("vocab*.txt") else "elmo"
        hub_format = "tf1_hub" if "tf1_hub" in families.get(family).converters else "tf1"
        return found(family, hub_format, has("tfhub_module.pb")[0],
                     "tfhub_module.pb (TF1 hub module)")
    options = has("*options*.json")
    if options and has("*.hdf5"):
        return found("elmo", "bilm", options[0], f"{base[options[0]]} and {base[has('*.hdf5')[0]]}")
    for config, family in TF1_CONFIGS.items():
        if has(config) and has("*.index"):
            return Source(path, family, "tf1", config, path)
    if has("*.index") and checkpoint_names is not None:
        return Source(path, tf1_family(checkpoint_names(), path), "tf1", "variable names", path)
    return None


# The order `_by_names` tries the formats in: the first found is loaded.
ORDER = ("huggingface", "openai", "fairseq", "tf1 hub module", "bilm", "tf1")


def _releases(names, read_json=None):
    """{format: identifying file} of every release format whose files are among `names` (several in a
    folder that holds two releases), by file names only (nothing else read)."""
    base = {name: os.path.basename(name.rstrip("/")) for name in names}

    def first(pattern):
        found = sorted(n for n, b in base.items() if fnmatch.fnmatch(b, pattern))
        return found[0] if found else None

    found = {}
    configs = [n for n, b in base.items() if b == "config.json"]
    if read_json is not None and any(read_json(n).get("model_type") is not None for n in configs):
        found["huggingface"] = min(configs)
    for key, pattern in (("openai", "params_shapes.json"), ("fairseq", "model.pt"),
                         ("tf1 hub module", "tfhub_module.pb")):
        if first(pattern):
            found[key] = first(pattern)
    if first("*options*.json") and first("*.hdf5"):
        found["bilm"] = first("*options*.json")
    hub = "tf1 hub module" in found  # its variables/variables.index is part of it
    checkpoints = sorted(n for n, b in base.items() if b.endswith(".index") and not (hub and b == "variables.index"))
    if checkpoints:
        found["tf1"] = checkpoints[0]
    return found


def _say_choice(source, names, read_json=None):
    """Prints which release `detect` chose, and why, when `names` hold more than one."""
    found = _releases(names, read_json)
    chosen = {"huggingface": "huggingface", "openai": "openai", "fairseq": "fairseq", "bilm": "bilm"}.get(
        source.format, "tf1 hub module" if "tfhub_module.pb" in source.reason else "tf1")
    others = {k: v for k, v in found.items() if k != chosen}
    if not others or chosen not in found:
        return
    listed = ", ".join(f"{DESCRIPTIONS.get(k, k)} ({v})" for k, v in others.items())
    print(f"{source.path}: holds more than one release: also {listed}. Chose the {source.family} "
          f"{DESCRIPTIONS.get(source.format, source.format)} ({source.reason}): formats are tried in the order "
          f"{', '.join(ORDER)}. Pass the other release's own file or folder to load it instead.", flush=True)


def _folder_files(folder):
    """Relative names of the files under `folder` (two levels: releases hold one top folder)."""
    found = []
    for pattern in ("*", os.path.join("*", "*"), os.path.join("*", "*", "*")):
        found += [os.path.relpath(p, folder) for p in glob.glob(os.path.join(glob.escape(folder), pattern))
                  if os.path.isfile(p)]
    return found


def detect(path):
    """The `Source` of `path` (CheckpointFormatError naming the path and what it holds otherwise)."""
    from keras_pretrain.checkpoints.archives import is_archive
    from keras_pretrain.checkpoints.tf1 import explicit_prefix
    from keras_pretrain.checkpoints.tf1 import find_checkpoint_prefix

    path = os.fspath(path)
    prefix = explicit_prefix(path)
    if prefix is not None:
        folder = os.path.dirname(prefix) or "."
        for config, family in TF1_CONFIGS.items():
            if os.path.exists(os.path.join(folder, config)):
                return Source(path, family, "tf1", config, path)
        return Source(path, tf1_family(_checkpoint_names(prefix, path), path), "tf1", "variable names", path)
    if os.path.isdir(path):
        def read(name):
            try:
                with open(os.path.join(path, name), encoding="utf-8") as f:
                    value = json.load(f)
                return value if isinstance(value, dict) else {}
            except (OSError, ValueError):
                return {}

        def checkpoint_names():
            hub_variables = glob.glob(os.path.join(glob.escape(path), "**", "variables", "variables.index"),
                                      recursive=True)
            prefix = hub_variables[0][: -len(".index")] if hub_variables else find_checkpoint_prefix(path)
            return _checkpoint_names(prefix, path)

        files = _folder_files(path)
        source = _by_names(path, files, read, checkpoint_names)
        if source is not None:
            _say_choice(source, files, read)
            return source
        shown = sorted(files)[:10]
        raise CheckpointFormatError(f"{path}: no known release format in this folder (files: {shown}). {_KNOWN}")
    if os.path.isfile(path) and path.endswith(".pt"):  # torch >= 1.6 writes zip files: not a release archive
        return Source(path, "roberta", "fairseq", os.path.basename(path), path)
    if is_archive(path):
        names = member_names(path)
        source = _by_names(path, names)
        if source is None:
            raise CheckpointFormatError(f"{path}: the archive holds no known release format. {_KNOWN}")
        _say_choice(source, names)
        return source
    if os.path.isfile(path):
        name = os.path.basename(path)
        if name.endswith(".json") and "options" in name:
            return Source(path, "elmo", "bilm", name, path)
        if name == "params_shapes.json":
            return Source(path, "gpt", "openai", name, os.path.dirname(path) or ".")
        raise CheckpointFormatError(f"{path}: not a release folder, archive or checkpoint. {_KNOWN}")
    raise CheckpointFormatError(f"{path}: no such file or folder.")


_KNOWN = ("Known: a Hugging Face folder (config.json), Google TF1 checkpoints of BERT / ALBERT / XLNet "
          "(*_config.json + *.ckpt.index), TF1 hub modules (tfhub_module.pb), bilm-tf ELMo (options.json + "
          "weights.hdf5), OpenAI GPT-1 (params_shapes.json + params_*.npy), fairseq RoBERTa (model.pt + dict.txt).")
