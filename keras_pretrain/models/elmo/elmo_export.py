"""ELMo to bilm-tf's release format: `elmo_convert`'s table run backwards.

ELMo has no `transformers` class; its exchange format is bilm-tf's
(allennlp.org/elmo), which `keras_pretrain.convert.load(folder)` /
`convert.from_bilm(options, weights)` read back. `export_bilm(model, folder)`
writes into `folder`:

| file | content |
|---|---|
| `options.json` | the `lstm` and `char_cnn` sections bilm-tf reads (`options_config` run backwards) |
| `weights.hdf5` | the datasets of `elmo_convert.weight_table`, each through its inverse transform (`char_embed` without our padding row 0, `CNN/W_cnn_{i}` with bilm's leading 1, an LSTM's `W_0` = `kernel` rows then `recurrent_kernel` rows, ...) |
| `vocab.txt` | bilm's vocabulary file (one word per line, `<S>`, `</S>`, `<UNK>` first) when a vocabulary is given |
| `softmax/model.ckpt.*`, `softmax/checkpoint` | an `ElmoBiLM`'s softmax as bilm-tf's training checkpoint holds it (`lm/softmax/W` [V, D], `lm/softmax/b` [V]), for `convert_bilm(softmax=folder/softmax)` |

Round trip: `convert.load(folder)` gives every weight back exactly, except
the character table's row 0 (the padding token, never read: bilm has none,
the importer makes it zero) and the softmax's row 0 (`<pad>`: zero weights
and bias -1e30 on import).
"""

import collections
import json
import os

import numpy as np

from keras_pretrain.checkpoints.output import prepare_new_folder
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from keras_pretrain.models.elmo.elmo_convert import options_config
from keras_pretrain.models.elmo.elmo_convert import weight_table

OPTIONS_FILE = "options.json"
WEIGHTS_FILE = "weights.hdf5"
VOCABULARY_FILE = "vocab.txt"
SOFTMAX_FOLDER = "softmax"
SOFTMAX_PREFIX = "model.ckpt"
# The backbone config keys the options file carries (`options_config`'s result but dropout).
_OPTION_KEYS = (
    "num_layers", "hidden_dim", "lstm_dim", "filters", "num_highway", "char_embedding_dim",
    "num_characters", "max_characters", "activation", "cell_clip", "proj_clip", "use_residual",
)


def _numpy(variable):
    import keras

    return np.asarray(keras.ops.convert_to_numpy(variable.value), dtype=np.float32)


def bilm_options(backbone):
    """bilm-tf's options (a dict with `lstm` and `char_cnn`) of `backbone`.

    Exactly what `options_config` turns back into the backbone's
    configuration (dropout aside, a training setting bilm's inference has
    not); raises `ExportError` naming the setting bilm-tf cannot express
    (e.g. `proj_clip` without an LSTM projection: bilm's LSTMCell ignores it).
    """
    config = backbone.get_config()
    lstm = {
        "dim": config["lstm_dim"],
        "projection_dim": config["hidden_dim"],
        "n_layers": config["num_layers"],
        "use_skip_connections": bool(config["use_residual"]),
    }
    for key in ("cell_clip", "proj_clip"):
        if config[key] is not None:
            lstm[key] = float(config[key])
    char_cnn = {
        "activation": config["activation"],
        "embedding": {"dim": config["char_embedding_dim"]},
        "filters": [[int(w), int(n)] for w, n in config["filters"]],
        "max_characters_per_token": config["max_characters"],
        "n_characters": config["num_characters"],
        "n_highway": config["num_highway"],
    }
    options = {"lstm": lstm, "char_cnn": char_cnn}
    source = f"{type(backbone).__name__} {backbone.name!r}"
    try:
        back = options_config(options, source)
    except ConfigError as e:
        raise ExportError(f"bilm-tf cannot express this configuration: {e}") from None
    differ = [
        f"{key}={config[key]!r} (bilm-tf's options give {back[key]!r})"
        for key in _OPTION_KEYS
        if back[key] != config[key]
    ]
    if differ:
        raise ExportError(
            f"{source}: bilm-tf cannot express {', '.join(differ)}"
            + (" (bilm-tf's LSTMCell applies proj_clip only with a projection, lstm.projection_dim < lstm.dim)"
               if any(d.startswith("proj_clip") for d in differ) else "")
            + "."
        )
    return options


