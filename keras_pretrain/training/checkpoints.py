"""Epoch checkpoints of a run and the resume from them.

checkpoint/state.json names the complete checkpoint ({"epoch", "weights", "rng"}); it is written
(atomically) only after both files it names, so a kill at any moment leaves the previous checkpoint whole.
The checkpoint before it is kept too (one fallback when the newest is damaged); older ones are deleted before
a new one is written, so at most two are on disk. Resuming trusts nothing it reads: state.json may name only
the files the writer names, inside the run folder; every file is checked before use.
"""

import contextlib
import os
import re
import shutil
import sys

from keras_pretrain.errors import RunError
from keras_pretrain.training.files import check_links
from keras_pretrain.training.files import inside
from keras_pretrain.training.files import leading_out
from keras_pretrain.training.files import read_json_object
from keras_pretrain.training.files import write_json
from keras_pretrain.training.random_state import rng_state
from keras_pretrain.training.random_state import set_rng_state

CHECKPOINT_DIR = "checkpoint"
STATE_FILE = "state.json"
CHECKPOINT_NAME = re.compile(r"model-(\d{5,})\.weights\.h5")


def checkpoint_files(epoch):
    """The names `write_checkpoint` gives the files of checkpoint `epoch`: (weights, random states)."""
    return f"model-{epoch:05d}.weights.h5", f"rng-{epoch:05d}.npz"


