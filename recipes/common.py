"""Pieces shared by the recipes: output folders, locks, checkpoints, signals, plots."""

import argparse
import contextlib
import csv
import json
import os
import shutil
import signal
import socket
import sys

RUN_FILE = "run.json"
LOCK_FILE = ".lock"
CHECKPOINT_DIR = "checkpoint"


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """`--help` of every recipe: the module docstring as written, and each option's default, once.

    A help line that already states its default (e.g. "(default: the family's own)") is shown as
    written; flags (default False) and options without a default show none.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class RunError(Exception):
    """A run cannot go on (disk full, folder taken, ...): one line, exit code 1."""


def boolean(text):
    """Strict parser of boolean options: `--lowercase flase` is an error, not False."""
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false (or yes/no, 1/0), got {text!r}")


def prepare_output(parser, out, run_config):
    """Creates and locks `out`, or recognises (and locks) an interrupted run of the same config.

    Returns the epoch to resume from (0 for a new run). An output folder that
    holds anything else (another run's files, a finished run, user data), a
    folder another live run holds the lock of, or a folder that cannot be
    written stops the recipe with exit code 2: nothing is ever overwritten.
    Call it after every other argument check: it is the first write.
    The lock is released by `release_lock(out)` (and at exit).
    """
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error(f"--out: {out!r} is a file, not a folder")
    if os.path.isdir(out) and set(os.listdir(out)) - {LOCK_FILE}:
        run_path = os.path.join(out, RUN_FILE)
        if not os.path.exists(run_path):
            parser.error(f"--out: {out!r} already holds files that are not from this recipe; choose a new folder (nothing is overwritten)")
        try:
            with open(run_path) as f:
                previous = json.load(f)
        except (OSError, ValueError) as e:
            parser.error(f"--out: {run_path} is unreadable ({e}); choose a new folder")
        if previous.get("config") != run_config:
            changed = sorted(k for k in set(previous.get("config", {})) | set(run_config)
                             if previous.get("config", {}).get(k) != run_config.get(k))
            parser.error(f"--out: {out!r} holds another run (different settings: {', '.join(changed)}); choose a new folder")
        if previous.get("finished"):
            parser.error(f"--out: {out!r} holds a finished run; choose a new folder")
        acquire_lock(parser, out)
        return checkpoint_epoch(out)
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        parser.error(f"--out: cannot create {out!r} ({e.strerror or e})")
    acquire_lock(parser, out)
    try:
        write_json(os.path.join(out, RUN_FILE), {"config": run_config, "finished": False})
    except OSError as e:
        release_lock(out)
        parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
    return 0


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:  # a killed run its parent has not reaped yet (a zombie) is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def acquire_lock(parser, out):
    """Writes `out/.lock` (pid and host). A live holder stops the recipe (exit 2);
    the lock of a dead process (a killed run) is taken over with a message.
    Also the writability check of `out`: a read-only or full folder fails here."""
    path = os.path.join(out, LOCK_FILE)
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                with open(path) as f:
                    holder = json.load(f)
                pid, host = int(holder["pid"]), holder.get("host")
            except (OSError, ValueError, KeyError, TypeError):
                holder, pid, host = None, None, None
            if holder is not None and host == me["host"] and pid != me["pid"] and _pid_alive(pid):
                parser.error(f"--out: {out!r} is in use by another run (pid {pid}, lock file {path}); "
                             "wait for it to finish or choose another folder")
            if holder is not None and host != me["host"]:
                parser.error(f"--out: {out!r} is locked by a run on host {host!r} (pid {pid}, lock file {path}); "
                             "delete the lock file if that run is over")
            if pid != me["pid"]:
                print(f"taking over the stale lock of {out!r} (pid {pid} is no longer running)", file=sys.stderr)
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
            continue
        except OSError as e:
            parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.remove(path)
            parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
        return path
    parser.error(f"--out: could not take the lock {path}")


def release_lock(out):
    """Removes `out/.lock` if this process holds it."""
    path = os.path.join(out, LOCK_FILE)
    try:
        with open(path) as f:
            if int(json.load(f)["pid"]) != os.getpid():
                return
        os.remove(path)
    except (OSError, ValueError, KeyError, TypeError):
        pass


def corpus_paths(parser, corpus):
    """The files of `corpus` (files, folders or globs); exit 2 when there are none."""
    from keras_pretrain.data import expand_paths

    try:
        paths = expand_paths(corpus)
    except (FileNotFoundError, ValueError) as e:
        parser.error(f"corpus: {e}")
    if not paths:
        parser.error(f"corpus: no file found in {corpus}")
    return paths


def check_corpus(parser, paths, flag):
    """Exit 2 unless the corpus holds at least one sentence: an empty corpus,
    or one where every line is blank or skipped (invalid UTF-8, overlong),
    is reported before any vocabulary learning. Reads up to the first
    document with text."""
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data import read_documents
    from keras_pretrain.errors import CorpusFormatError

    import logging

    stats = CorpusStats()
    quiet = logging.getLogger("keras_pretrain.data.corpus")
    was_disabled, quiet.disabled = quiet.disabled, True  # the summary below says it once
    try:
        for document in read_documents(paths, stats=stats):
            if any(sentence.strip() for sentence in document):
                return
    except (CorpusFormatError, OSError) as e:
        parser.error(f"{flag}: {e}")
    finally:
        quiet.disabled = was_disabled
    names = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    if not stats.lines_read:
        parser.error(f"{flag}: {names}: empty (no text to train on)")
    first = f"; first: {stats.issues[0]}" if stats.issues else ""
    parser.error(f"{flag}: {names}: no usable line ({stats.lines_read} read: {stats.blank_lines} blank, "
                 f"{stats.invalid_utf8_lines} invalid UTF-8, {stats.overlong_lines} overlong{first})")


def wordpiece_tokenizer(vocabulary, lowercase):
    """BERT's WordPiece tokenizer (the ids of the original `FullTokenizer`), for `data.shards.ShardBuilder`.

    A function of this importable module, so Beam sends it to its workers by name; the tokenizer's module
    (and TensorFlow) is imported only where a tokenizer is built, not by the pipeline's launcher.
    """
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=vocabulary, lowercase=lowercase)


def write_json(path, data):
    """Writes JSON atomically (a crash never leaves a half-written file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, default=float)
    os.replace(tmp, path)


def mark_finished(out, summary):
    path = os.path.join(out, RUN_FILE)
    with open(path) as f:
        run = json.load(f)
    run.update(finished=True, summary=summary)
    write_json(path, run)


# === Checkpoints ===
# checkpoint/state.json names the complete checkpoint ({"epoch", "weights",
# "rng"}); it is written (atomically) only after both files it names, so a
# kill at any moment leaves the previous checkpoint whole.


def _state(out):
    path = os.path.join(out, CHECKPOINT_DIR, "state.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def checkpoint_epoch(out):
    state = _state(out)
    return int(state["epoch"]) if state else 0


def _seed_states(model):
    """Dropout seed-generator states: not in `model.weights`, but needed to
    continue with the same random masks after a resume."""
    # Matched by order, not path: paths carry per-process name counters.
    return [v for v in model.variables if "seed_generator_state" in v.path]


def _global_seed_generator():
    # private API: keras exposes no reader of its global seed generator (what unseeded `keras.random`
    # calls draw from); its state has to be saved for a resume to draw the same numbers.
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("global_seed_generator")


def rng_state(model):
    """Every random state training draws from, as NumPy arrays: the model's
    seed generators, Keras' global one and, on PyTorch, torch's global
    generator (Keras' unseeded torch dropout and ours draw from it)."""
    import keras

    states = {f"state_{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(_seed_states(model))}
    generator = _global_seed_generator()
    if generator is not None:
        states["global_seed_generator"] = keras.ops.convert_to_numpy(generator.state)
    if keras.config.backend() == "torch":
        import torch

        states["torch_cpu"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available():
            for i, s in enumerate(torch.cuda.get_rng_state_all()):
                states[f"torch_cuda_{i}"] = s.cpu().numpy()
    return states


def set_rng_state(model, states):
    import keras

    for i, variable in enumerate(_seed_states(model)):
        variable.assign(states[f"state_{i}"])
    generator = _global_seed_generator()
    if "global_seed_generator" in states and generator is not None:
        generator.state.assign(states["global_seed_generator"])
    if keras.config.backend() == "torch" and "torch_cpu" in states:
        import torch

        torch.set_rng_state(torch.from_numpy(states["torch_cpu"]))
        cuda = [torch.from_numpy(states[k]) for k in sorted(states) if k.startswith("torch_cuda_")]
        if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)


def restore_checkpoint(model, out):
    """Loads weights and optimizer state saved by `EpochCheckpoint`; returns a
    callback for `fit` that restores the random states just before the first
    training step (after Keras' first symbolic call of the model, which on
    PyTorch draws from torch's generator)."""
    import keras
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    state = _state(out)
    model.optimizer.build(model.trainable_variables)
    model.load_weights(os.path.join(folder, state.get("weights", "model.weights.h5")))
    with np.load(os.path.join(folder, state.get("rng", "seeds.npz"))) as saved:
        states = {k: saved[k] for k in saved.files}
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
    state.json at it, then deletes the previous one. A full disk or an
    unwritable folder raises `RunError` naming the folder (the previous
    checkpoint stays whole)."""
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    weights, rng = f"model-{epoch:05d}.weights.h5", f"rng-{epoch:05d}.npz"
    try:
        os.makedirs(folder, exist_ok=True)
        needed, free = checkpoint_bytes(model), shutil.disk_usage(folder).free
        if free < needed:
            raise OSError(28, f"{free / 1e6:.1f} MB free, the checkpoint needs about {needed / 1e6:.1f} MB")
        previous = _state(out)
        model.save_weights(os.path.join(folder, weights))
        with open(os.path.join(folder, rng), "wb") as f:
            np.savez(f, **rng_state(model))
        write_json(os.path.join(folder, "state.json"), {"epoch": epoch, "weights": weights, "rng": rng})
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
    for name in (previous or {}).get("weights"), (previous or {}).get("rng"):
        if name and name not in (weights, rng):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))


def epoch_checkpoint(out):
    import keras

    class EpochCheckpoint(keras.callbacks.Callback):
        """Saves weights + optimizer state + RNG states after every epoch, atomically."""

        def on_epoch_end(self, epoch, logs=None):
            write_checkpoint(self.model, out, epoch + 1)

    return EpochCheckpoint()


# === Signals ===


class Interrupted(KeyboardInterrupt):
    """SIGTERM / SIGINT received: the run stops where it is."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def stop_on_signals():
    """SIGTERM and SIGINT raise `Interrupted` in the main thread (the run's
    `finally` blocks release its lock; checkpoints are atomic), restored after."""

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = {}
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def interrupted_exit_code(error):
    return 128 + error.signum


def plot_history(csv_path, png_path, title):
    """A loss-curve PNG from Keras' CSVLogger file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    epochs = [int(r["epoch"]) + 1 for r in rows]
    keys = [k for k in rows[0] if k.endswith("loss")]

    def value(text):
        try:
            return float(text)
        except (TypeError, ValueError):  # CSVLogger writes "NA" for missing values
            return float("nan")

    import math

    series = {key: [value(r[key]) for r in rows] for key in keys}
    # A loss that was never logged (e.g. a head the task does not have) gets no line and no legend entry.
    series = {key: ys for key, ys in series.items() if any(math.isfinite(y) for y in ys)}
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, ys in series.items():
        ax.plot(epochs, ys, marker="o", label=key)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.set_title(title)
    if series:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