def bilm_arrays(backbone):
    """{hdf5 dataset name: float32 array}: `weight_table` run backwards.

    Raises `ExportError` when a variable bilm-tf does not store (a projection
    bilm-tf omits) does not hold the value bilm-tf implies, or when a weight
    of the backbone is not in the table.
    """
    entries, fixed = weight_table(backbone)
    arrays = {}
    for entry in entries:
        values = [_numpy(v) for v in entry.variables]
        array = values[0] if entry.to_bilm is None else entry.to_bilm(values)
        if tuple(array.shape) != tuple(entry.stored_shape):  # a table that does not invert
            raise ExportError(
                f"{entry.name}: the inverse transform gives {tuple(array.shape)}, bilm-tf stores "
                f"{tuple(entry.stored_shape)}."
            )
        arrays[entry.name] = np.ascontiguousarray(array, dtype=np.float32)
    for weight in fixed:
        if not np.array_equal(_numpy(weight.variable), weight.value):
            kind = "the identity" if weight.value.ndim == 2 else "zeros"
            raise ExportError(
                f"{weight.variable.path}: {weight.reason}, so this weight must be {kind}; it is not "
                "(a model trained with this configuration cannot be written as a bilm-tf release)."
            )
    covered = {id(v) for entry in entries for v in entry.variables} | {id(w.variable) for w in fixed}
    missing = [v.path for v in backbone.trainable_weights if id(v) not in covered]
    if missing:
        raise ExportError(f"{backbone.name}: weights with no bilm-tf name: {missing}.")
    return arrays


def bilm_vocabulary(vocabulary, size=None):
    """bilm's word list for our `vocabulary` (`["<pad>", "<S>", "</S>", "<UNK>", words...]`, as
    `convert_bilm` returns it and `keras_pretrain.data.words` builds it): without `<pad>`, which
    bilm has not. `size`: the softmax rows it must match."""
    from keras_pretrain.text import SPECIAL_TOKENS

    if isinstance(vocabulary, (str, bytes)) or not all(isinstance(w, str) for w in vocabulary):
        raise ExportError(
            f"vocabulary: expected a list of words (str), found {type(vocabulary).__name__}."
        )
    words = list(vocabulary)
    if words[: len(SPECIAL_TOKENS)] != SPECIAL_TOKENS:
        raise ExportError(
            f"vocabulary: expected our order, {SPECIAL_TOKENS} first (as convert_bilm returns it); "
            f"found {words[: len(SPECIAL_TOKENS)]}."
        )
    if size is not None and len(words) != size:
        raise ExportError(f"vocabulary: {len(words)} words for a softmax of {size} rows.")
    bad = [w for w in words if not w or w != w.strip() or "\n" in w or "\r" in w or w == "!!!MAXTERMID"]
    if bad:
        raise ExportError(
            f"vocabulary: words bilm's one-word-per-line file cannot hold (empty, surrounding whitespace, "
            f"line breaks, '!!!MAXTERMID'): {bad[:5]}."
        )
    duplicates = sorted(w for w, n in collections.Counter(words).items() if n > 1)
    if duplicates:
        raise ExportError(f"vocabulary: repeated words {duplicates[:5]} (bilm takes a word's first line).")
    return words[1:]


def _create(path):
    """A new text file at `path`: never an existing file, never through a symbolic link."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    return os.fdopen(os.open(path, flags, 0o644), "w", encoding="utf-8", newline="\n")


def _write_hdf5(path, arrays):
    import h5py

    with h5py.File(path, "x") as f:  # "x": fails on any existing path, links included
        for name, array in arrays.items():
            f.create_dataset(name, data=array)


def _write_softmax(folder, weights, bias):
    """bilm-tf's training checkpoint of the softmax (a TF1 name-based checkpoint) and its state file."""
    import tensorflow as tf

    os.mkdir(folder)  # new: fails on an existing path, links included
    prefix = os.path.join(folder, SOFTMAX_PREFIX)
    with tf.device("CPU:0"):
        tf.raw_ops.SaveV2(
            prefix=prefix,
            tensor_names=["lm/softmax/W", "lm/softmax/b"],
            shape_and_slices=["", ""],
            tensors=[tf.constant(weights), tf.constant(bias)],
        )
    with _create(os.path.join(folder, "checkpoint")) as f:
        f.write(f'model_checkpoint_path: "{SOFTMAX_PREFIX}"\nall_model_checkpoint_paths: "{SOFTMAX_PREFIX}"\n')
    return prefix


