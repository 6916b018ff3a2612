"""Handles of published modules and archives, resolved offline.

A handle names a published artifact (an ALBERT archive or TF-Hub module, or
one of our presets as an exported module folder) and the file it must be stored as in the
local cache (`$KERAS_PRETRAIN_CACHE`, default `~/.cache/keras_pretrain`).
`resolve(handle)` never downloads: when the file is not there it says where
to get it and where to put it.
"""

import os

from keras_pretrain.errors import CheckpointFormatError

_ALBERT = "https://storage.googleapis.com/albert_models/{name}.tar.gz"
_ALBERT_HUB = "https://tfhub.dev/google/{name}/3"

HANDLES = {}
for _size in ("base", "large", "xlarge", "xxlarge"):
    HANDLES[f"albert_{_size}_v2"] = {
        "source": _ALBERT.format(name=f"albert_{_size}_v2"),
        "file": f"albert_{_size}_v2.tar.gz",
        "contains": ["albert_config.json", "model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001", "30k-clean.model"],
        "loader": "keras_pretrain.models.albert:load_albert",
    }
    HANDLES[f"albert_{_size}_zh"] = {
        "source": _ALBERT.format(name=f"albert_{_size}_zh"),
        "file": f"albert_{_size}_zh.tar.gz",
        "contains": ["albert_config.json", "model.ckpt-best.index", "model.ckpt-best.data-00000-of-00001", "vocab_chinese.txt"],
        "loader": "keras_pretrain.models.albert:load_albert",
    }
    HANDLES[f"albert_{_size}_hub"] = {
        "source": _ALBERT_HUB.format(name=f"albert_{_size}"),
        "file": f"albert_{_size}_hub",
        "contains": ["saved_model.pb", "tfhub_module.pb", "variables/", "assets/30k-clean.model"],
        "loader": "keras_pretrain.models.albert:load_albert",
    }


# Our presets: modules of the published weights, exported once on a machine
# that has them (`convert.from_huggingface` / `load_albert`, then
# `hub_modules.export`) and copied into the cache under the preset's name.
def preset_handles():
    """Registry entries for every preset of every family (name -> entry)."""
    from keras_pretrain import families

    handles = {}
    for family in families.FAMILIES.values():
        for name in family.presets:
            handles[name] = {
                "source": f"keras_pretrain preset {name!r} ({family.name}): export the published weights with "
                "hub_modules.export(...) after keras_pretrain.convert / load_albert",
                "file": name,
                "contains": ["metadata.json", "model.keras", "encoder/saved_model.pb"],
                "loader": "hub_modules:load",
            }
    return handles


def handles():
    """Every handle: the published ALBERT archives and hub modules, and our presets."""
    return {**preset_handles(), **HANDLES}


def cache_dir():
    return os.environ.get("KERAS_PRETRAIN_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "keras_pretrain"))


def resolve(handle):
    """A local path for `handle` (a path is returned as it is)."""
    handle = os.fspath(handle)
    if os.path.exists(handle) or os.sep in handle:
        return handle
    known = handles()
    if handle not in known:
        return handle
    entry = known[handle]
    path = os.path.join(cache_dir(), entry["file"])
    if os.path.exists(path):
        return path
    raise CheckpointFormatError(
        f"{handle}: not in the local cache and nothing is downloaded. Fetch {entry['source']} "
        f"on a machine with internet access and put it at {path} "
        f"(expected contents: {', '.join(entry['contains'])}); or set KERAS_PRETRAIN_CACHE."
    )
