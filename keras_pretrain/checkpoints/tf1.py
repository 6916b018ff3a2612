"""TF1 name-based checkpoints (`model.ckpt.index` + `.data-*` files)."""

import glob
import os

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
)


def find_checkpoint_prefix(folder, source=None):
    """The checkpoint prefix inside `folder` (by globbing `*.index`)."""
    source = source or folder
    indexes = sorted(glob.glob(os.path.join(folder, "**", "*.index"), recursive=True))
    if not indexes:
        raise CheckpointFormatError(
            f"{source}: no TF1 checkpoint found (no '*.index' file)."
        )
    if len(indexes) > 1:
        # Prefer "best" / the highest-numbered one deterministically.
        best = [p for p in indexes if "best" in os.path.basename(p)]
        indexes = best or indexes
    return indexes[-1][: -len(".index")]


def tf1_loader(prefix, ignore=OPTIMIZER_PATTERNS):
    """A `WeightLoader` over the TF1 checkpoint at `prefix`."""
    import tensorflow as tf

    if not os.path.exists(prefix + ".index"):
        raise CheckpointFormatError(f"{prefix}.index: checkpoint index missing.")
    data = glob.glob(prefix + ".data-*")
    if not data:
        raise CheckpointFormatError(
            f"{prefix}: checkpoint data files ('{os.path.basename(prefix)}"
            ".data-00000-of-00001') missing."
        )
    try:
        reader = tf.train.load_checkpoint(prefix)
        names = reader.get_variable_to_shape_map().keys()
    except Exception as e:  # TF raises DataLossError, NotFoundError, ...
        raise CheckpointFormatError(
            f"{prefix}: unreadable TF1 checkpoint ({type(e).__name__}: "
            f"{str(e).splitlines()[0][:200]})"
        ) from None

    def read(name):
        try:
            return reader.get_tensor(name)
        except Exception as e:
            raise CheckpointFormatError(
                f"{prefix}: variable {name!r} could not be read "
                f"({type(e).__name__}); the data file may be truncated."
            ) from None

    return WeightLoader(names, read, prefix, ignore)