def export_bilm(model, folder, vocabulary=None):
    """Writes `model` as a bilm-tf release into `folder` (see the module docstring).

    Args:
        model: an `ElmoBackbone`, or an `ElmoBiLM` (its backbone and its
            word softmax).
        folder: a new or empty folder (an existing non-empty one, a file or a
            symbolic link are refused).
        vocabulary: the words of the softmax rows in our order (`<pad>`,
            `<S>`, `</S>`, `<UNK>`, words...: what `convert_bilm` returns);
            needed with an `ElmoBiLM`, optional with a backbone. Written as
            bilm's `vocab.txt` without `<pad>`; the softmax is written
            without row 0 (bilm has no padding word: on import row 0 gets
            zero weights and bias -1e30, so every word's logit is unchanged
            and its probability changes only by the mass `<pad>` had).

    Returns:
        dict of the written paths: `options`, `weights`, and `vocabulary`,
        `softmax` (the checkpoint folder, for `convert_bilm(softmax=...)`)
        where written.

    Raises:
        ExportError: another model, a folder that is not new or empty, a
            configuration or weight bilm-tf cannot express (named), a
            vocabulary that does not fit.
    """
    from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone
    from keras_pretrain.models.elmo.elmo_pretrainer import ElmoBiLM
    from keras_pretrain.models.elmo.elmo_pretrainer import NEG_INF

    folder = os.fspath(folder)
    if isinstance(model, ElmoBiLM):
        backbone, softmax = model.backbone, model.softmax
    elif isinstance(model, ElmoBackbone):
        backbone, softmax = model, None
    else:
        raise ExportError(
            f"{type(model).__name__}: export_bilm writes an ElmoBackbone or an ElmoBiLM "
            "(for a task model, pass its .backbone)."
        )
    if softmax is not None and vocabulary is None:
        raise ExportError(
            f"{model.name}: an ElmoBiLM's softmax needs its vocabulary (vocabulary=, the words in our order as "
            "convert_bilm returns them)."
        )
    # Everything is checked and computed before anything is written.
    options = bilm_options(backbone)
    arrays = bilm_arrays(backbone)
    words = None
    if vocabulary is not None:
        words = bilm_vocabulary(vocabulary, None if softmax is None else softmax.vocabulary_size)
    if softmax is not None:
        table, bias = _numpy(softmax.embeddings), _numpy(softmax.bias)
        if bias[0] > NEG_INF / 2:
            print(f"{model.name}: the softmax row 0 (<pad>, bias {bias[0]:.3g}) is not written (bilm has no "
                  "padding word); on import it gets bias -1e30.", flush=True)
        softmax_arrays = (np.ascontiguousarray(table[1:]), np.ascontiguousarray(bias[1:]))

    prepare_new_folder(folder)
    paths = {"options": os.path.join(folder, OPTIONS_FILE), "weights": os.path.join(folder, WEIGHTS_FILE)}
    with _create(paths["options"]) as f:
        json.dump(options, f, indent=2)
        f.write("\n")
    _write_hdf5(paths["weights"], arrays)
    if words is not None:
        paths["vocabulary"] = os.path.join(folder, VOCABULARY_FILE)
        with _create(paths["vocabulary"]) as f:
            f.write("".join(w + "\n" for w in words))
    if softmax is not None:
        paths["softmax"] = os.path.join(folder, SOFTMAX_FOLDER)
        _write_softmax(paths["softmax"], *softmax_arrays)
    print(f"{folder}: wrote a bilm-tf release ({', '.join(sorted(os.listdir(folder)))}).", flush=True)
    return paths
