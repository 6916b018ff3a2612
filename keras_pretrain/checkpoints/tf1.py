"""TF1 name-based checkpoints (`model.ckpt.index` + `.data-*` files).

`tf1_checkpoint(path)` turns what a user passes (an explicit prefix, a folder,
a `.tar.gz` / `.zip` archive) into one checkpoint prefix, and says which:

- an explicit prefix (`.../model.ckpt-1000`, also given as
  `.../model.ckpt-1000.index`) is loaded exactly;
- in a folder (searched recursively), the checkpoint that a `checkpoint`
  state file names (what `tf.train.latest_checkpoint` returns: the last one
  `run_pretraining.py` saved); else the highest global step (`model.ckpt-100`
  before `model.ckpt-20`: numbers, not text); else a `*-best` one; else the
  only one. Several candidates and no rule to choose raise an error listing
  them;
- an archive is extracted safely first (`keras_pretrain.checkpoints.archives`).

Folder and file names may hold glob characters (`[`, `]`, `*`, `?`).
"""

import contextlib
import glob
import os
import re
import shutil
import tempfile

from keras_pretrain.checkpoints.weights import WeightLoader
from keras_pretrain.errors import CheckpointFormatError

# Optimizer slots and counters the published checkpoints may hold.
OPTIMIZER_PATTERNS = (
    "*/adam_m",
    "*/adam_v",
    "*lamb_m*",
    "*lamb_v*",
    "*AdamWeightDecayOptimizer*",
    "*LAMB*",
    "global_step",
    "*/Momentum",
    "*/ExponentialMovingAverage",
    # tf.train.AdamOptimizer (the original XLNet scripts with weight_decay=0)
    "*/Adam",
    "*/Adam_1",
    "beta1_power",
    "beta2_power",
)
STATE_FILE = "checkpoint"  # written by tf.compat.v1.train.Saver / CheckpointManager
_STEP = re.compile(r"-(\d+)$")


def _prefixes(folder, recursive=True):
    """Every checkpoint prefix under `folder` (recursively), sorted."""
    pattern = os.path.join(glob.escape(folder), *(["**"] if recursive else []), "*.index")
    return sorted(p[: -len(".index")] for p in glob.glob(pattern, recursive=recursive) if os.path.isfile(p))


def _named_by_state_file(directory, source):
    """The prefix the `checkpoint` state file of `directory` names, or None."""
    import tensorflow as tf

    path = os.path.join(directory, STATE_FILE)
    try:
        state = tf.train.get_checkpoint_state(directory)
    except Exception as e:  # a malformed text proto
        raise CheckpointFormatError(
            f"{source}: {path} is not a readable checkpoint state file ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200] if str(e) else ''}); fix it, remove it, or pass "
            "the checkpoint prefix itself."
        ) from None
    if state is None or not state.model_checkpoint_path:
        return None
    named = state.model_checkpoint_path
    # Relative names are relative to the folder; absolute ones may come from
    # the machine that trained (the folder was copied since): same file name here.
    for candidate in (os.path.join(directory, named), os.path.join(directory, os.path.basename(named))):
        if os.path.isfile(candidate + ".index"):
            return os.path.normpath(candidate)
    print(f"{source}: {path} names {named}, which is not in the folder; choosing by global step.")
    return None


def _describe(prefix, folder):
    return os.path.relpath(prefix, folder) if folder else prefix


def find_checkpoint_prefix(folder, source=None):
    """The checkpoint prefix to load from `folder` (see the module docstring)."""
    source = source or folder
    prefixes = _prefixes(folder)
    if not prefixes:
        raise CheckpointFormatError(
            f"{source}: no TF1 checkpoint found (no '*.index' file)."
        )
    chosen, reason = None, None
    states = sorted({os.path.dirname(p) for p in prefixes})
    named = [n for n in (_named_by_state_file(d, source) for d in states
                         if os.path.isfile(os.path.join(d, STATE_FILE))) if n]
    if len(named) == 1:
        chosen, reason = named[0], f"named by the '{STATE_FILE}' file"
    elif len(named) > 1:
        raise CheckpointFormatError(
            f"{source}: several '{STATE_FILE}' files name different checkpoints "
            f"({[_describe(n, folder) for n in named]}); pass the prefix of the one to load."
        )
    elif len(prefixes) == 1:
        chosen, reason = prefixes[0], "the only checkpoint"
    else:
        steps = {p: int(m.group(1)) for p in prefixes for m in [_STEP.search(os.path.basename(p))] if m}
        best = [p for p in prefixes if os.path.basename(p).endswith("-best")]
        if steps:
            top = max(steps.values())
            chosen = [p for p, s in steps.items() if s == top]
            reason = f"highest global step ({top})"
        elif len(best) == 1:
            chosen, reason = best, "the '-best' checkpoint"
        if not chosen or len(chosen) > 1:
            raise CheckpointFormatError(
                f"{source}: several checkpoints and no rule to choose one "
                f"({[_describe(p, folder) for p in (chosen or prefixes)]}); pass the prefix "
                "of the one to load (e.g. .../model.ckpt-1000)."
            )
        chosen = chosen[0]
    print(f"{source}: loading checkpoint {_describe(chosen, folder)} ({reason}).")
    return chosen


