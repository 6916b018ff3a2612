"""The training history of a run (`history.csv`, Keras' CSVLogger): trimmed on resume, plotted at the end."""

import csv
import os

from keras_pretrain.training.files import inside


def trim_history(out, epoch):
    """Keeps the header and the first `epoch` rows of `out/history.csv` (Keras' CSVLogger appends the
    resumed epochs: rows of epochs after the checkpoint resumed from would be counted twice)."""
    path = os.path.join(out, "history.csv")
    if not os.path.isfile(path) or not inside(out, path):
        return
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        lines = f.readlines()
    if len(lines) > epoch + 1:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.writelines(lines[: epoch + 1])
        os.replace(tmp, path)


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