def read_state(out, epochs=None):
    """The checked content of `out/checkpoint/state.json` (None when there is none): an `epoch` in
    [0, epochs] and the names of that epoch's two files, inside the checkpoint folder. Any other content
    raises `RunError` naming the file and the problem. The files themselves: `check_checkpoint(out, epoch)`."""
    folder = os.path.join(out, CHECKPOINT_DIR)
    path = os.path.join(folder, STATE_FILE)
    if not os.path.lexists(path):
        return None
    state = read_json_object(out, path)
    for key in ("epoch", "weights", "rng"):
        if key not in state:
            raise RunError(f"{path}: lacks the key {key!r} (a checkpoint state names its epoch, weights and rng)")
    epoch = state["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise RunError(f"{path}: epoch {epoch!r} is not a whole number")
    if epoch < 0 or (epochs is not None and epoch > epochs):
        bound = f"[0, {epochs}] (this run trains {epochs} epochs)" if epochs is not None else "[0, ...)"
        raise RunError(f"{path}: epoch {epoch} is outside {bound}")
    for key, expected in zip(("weights", "rng"), checkpoint_files(epoch)):
        name = state[key]
        if (not isinstance(name, str) or not name or os.path.isabs(name) or name in (".", "..") or "\0" in name
                or os.path.basename(name) != name or (os.altsep and os.altsep in name)):
            raise RunError(f"{path}: {key} {name!r} is not a file name inside {folder} (absolute paths, '..' and "
                           "sub-folders are refused)")
        if os.path.lexists(os.path.join(folder, name)) and not inside(out, os.path.join(folder, name)):
            raise leading_out(os.path.join(folder, name), f"{path}: {key} {name!r} is ")
        if name != expected:
            raise RunError(f"{path}: {key} {name!r} is not the checkpoint of epoch {epoch} ({expected!r})")
    return state


def check_checkpoint(out, epoch):
    """`RunError` unless both files of checkpoint `epoch` are in `out/checkpoint`, inside the run folder,
    and whole: an HDF5 file h5py opens (a truncated one it refuses) and an `.npz` whose zip directory and
    members are intact. Reads no array."""
    import zipfile

    import h5py

    folder = os.path.join(out, CHECKPOINT_DIR)
    weights, rng = (os.path.join(folder, name) for name in checkpoint_files(epoch))
    for path in (weights, rng):
        if not os.path.lexists(path):
            raise RunError(f"{path}: missing (the checkpoint of epoch {epoch})")
        if not inside(out, path):
            raise leading_out(path)
        if not os.path.isfile(path):
            raise RunError(f"{path}: not a regular file")
        if not os.path.getsize(path):
            raise RunError(f"{path}: empty (the checkpoint of epoch {epoch} was not written whole)")
    try:
        with h5py.File(weights, "r"):
            pass
    except (OSError, ValueError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RunError(f"{weights}: not a whole HDF5 weights file, truncated or damaged ({reason})") from None
    try:
        with zipfile.ZipFile(rng) as archive:
            bad = archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as e:
        raise RunError(f"{rng}: not a whole .npz file, truncated or damaged ({e})") from None
    if bad is not None:
        raise RunError(f"{rng}: member {bad!r} is damaged")


def complete_checkpoints(out, epochs=None, exclude=()):
    """The epochs (ascending) whose checkpoint files in `out/checkpoint` pass `check_checkpoint`."""
    folder = os.path.join(out, CHECKPOINT_DIR)
    if not os.path.isdir(folder) or not inside(out, folder):
        return []
    found = []
    for name in os.listdir(folder):
        match = CHECKPOINT_NAME.fullmatch(name)
        if not match:
            continue
        epoch = int(match.group(1))
        if epoch in exclude or epoch < 1 or (epochs is not None and epoch > epochs):
            continue
        try:
            check_checkpoint(out, epoch)
        except RunError:
            continue
        found.append(epoch)
    return sorted(found)


def resume_hint(out, epochs=None, exclude=()):
    """What a run whose checkpoint state is unusable can do: the other complete checkpoints, or start over."""
    others = complete_checkpoints(out, epochs, exclude)
    if not others:
        return "no other complete checkpoint is in the run folder; `--resume-from 0` starts the run over"
    listed = f" (complete checkpoints: epochs {', '.join(map(str, others))})" if len(others) > 1 else ""
    return (f"the previous complete checkpoint is epoch {others[-1]}{listed}; `--resume-from {others[-1]}` resumes "
            "from it, `--resume-from 0` starts the run over")


def resume_epoch(out, epochs, resume_from=None):
    """The epoch the existing run folder `out` resumes from, once everything a resume reads has been
    checked (`check_links`, `read_state`, `check_checkpoint`); `RunError` with one line naming the file,
    the problem and the other complete checkpoints otherwise.

    `resume_from` (`--resume-from N`): N = 0 starts the run over (its checkpoints are deleted); N > 0
    resumes from checkpoint N (checked; state.json is pointed at it)."""
    check_links(out)
    folder = os.path.join(out, CHECKPOINT_DIR)
    if resume_from == 0:
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name == STATE_FILE or name.startswith(STATE_FILE) or CHECKPOINT_NAME.fullmatch(name) \
                        or re.fullmatch(r"rng-\d{5,}\.npz", name):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(folder, name))
        print(f"--resume-from 0: starting {out} over (its checkpoints deleted)", file=sys.stderr)
        return 0
    if resume_from is not None:
        try:
            check_checkpoint(out, resume_from)
        except RunError as e:
            raise RunError(f"--resume-from {resume_from}: {e}; {resume_hint(out, epochs, (resume_from,))}") from None
        weights, rng = checkpoint_files(resume_from)
        write_json(os.path.join(folder, STATE_FILE), {"epoch": resume_from, "weights": weights, "rng": rng})
        return resume_from
    state_path = os.path.join(folder, STATE_FILE)
    try:
        state = read_state(out, epochs)
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs)}") from None
    if state is None:
        others = complete_checkpoints(out, epochs)
        if others:
            raise RunError(f"{state_path}: missing, yet the run folder holds checkpoints; {resume_hint(out, epochs)}")
        return 0
    try:
        if state["epoch"]:
            check_checkpoint(out, state["epoch"])
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs, (state['epoch'],))}") from None
    return state["epoch"]


def _state(out):
    try:
        return read_state(out)
    except RunError:
        return None


def checkpoint_epoch(out):
    """The epoch of the complete checkpoint state.json names (0 when there is none or it is unusable)."""
    state = _state(out)
    return int(state["epoch"]) if state else 0


