"""Pieces shared by the recipes: output folders, checkpoints, plots."""

import argparse
import csv
import json
import os

RUN_FILE = "run.json"


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

CHECKPOINT_DIR = "checkpoint"


def prepare_output(parser, out, run_config):
    """Creates `out` or recognises an interrupted run of the same config.

    Returns the epoch to resume from (0 for a new run). An output folder that
    holds anything else (another run's files, a finished run, user data)
    stops the recipe with exit code 2: nothing is ever overwritten.
    """
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error(f"--out: {out!r} is a file, not a folder")
    if os.path.isdir(out) and os.listdir(out):
        run_path = os.path.join(out, RUN_FILE)
        if not os.path.exists(run_path):
            parser.error(f"--out: {out!r} already holds files that are not from this recipe; choose a new folder (nothing is overwritten)")
        with open(run_path) as f:
            previous = json.load(f)
        if previous.get("config") != run_config:
            changed = sorted(k for k in set(previous.get("config", {})) | set(run_config)
                             if previous.get("config", {}).get(k) != run_config.get(k))
            parser.error(f"--out: {out!r} holds another run (different settings: {', '.join(changed)}); choose a new folder")
        if previous.get("finished"):
            parser.error(f"--out: {out!r} holds a finished run; choose a new folder")
        return checkpoint_epoch(out)
    try:
        os.makedirs(out, exist_ok=True)
        write_json(os.path.join(out, RUN_FILE), {"config": run_config, "finished": False})
    except OSError as e:
        parser.error(f"--out: cannot write to {out!r} ({e.strerror})")
    return 0


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


def checkpoint_epoch(out):
    path = os.path.join(out, CHECKPOINT_DIR, "state.json")
    if not os.path.exists(path):
        return 0
    with open(path) as f:
        return int(json.load(f)["epoch"])


def _seed_states(model):
    """Dropout seed-generator states: not in `model.weights`, but needed to
    continue with the same random masks after a resume."""
    # Matched by order, not path: paths carry per-process name counters.
    return [v for v in model.variables if "seed_generator_state" in v.path]


def restore_checkpoint(model, out):
    """Loads weights, optimizer state and RNG states saved by `EpochCheckpoint`."""
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    model.optimizer.build(model.trainable_variables)
    model.load_weights(os.path.join(folder, "model.weights.h5"))
    with np.load(os.path.join(folder, "seeds.npz")) as seeds:
        for i, variable in enumerate(_seed_states(model)):
            variable.assign(seeds[f"state_{i}"])


def epoch_checkpoint(out):
    import keras
    import numpy as np

    class EpochCheckpoint(keras.callbacks.Callback):
        """Saves weights + optimizer state after every epoch, atomically."""

        def on_epoch_end(self, epoch, logs=None):
            folder = os.path.join(out, CHECKPOINT_DIR)
            os.makedirs(folder, exist_ok=True)
            tmp = os.path.join(folder, "tmp.weights.h5")
            self.model.save_weights(tmp)
            os.replace(tmp, os.path.join(folder, "model.weights.h5"))
            seeds = {f"state_{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(_seed_states(self.model))}
            with open(os.path.join(folder, "tmp.npz"), "wb") as f:
                np.savez(f, **seeds)
            os.replace(os.path.join(folder, "tmp.npz"), os.path.join(folder, "seeds.npz"))
            write_json(os.path.join(folder, "state.json"), {"epoch": epoch + 1})

    return EpochCheckpoint()


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