def explicit_prefix(path):
    """`path` as a checkpoint prefix (`model.ckpt-1000` or `model.ckpt-1000.index`), or None."""
    path = os.fspath(path)
    if path.endswith(".index") and os.path.isfile(path):
        return path[: -len(".index")]
    if os.path.isfile(path + ".index"):
        return path
    return None


def _missing(path):
    """The error for a path that is neither a file, a folder nor a prefix."""
    folder = os.path.dirname(path) or "."
    available = [os.path.basename(p) for p in _prefixes(folder, recursive=False)] if os.path.isdir(folder) else []
    if available:
        return CheckpointFormatError(
            f"{path}: no such checkpoint (no {os.path.basename(path)}.index); the folder holds "
            f"{available}."
        )
    return CheckpointFormatError(f"{path}: no such file or folder.")


@contextlib.contextmanager
def tf1_checkpoint(path, extract_to=None, max_extract_bytes=None):
    """Yields `(root, prefix)` for an explicit prefix, a folder or an archive.

    `root` is the folder to search for the configuration and vocabulary (the
    folder given, the archive's extraction folder, or the prefix's folder);
    `prefix` the checkpoint to load (printed). An archive goes to
    `extract_to`, or to a temporary folder removed on exit.
    """
    from keras_pretrain.checkpoints.archives import is_archive
    from keras_pretrain.checkpoints.archives import safe_extract

    path = os.fspath(path)
    prefix = explicit_prefix(path)
    if prefix is not None:
        print(f"{path}: loading checkpoint {prefix} (the prefix given).")
        root = os.path.dirname(prefix) or "."
        if os.path.basename(root) == "variables":  # a TF1 hub module: assets/ is beside it
            root = os.path.dirname(root) or "."
        yield root, prefix
    elif os.path.isdir(path):
        yield path, find_checkpoint_prefix(path)
    elif os.path.isfile(path):
        if not is_archive(path):
            raise CheckpointFormatError(
                f"{path}: not a .tar.gz / .zip archive, checkpoint folder or checkpoint prefix."
            )
        if extract_to is not None:
            safe_extract(path, extract_to, max_extract_bytes=max_extract_bytes)
            yield extract_to, find_checkpoint_prefix(extract_to, path)
        else:
            with tempfile.TemporaryDirectory(prefix="checkpoint_") as tmp:
                safe_extract(path, tmp, max_extract_bytes=max_extract_bytes)
                yield tmp, find_checkpoint_prefix(tmp, path)
    else:
        raise _missing(path)


def _readable_prefix(prefix, data):
    """`(prefix, keep)`: TF's reader takes `[...]` in a path for a pattern (the
    files are not found); such checkpoints are read through links (copies where
    links fail) in a temporary folder, alive as long as `keep`."""
    if not any(c in prefix for c in "[]*?"):
        return prefix, None
    keep = tempfile.TemporaryDirectory(prefix="checkpoint_")
    for path in [prefix + ".index"] + data:
        target = os.path.join(keep.name, "ckpt" + path[len(prefix):])
        try:
            os.symlink(os.path.abspath(path), target)
        except OSError:
            shutil.copyfile(path, target)
    return os.path.join(keep.name, "ckpt"), keep


def tf1_loader(prefix, ignore=OPTIMIZER_PATTERNS):
    """A `WeightLoader` over the TF1 checkpoint at `prefix`."""
    import tensorflow as tf

    if not os.path.exists(prefix + ".index"):
        raise CheckpointFormatError(f"{prefix}.index: checkpoint index missing.")
    data = glob.glob(glob.escape(prefix) + ".data-*")
    if not data:
        raise CheckpointFormatError(
            f"{prefix}: checkpoint data files ('{os.path.basename(prefix)}"
            ".data-00000-of-00001') missing."
        )
    readable, keep = _readable_prefix(prefix, data)
    try:
        reader = tf.train.load_checkpoint(readable)
        shapes = {name: tuple(shape) for name, shape in reader.get_variable_to_shape_map().items()}
    except Exception as e:  # TF raises DataLossError, NotFoundError, ...
        raise CheckpointFormatError(
            f"{prefix}: unreadable TF1 checkpoint ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200]})"
        ) from None

    def read(name, keep=keep):  # `keep`: the links live as long as the loader
        try:
            return reader.get_tensor(name)
        except Exception as e:
            raise CheckpointFormatError(
                f"{prefix}: variable {name!r} could not be read "
                f"({type(e).__name__}); the data file may be truncated."
            ) from None

    return WeightLoader(shapes, read, prefix, ignore, shapes=shapes)