def restore_checkpoint(model, out, steps_per_epoch=None, epochs=None):
    """Loads weights and optimizer state saved by `EpochCheckpoint`; returns a
    callback for `fit` that restores the random states just before the first
    training step (after Keras' first symbolic call of the model, which on
    PyTorch draws from torch's generator).

    The checkpoint is checked again (`read_state`, `check_checkpoint`) and, given `steps_per_epoch`,
    its optimizer must have taken the steps of the epochs state.json claims (a run never finishes
    without training them): `RunError` naming the file otherwise."""
    import keras
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    state = read_state(out, epochs)
    if state is None:
        raise RunError(f"{os.path.join(folder, STATE_FILE)}: missing; {resume_hint(out, epochs)}")
    epoch = state["epoch"]
    weights, rng = os.path.join(folder, state["weights"]), os.path.join(folder, state["rng"])
    try:
        check_checkpoint(out, epoch)
        model.optimizer.build(model.trainable_variables)
        try:
            model.load_weights(weights)
        except (OSError, ValueError, KeyError, TypeError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunError(f"{weights}: cannot be loaded into this run's model ({reason})") from None
        try:
            with np.load(rng) as saved:
                states = {k: saved[k] for k in saved.files}
        except (OSError, ValueError, EOFError) as e:
            raise RunError(f"{rng}: cannot be read ({e})") from None
        if steps_per_epoch:
            done = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
            expected = epoch * steps_per_epoch
            # Loss scaling (float16) does not count the steps it skips (non-finite gradients).
            skips = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
            if done > expected or (done < expected and not (skips and done > expected - steps_per_epoch)):
                raise RunError(f"{weights}: holds the optimizer state of {done} training steps, not the {expected} "
                               f"of the {epoch} epoch(s) {os.path.join(folder, STATE_FILE)} claims")
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs, (epoch,))}") from None
    set_rng_state(model, states)

    class RestoreRandomState(keras.callbacks.Callback):
        done = False

        def on_train_batch_begin(self, batch, logs=None):
            if not self.done:
                set_rng_state(self.model, states)
                self.done = True

    return RestoreRandomState()


def checkpoint_bytes(model):
    """About the size of a checkpoint: every variable (weights, optimizer)."""
    import math

    variables = list(model.variables)
    if getattr(model, "optimizer", None) is not None:
        variables += list(model.optimizer.variables)
    return sum(math.prod(v.shape) * 4 for v in variables) + (1 << 20)


def write_checkpoint(model, out, epoch):
    """Writes checkpoint `epoch` (weights + optimizer, RNG states), then points
    state.json at it; the current one is kept as the previous, older ones are deleted first. A full disk or an
    unwritable folder raises `RunError` naming the folder (the previous
    checkpoint stays whole)."""
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    weights, rng = checkpoint_files(epoch)
    try:
        os.makedirs(folder, exist_ok=True)
        previous = _state(out)
        keep = {epoch} | ({previous["epoch"]} if previous else set())
        for name in os.listdir(folder):  # the checkpoint before the current one: room for the new one
            match = CHECKPOINT_NAME.fullmatch(name) or re.fullmatch(r"rng-(\d{5,})\.npz", name)
            if match and int(match.group(1)) not in keep:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
        needed, free = checkpoint_bytes(model), shutil.disk_usage(folder).free
        if free < needed:
            raise OSError(28, f"{free / 1e6:.1f} MB free, the checkpoint needs about {needed / 1e6:.1f} MB")
        model.save_weights(os.path.join(folder, weights))
        with open(os.path.join(folder, rng), "wb") as f:
            np.savez(f, **rng_state(model))
        write_json(os.path.join(folder, STATE_FILE), {"epoch": epoch, "weights": weights, "rng": rng})
    except OSError as e:
        for name in (weights, rng):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))
        reason = e.strerror or str(e).splitlines()[0]
        if e.errno == 28 or "No space left on device" in str(e):  # h5py reports it in its message
            reason = "No space left on device" + (f": {e.strerror}" if e.strerror and "space" not in e.strerror else "")
        kept = checkpoint_epoch(out)
        kept = f"the previous checkpoint (epoch {kept}) is intact" if kept else "no earlier checkpoint"
        raise RunError(f"cannot write the checkpoint of epoch {epoch} in {folder} ({reason}); {kept}") from None


def epoch_checkpoint(out):
    """The callback for `fit` that writes checkpoint N (`write_checkpoint`) at the end of epoch N."""
    import keras

    class EpochCheckpoint(keras.callbacks.Callback):
        """Saves weights + optimizer state + RNG states after every epoch, atomically."""

        def on_epoch_end(self, epoch, logs=None):
            write_checkpoint(self.model, out, epoch + 1)

    return EpochCheckpoint()
