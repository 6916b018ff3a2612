"""ELMo from its original releases: bilm-tf / AllenNLP files and the TF1 hub module.

The bilm-tf release (allennlp.org/elmo) is two files: `*_options.json` (the
`lstm` and `char_cnn` sections, mapped by `options_config`) and
`*_weights.hdf5`, written by bilm-tf's `training.dump_weights`:

| hdf5 dataset (shape) | our weight | transform |
|---|---|---|
| `char_embed` [261, E] | `char_encoder.char_embedding.embeddings` [262, E] | prepend a zero row (id 0 = padding token) |
| `CNN/W_cnn_{i}` [1, w, E, n], `CNN/b_cnn_{i}` | `char_encoder.convolutions[i]` | drop the leading 1 |
| `CNN_high_{i}/{W,b}_carry`, `{W,b}_transform` | `char_encoder.highways[i]` (carry, transform) | none (not negated: our gate is bilm's) |
| `CNN_proj/W_proj`, `b_proj` [F, D] | `char_encoder.projection` | none; absent when F == D: identity, zeros |
| `RNN_{d}/RNN/MultiRNNCell/Cell{i}/LSTMCell/W_0` [in + D, 4C] | `{forward,backward}_layers[i]` (d = 0, 1) | `kernel` = rows `[:in]`, `recurrent_kernel` = rows `[in:]`; gates stay i, j, f, o |
| `.../LSTMCell/B` [4C] | `bias` | none (TF adds `forget_bias=1.0` at run time, as `LSTMP`) |
| `.../LSTMCell/W_P_0` [C, D] | `projection` | none; absent when D == C: identity (and no proj_clip) |

The word softmax is not in the hdf5 (`dump_weights` skips it): it comes
from a bilm-tf training checkpoint (`lm/softmax/W` [V, D], `lm/softmax/b`
[V]) and bilm's vocabulary file, see `convert_bilm(softmax=...)`.

The TF1 hub module (`tfhub.dev/google/elmo/2`, `/3`: `saved_model.pb`,
`tfhub_module.pb`, `variables/`) holds the variables of bilm-tf's inference
graph (`bilm/char_embed` [262, E] already with its padding row,
`bilm/CNN/W_cnn_{i}`, `bilm/CNN_high_{i}/...`, `bilm/CNN_proj/...`,
`bilm/RNN_{d}/RNN/MultiRNNCell/Cell{i}/rnn/lstm_cell/{kernel,bias,projection/kernel}`)
and its layer mix `aggregation/weights`, `aggregation/scaling`; see
`convert_tf1_hub`. Seen in published TF-Hub load logs (tensorflow/hub
issues #88, elmo/2, and #450, elmo/3): `aggregation/weights`,
`aggregation/scaling`, `bilm/CNN/W_cnn_{i}`,
`bilm/RNN_0/RNN/MultiRNNCell/Cell1/rnn/lstm_cell/bias` (a `module/` scope
is added only when the module is instantiated); the other names are those
bilm-tf's graph gives its variables in the same scopes.
"""

import collections
import glob
import json
import os
import re

import numpy as np

from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError

# Names of the two layouts, relative to their prefix ("" / "bilm/").
HDF5_LSTM = {"kernel": "LSTMCell/W_0", "bias": "LSTMCell/B", "projection": "LSTMCell/W_P_0"}
HUB_LSTM = {
    "kernel": "rnn/lstm_cell/kernel",
    "bias": "rnn/lstm_cell/bias",
    "projection": "rnn/lstm_cell/projection/kernel",
}
ACTIVATIONS = ("relu", "tanh")
# What the published models (and so the hub module) use where the hub module
# stores no options: elmo_2x4096_512_2048cnn_2xhighway_options.json.
PUBLISHED_LSTM = {"cell_clip": 3.0, "proj_clip": 3.0, "use_skip_connections": True}
PUBLISHED_CHAR_CNN = {"activation": "relu", "max_characters_per_token": 50}
# bilm's LSTM state variables (`tf.Variable`s, [max_batch_size, dim]) and the
# hub module's layer mix: not backbone weights.
HUB_IGNORE = ("bilm/Variable*", "aggregation/*")


# --- Options -----------------------------------------------------------------


def _get(section, key, source, where, check, expected, default=KeyError):
    if key not in section:
        if default is KeyError:
            raise ConfigError(f"{source}: missing key {where}.{key} ({expected}).")
        return default
    value = section[key]
    if not check(value):
        raise ConfigError(f"{source}: {where}.{key} must be {expected}; found {value!r}.")
    return value


def _positive_int(v):
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _clip(v):
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0)


def options_config(options, source):
    """bilm-tf's options (a dict) -> `ElmoBackbone` keyword arguments.

    `lstm`: `dim` (C), `projection_dim` (D), `n_layers` (default 1, as
    bilm-tf), `use_skip_connections`, `cell_clip`, `proj_clip` (optional);
    `char_cnn`: `activation` ("relu" / "tanh"), `embedding.dim`, `filters`,
    `max_characters_per_token`, `n_characters` (262; 261, the training
    value, is accepted), `n_highway` (optional). Other keys (the training
    ones) are ignored. `proj_clip` applies only when D < C (TF's LSTMCell
    clips only a projection); D > C and filters narrower than D (bilm-tf
    can only project down) are refused.

    Raises:
        ConfigError: naming `source`, the key, what was expected and found.
    """
    if not isinstance(options, dict):
        raise ConfigError(f"{source}: expected a JSON object, found {type(options).__name__}.")
    sections = {}
    for name in ("lstm", "char_cnn"):
        section = options.get(name)
        if not isinstance(section, dict):
            raise ConfigError(
                f"{source}: missing section {name!r} (an ELMo options file has 'lstm' and "
                f"'char_cnn'; found keys {sorted(options)})."
            )
        sections[name] = section
    lstm, cnn = sections["lstm"], sections["char_cnn"]
    dim = _get(lstm, "dim", source, "lstm", _positive_int, "a positive integer")
    proj = _get(lstm, "projection_dim", source, "lstm", _positive_int, "a positive integer")
    layers = _get(lstm, "n_layers", source, "lstm", _positive_int, "a positive integer", 1)
    skip = _get(lstm, "use_skip_connections", source, "lstm", lambda v: isinstance(v, bool), "true or false")
    cell_clip = _get(lstm, "cell_clip", source, "lstm", _clip, "a positive number or null", None)
    proj_clip = _get(lstm, "proj_clip", source, "lstm", _clip, "a positive number or null", None)
    activation = _get(cnn, "activation", source, "char_cnn", lambda v: v in ACTIVATIONS, f"one of {ACTIVATIONS}")
    embedding = _get(cnn, "embedding", source, "char_cnn", lambda v: isinstance(v, dict), "an object {'dim': E}")
    embedding_dim = _get(embedding, "dim", source, "char_cnn.embedding", _positive_int, "a positive integer")
    filters = _get(
        cnn, "filters", source, "char_cnn",
        lambda v: isinstance(v, list) and v and all(
            isinstance(f, list) and len(f) == 2 and all(map(_positive_int, f)) for f in v
        ),
        "a non-empty list of [width, count] positive integer pairs",
    )
    max_chars = _get(cnn, "max_characters_per_token", source, "char_cnn", _positive_int, "a positive integer")
    _get(cnn, "n_characters", source, "char_cnn", lambda v: v in (261, 262), "262 (or 261 in training files)")
    highway = _get(
        cnn, "n_highway", source, "char_cnn", lambda v: v is None or (isinstance(v, int) and v >= 0),
        "a non-negative integer or null", None,
    )
    num_filters = sum(n for _, n in filters)
    if proj > dim:
        raise ConfigError(f"{source}: lstm.projection_dim {proj} exceeds lstm.dim {dim}.")
    if num_filters < proj:
        raise ConfigError(
            f"{source}: the char_cnn filters give {num_filters} channels, fewer than "
            f"lstm.projection_dim {proj} (bilm-tf only projects down)."
        )
    if max(w for w, _ in filters) > max_chars:
        raise ConfigError(f"{source}: a filter is wider than max_characters_per_token {max_chars}.")
    return {
        "num_layers": layers,
        "hidden_dim": proj,
        "lstm_dim": dim,
        "filters": [[w, n] for w, n in filters],
        "num_highway": highway or 0,
        "char_embedding_dim": embedding_dim,
        "num_characters": 262,
        "max_characters": max_chars,
        "activation": activation,
        "cell_clip": None if cell_clip is None else float(cell_clip),
        "proj_clip": None if proj_clip is None or proj == dim else float(proj_clip),
        "use_residual": skip,
        "dropout": 0.0,
    }


def read_options(path):
    """The options file at `path` as a dict (`ConfigError` naming it)."""
    from keras_pretrain.checkpoints.huggingface import read_json

    return read_json(path)


# --- The name table (import and export) ------------------------------------------


class WeightEntry(collections.namedtuple("WeightEntry", "name variables stored_shape to_ours to_bilm")):
    """One bilm-tf array and the variables it fills.

    `name`: the hdf5 dataset / checkpoint variable; `variables`: our
    variables it maps to (two for an LSTM's `W_0`); `stored_shape`: its shape
    in bilm's file; `to_ours(array)` -> one array per variable, and
    `to_bilm(arrays)` its inverse; both None when the array is the variable
    as it is.
    """


class FixedWeight(collections.namedtuple("FixedWeight", "variable value reason")):
    """A variable bilm-tf does not store because its layer is absent (a
    projection when the widths agree): it must hold `value`."""


def _prepend_padding_row(w):
    return [np.concatenate([np.zeros_like(w[:1]), w])]


def _drop_padding_row(arrays):
    return arrays[0][1:]


def _drop_leading_one(w):
    return [w[0]]


def _add_leading_one(arrays):
    return arrays[0][None]


def _split_rows(rows):
    return lambda w: [w[:rows], w[rows:]]


def _stack_rows(arrays):
    return np.concatenate(arrays, axis=0)


def _shape(variable):
    return tuple(int(d) for d in variable.shape)


def weight_table(backbone, prefix="", lstm_names=HDF5_LSTM, padding_row=False):
    """`(entries, fixed)`: the table of the module docstring for `backbone`.

    `entries`: a `WeightEntry` per bilm-tf array, in `dump_weights`' order;
    `fixed`: a `FixedWeight` per variable bilm-tf has no array for (the
    projections it omits: identity, zero bias). `load_backbone` runs the
    table forwards, `elmo_export.export_bilm` backwards.

    Args:
        prefix: "" (hdf5) or "bilm/" (hub module).
        lstm_names: the LSTM weight names below `.../Cell{i}/` (HDF5_LSTM, HUB_LSTM).
        padding_row: the character table already holds the padding row 0
            (bilm's inference graph); else bilm's has one row fewer (training dump).
    """
    entries, fixed = [], []

    def plain(name, variable):
        entries.append(WeightEntry(name, (variable,), _shape(variable), None, None))

    encoder = backbone.char_encoder
    table = encoder.char_embedding.embeddings
    rows, width = _shape(table)
    if padding_row:
        plain(f"{prefix}char_embed", table)
    else:
        entries.append(WeightEntry(
            f"{prefix}char_embed", (table,), (rows - 1, width), _prepend_padding_row, _drop_padding_row
        ))
    for i, conv in enumerate(encoder.convolutions):
        entries.append(WeightEntry(
            f"{prefix}CNN/W_cnn_{i}", (conv.kernel,), (1,) + _shape(conv.kernel), _drop_leading_one, _add_leading_one
        ))
        plain(f"{prefix}CNN/b_cnn_{i}", conv.bias)
    for i, (carry, transform) in enumerate(encoder.highways):
        scope = f"{prefix}CNN_high_{i}"
        plain(f"{scope}/W_carry", carry.kernel)
        plain(f"{scope}/b_carry", carry.bias)
        plain(f"{scope}/W_transform", transform.kernel)
        plain(f"{scope}/b_transform", transform.bias)
    projection = encoder.projection
    if encoder.num_filters == backbone.hidden_dim:  # bilm-tf has no CNN_proj
        reason = "bilm-tf has no CNN_proj when the char_cnn filters sum to lstm.projection_dim"
        fixed.append(FixedWeight(projection.kernel, np.eye(*_shape(projection.kernel), dtype="float32"), reason))
        fixed.append(FixedWeight(projection.bias, np.zeros(_shape(projection.bias), "float32"), reason))
    else:
        plain(f"{prefix}CNN_proj/W_proj", projection.kernel)
        plain(f"{prefix}CNN_proj/b_proj", projection.bias)
    for d, layers in enumerate((backbone.forward_layers, backbone.backward_layers)):
        for i, layer in enumerate(layers):
            cell = f"{prefix}RNN_{d}/RNN/MultiRNNCell/Cell{i}/"
            first, second = layer.kernel, layer.recurrent_kernel
            stored = (first.shape[0] + second.shape[0], first.shape[1])
            entries.append(WeightEntry(
                cell + lstm_names["kernel"], (first, second), tuple(int(d) for d in stored),
                _split_rows(first.shape[0]), _stack_rows,
            ))
            plain(cell + lstm_names["bias"], layer.bias)
            if backbone.hidden_dim == backbone.lstm_dim:  # an LSTMCell without num_proj
                fixed.append(FixedWeight(
                    layer.projection, np.eye(*_shape(layer.projection), dtype="float32"),
                    "bilm-tf's LSTMCell has no projection (W_P_0) when lstm.projection_dim == lstm.dim",
                ))
            else:
                plain(cell + lstm_names["projection"], layer.projection)
    return entries, fixed


# --- Placing -------------------------------------------------------------------


def _place(loader, entry):
    """`loader.assign` for one entry; a transformed array's shape mismatch is
    reported with the stored shapes."""
    if entry.to_ours is None:
        loader.assign(entry.variables[0], entry.name)
        return
    value = loader.get(entry.name)
    if value is None:
        return
    if tuple(value.shape) != tuple(entry.stored_shape):
        loader.problems.append(
            f"shape mismatch for {entry.name!r}: checkpoint has {tuple(value.shape)}, model variable "
            f"{entry.variables[0].path!r} expects it stored as {tuple(entry.stored_shape)}"
        )
        return
    for variable, array in zip(entry.variables, entry.to_ours(value)):
        variable.assign(array.astype(variable.dtype))


def load_backbone(backbone, loader, prefix="", lstm_names=HDF5_LSTM, padding_row=False):
    """Places bilm-tf's weights (named as in the hdf5 or the hub module) on
    `backbone`: `weight_table` run forwards (same arguments)."""
    entries, fixed = weight_table(backbone, prefix, lstm_names, padding_row)
    for entry in entries:
        _place(loader, entry)
    for weight in fixed:
        weight.variable.assign(weight.value.astype(weight.variable.dtype))


# --- Softmax and vocabulary ------------------------------------------------------


def read_bilm_vocabulary(path):
    """bilm-tf's vocabulary file as bilm's `Vocabulary` reads it.

    One word per line (stripped), `!!!MAXTERMID` skipped; the line number
    is the word id. Returns `(words, ids)` with `ids` the ids of `<S>`,
    `</S>`, `<UNK>` (`ConfigError` naming the file when one is missing).
    """
    try:
        with open(path, encoding="utf-8") as f:
            words = [line.strip() for line in f]
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: unreadable vocabulary file ({type(e).__name__}: {e}).") from None
    words = [w for w in words if w != "!!!MAXTERMID"]
    index = {}
    for i, word in enumerate(words):
        index.setdefault(word, i)
    missing = [w for w in ("<S>", "</S>", "<UNK>") if w not in index]
    if missing:
        raise ConfigError(
            f"{path}: bilm-tf vocabulary without {missing} (it must hold <S>, </S> and <UNK>)."
        )
    return words, [index["<S>"], index["</S>"], index["<UNK>"]]


def softmax_order(words, special_ids):
    """`(our_words, order)`: our vocabulary and, for our id k >= 1, the bilm
    id `order[k - 1]` whose softmax row it takes.

    The project's ELMo vocabularies (`keras_pretrain.data.words`) are
    `["<pad>", "<S>", "</S>", "<UNK>", words...]`: id 0 is padding and never
    a target. bilm's are its file's lines, `<S>`, `</S>`, `<UNK>` wherever
    they are (first three in the published 1B Word Benchmark vocabulary, as
    `</S>`, `<S>`, `<UNK>`). Our id 1, 2, 3 take bilm's `<S>`, `</S>`,
    `<UNK>`; the other words keep bilm's order (by frequency, which the
    sampled softmax relies on) from id 4.
    """
    from keras_pretrain.text import SPECIAL_TOKENS

    specials = set(special_ids)
    order = list(special_ids) + [i for i in range(len(words)) if i not in specials]
    return SPECIAL_TOKENS + [words[i] for i in order[3:]], np.array(order)


def load_softmax(lm, loader, order):
    """`lm/softmax/W`, `lm/softmax/b` onto `ElmoBiLM.softmax`, rows in our order.

    Row 0 (`<pad>`) gets zero weights and a bias of -1e30: its probability is
    0, so every other word's full-softmax probability equals bilm's (a
    permutation of bilm's logits plus one that never counts).
    """
    from keras_pretrain.models.elmo.elmo_pretrainer import NEG_INF

    def rows(w, fill):
        if w.shape[0] != len(order):
            return w  # reported as a shape mismatch against our table
        return np.concatenate([np.full((1,) + w.shape[1:], fill, w.dtype), w[order]])

    loader.assign(lm.softmax.embeddings, "lm/softmax/W", lambda w: rows(w, 0.0))
    loader.assign(lm.softmax.bias, "lm/softmax/b", lambda b: rows(b, NEG_INF))


# --- Files ---------------------------------------------------------------------


def _one(folder, pattern, what):
    found = sorted(glob.glob(os.path.join(glob.escape(folder), pattern)))
    if len(found) != 1:
        names = [os.path.basename(p) for p in found]
        raise CheckpointFormatError(
            f"{folder}: expected exactly one {what} ({pattern}); found {names or 'none'}."
            + (" Pass the options file itself and weights=." if found else "")
        )
    return found[0]


def release_files(path, weights=None):
    """`(options, weights)` paths of a bilm release: the options file, or a
    folder holding one `*options.json` and one `*weights.hdf5`."""
    path = os.fspath(path)
    if os.path.isdir(path):
        options = _one(path, "*options.json", "options file")
        if weights is None:
            weights = _one(path, "*weights.hdf5", "weights file")
    elif os.path.isfile(path):
        options = path
        if weights is None:
            weights = _one(os.path.dirname(path) or ".", "*weights.hdf5", "weights file")
    else:
        raise CheckpointFormatError(f"{path}: no such file or folder.")
    weights = os.fspath(weights)
    if not os.path.isfile(weights):
        raise CheckpointFormatError(f"{weights}: no such weights file.")
    return options, weights


def _is_elmo_options(path):
    try:
        with open(path, encoding="utf-8") as f:
            options = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(options, dict) and isinstance(options.get("lstm"), dict) and isinstance(
        options.get("char_cnn"), dict
    )


def is_bilm_release(path):
    """True for an ELMo options file, or a folder holding one `*options.json`
    (with `lstm` and `char_cnn`) and one `*weights.hdf5`."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return path.endswith(".json") and _is_elmo_options(path)
    if not os.path.isdir(path):
        return False
    options = glob.glob(os.path.join(glob.escape(path), "*options.json"))
    weights = glob.glob(os.path.join(glob.escape(path), "*weights.hdf5"))
    return len(options) == 1 and len(weights) == 1 and _is_elmo_options(options[0])


def _hdf5_loader(path, file):
    from keras_pretrain.checkpoints.weights import WeightLoader

    shapes = {}
    file.visititems(lambda name, item: shapes.__setitem__(name, tuple(item.shape)) if hasattr(item, "shape")
                    else None)
    return WeightLoader(shapes, lambda name: file[name][...], path, shapes=shapes)


def check_sizes(kwargs, options_path, loader, prefix="", lstm_names=HDF5_LSTM):
    """The options against the weights' shapes before anything is built
    (`keras_pretrain.checkpoints.checks.check_config`): LSTM layers, widths, filters, highways."""
    from keras_pretrain.checkpoints.checks import check_config

    cell = f"{prefix}RNN_0/RNN/MultiRNNCell/Cell0/"
    projection = [(f"{prefix}CNN_proj/W_proj", 1), (cell + lstm_names["projection"], 1)]
    sizes = [("lstm.dim", kwargs["lstm_dim"], [(cell + lstm_names["bias"], 0, 4)]),
             ("lstm.projection_dim", kwargs["hidden_dim"], projection),
             ("char_cnn.embedding.dim", kwargs["char_embedding_dim"], [(f"{prefix}char_embed", 1)])]
    for i, (width, count) in enumerate(kwargs["filters"]):
        sizes += [(f"char_cnn.filters[{i}] width", width, [(f"{prefix}CNN/W_cnn_{i}", 1)]),
                  (f"char_cnn.filters[{i}] count", count, [(f"{prefix}CNN/W_cnn_{i}", 3)])]
    escaped = re.escape(prefix)
    layers = [("lstm.n_layers", kwargs["num_layers"], f"^{escaped}RNN_0/RNN/MultiRNNCell/Cell(\\d+)/"),
              ("char_cnn.filters (entries)", len(kwargs["filters"]), f"^{escaped}CNN/W_cnn_(\\d+)$"),
              ("char_cnn.n_highway", kwargs["num_highway"], f"^{escaped}CNN_high_(\\d+)/")]
    check_config(options_path, loader.source, loader.shapes, sizes, layers)


def _open_hdf5(path):
    import h5py

    try:
        return h5py.File(path, "r")
    except OSError as e:
        raise CheckpointFormatError(f"{path}: not a readable hdf5 file ({e}).") from None


def _finish(*loaders):
    """One CheckpointFormatError for every loader's problems (each names its file)."""
    messages = []
    for loader in loaders:
        try:
            loader.finish()
        except CheckpointFormatError as e:
            messages.append(str(e))
    if messages:
        raise CheckpointFormatError("\n".join(messages))


def _find_vocabulary(*folders):
    for folder in folders:
        found = sorted(glob.glob(os.path.join(glob.escape(folder), "vocab*.txt")))
        if len(found) == 1:
            return found[0]
    return None


# --- Entry points ----------------------------------------------------------------


def convert_bilm(
    path,
    pretrainer=False,
    weights=None,
    softmax=None,
    vocabulary=None,
    stateful=False,
    max_batch_size=128,
):
    """ELMo from a bilm-tf / AllenNLP release (`*_options.json` + `*_weights.hdf5`).

    The backbone's L+1 layers equal those of bilm-tf's
    `BidirectionalLanguageModel` on the same character ids (ours keep the
    `<S>` / `</S>` positions that bilm's `lm_embeddings` drop; the token
    layer is 0 at padding where bilm's is not).

    Args:
        path: the options file (`elmo_2x4096_512_2048cnn_2xhighway_options.json`)
            or a folder holding exactly one `*options.json` and one
            `*weights.hdf5`.
        pretrainer: return an `ElmoBiLM`: needs `softmax` (the release's
            hdf5 has no softmax).
        weights: the hdf5 file, when not beside the options file.
        softmax: a bilm-tf training checkpoint (its folder, with the
            `checkpoint` state file, or a prefix `.../model.ckpt-N`)
            holding `lm/softmax/W` [V, D] and `lm/softmax/b` [V]: the
            result is an `ElmoBiLM` with this softmax.
        vocabulary: bilm's vocabulary file (one word per line, with `<S>`,
            `</S>`, `<UNK>`) of the softmax; default the one `vocab*.txt`
            beside the checkpoint or the options file. Its words are
            reordered to ours (`softmax_order`): `<pad>` (id 0, zero row,
            bias -1e30), `<S>`, `</S>`, `<UNK>`, then bilm's other words in
            bilm's order; logits of our id k equal bilm's logits of the word
            it names.
        stateful: carry the LSTM states across calls as bilm-tf does (see
            `ElmoBackbone`); default stateless.
        max_batch_size: rows of the carried states (stateful only).

    Returns:
        `(model, vocabulary)`: an `ElmoBackbone` and None, or with `softmax`
        an `ElmoBiLM` and its word list in our order (for
        `keras_pretrain.data.words` and `ElmoBiLM` targets).

    Raises:
        ConfigError: a missing or bad options key, a vocabulary without
            `<S>`, `</S>`, `<UNK>` (naming the file).
        CheckpointFormatError: naming each file, every missing, mis-shaped and
            unexpected dataset / variable at once.
    """
    from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone
    from keras_pretrain.models.elmo.elmo_pretrainer import ElmoBiLM

    options_path, weights_path = release_files(path, weights)
    kwargs = options_config(read_options(options_path), options_path)
    if pretrainer and softmax is None:
        raise ConfigError(
            f"{weights_path}: the hdf5 release holds no softmax (bilm-tf's dump_weights skips it); "
            "pass softmax= (the training checkpoint with lm/softmax/W, lm/softmax/b) for an ElmoBiLM."
        )
    loaders = []
    with _open_hdf5(weights_path) as file:
        loader = _hdf5_loader(weights_path, file)
        check_sizes(kwargs, options_path, loader)
        backbone = ElmoBackbone(**kwargs, stateful=stateful, max_batch_size=max_batch_size)
        load_backbone(backbone, loader)
        loaders.append(loader)
        if softmax is None:
            _finish(loader)
            return backbone, None
        from keras_pretrain.checkpoints.tf1 import tf1_checkpoint
        from keras_pretrain.checkpoints.tf1 import tf1_loader

        with tf1_checkpoint(softmax) as (root, prefix):
            if vocabulary is None:
                vocabulary = _find_vocabulary(os.path.dirname(prefix), root, os.path.dirname(options_path))
            if vocabulary is None:
                raise ConfigError(
                    f"{softmax}: the softmax needs bilm's vocabulary file (vocabulary=; no single "
                    "vocab*.txt beside the checkpoint or the options file)."
                )
            words, special_ids = read_bilm_vocabulary(vocabulary)
            ours, order = softmax_order(words, special_ids)
            lm = ElmoBiLM(backbone, vocabulary_size=len(ours))
            softmax_loader = tf1_loader(prefix, ignore=("*",))
            softmax_loader.source = f"{prefix} (vocabulary {vocabulary}, {len(words)} words)"
            load_softmax(lm, softmax_loader, order)
            loaders.append(softmax_loader)
            _finish(*loaders)
    return lm, ours


# --- TF1 hub module ------------------------------------------------------------------


def _hub_prefix(folder):
    return os.path.join(folder, "variables", "variables")


def _hub_names(folder):
    """{name: shape} of a TF1 hub module's variables, or None."""
    import tensorflow as tf

    try:
        return dict(tf.train.list_variables(_hub_prefix(folder)))
    except Exception:  # not a readable checkpoint
        return None


def _scope(names):
    """"" or "module/" (names saved from inside a hub.Module scope), or None."""
    for scope in ("", "module/"):
        if f"{scope}bilm/CNN/W_cnn_0" in names:
            return scope
    return None


def is_elmo_hub_module(path):
    """True for a TF1 hub module folder (`tfhub_module.pb`, `variables/`)
    whose variables are bilm-tf's (`bilm/CNN/W_cnn_0`, `bilm/RNN_0/...`)."""
    path = os.fspath(path)
    if not (
        os.path.isfile(os.path.join(path, "tfhub_module.pb"))
        and os.path.isfile(_hub_prefix(path) + ".index")
    ):
        return False
    names = _hub_names(path)
    return names is not None and _scope(names) is not None


def hub_options(names, source, scope=""):
    """bilm-tf options inferred from a hub module's variable shapes.

    Filter widths and counts, the character embedding width, the number of
    highway and LSTM layers, C and D come from the shapes; the rest is not
    stored in the variables and takes the published models' values
    (`PUBLISHED_LSTM`, `PUBLISHED_CHAR_CNN`: relu, 50 characters, clips 3,
    skip connections).
    """
    b = f"{scope}bilm/"
    needed = [b + "char_embed", b + "CNN/W_cnn_0", b + "RNN_0/RNN/MultiRNNCell/Cell0/" + HUB_LSTM["bias"]]
    missing = [n for n in needed if n not in names]
    if missing:
        raise CheckpointFormatError(f"{source}: not an ELMo hub module: missing variables {missing}.")
    filters = []
    while f"{b}CNN/W_cnn_{len(filters)}" in names:
        shape = names[f"{b}CNN/W_cnn_{len(filters)}"]
        filters.append([int(shape[1]), int(shape[3])])
    highway = 0
    while f"{b}CNN_high_{highway}/W_carry" in names:
        highway += 1
    layers = 0
    while f"{b}RNN_0/RNN/MultiRNNCell/Cell{layers}/{HUB_LSTM['bias']}" in names:
        layers += 1
    dim = int(names[f"{b}RNN_0/RNN/MultiRNNCell/Cell0/{HUB_LSTM['bias']}"][0]) // 4
    projection = names.get(f"{b}RNN_0/RNN/MultiRNNCell/Cell0/{HUB_LSTM['projection']}")
    return {
        "lstm": {**PUBLISHED_LSTM, "dim": dim, "n_layers": layers,
                 "projection_dim": int(projection[1]) if projection else dim},
        "char_cnn": {**PUBLISHED_CHAR_CNN, "embedding": {"dim": int(names[b + "char_embed"][1])},
                     "filters": filters, "n_characters": 262, "n_highway": highway},
    }


def convert_tf1_hub(path, pretrainer=False, options=None, stateful=False, max_batch_size=128):
    """ELMo from a TF1 hub module folder (`tfhub.dev/google/elmo/2`, `/3`).

    The variables are read by name from `variables/variables` (bilm-tf's
    inference-graph names under `bilm/`, see the module docstring; a
    `module/` scope in front is accepted and stripped). The module stores
    no options: the sizes come from the variable shapes, the rest
    (activation relu, 50 characters, clips 3, skip connections) from the
    published `elmo_2x4096_512_2048cnn_2xhighway` model the hub modules
    hold, unless `options` (an options.json path or dict) says otherwise.
    bilm's LSTM state variables (`bilm/Variable*`) and the module's layer
    mix (`aggregation/weights`, `aggregation/scaling`: use an `ElmoEmbedder`
    for a trainable mix) are not part of the backbone and are skipped.

    Args:
        path: the module folder.
        pretrainer: not available (the module has no softmax): ConfigError.
        options: optional bilm options (file or dict) instead of the inferred ones.
        stateful, max_batch_size: as `convert_bilm`.

    Returns:
        `(ElmoBackbone, None)`.
    """
    from keras_pretrain.checkpoints.tf1 import tf1_loader
    from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone

    path = os.fspath(path)
    if pretrainer:
        raise ConfigError(f"{path}: a TF1 hub module of ELMo holds no word softmax; no ElmoBiLM.")
    prefix = _hub_prefix(path)
    names = _hub_names(path) if os.path.isfile(prefix + ".index") else None
    if names is None:
        raise CheckpointFormatError(
            f"{path}: not a TF1 hub module (no readable variables/variables.index)."
        )
    scope = _scope(names) or ""
    source = prefix
    if options is None:
        options = hub_options(names, source, scope)
    elif not isinstance(options, dict):
        source = os.fspath(options)
        options = read_options(source)
    kwargs = options_config(options, source)
    backbone = ElmoBackbone(**kwargs, stateful=stateful, max_batch_size=max_batch_size)
    loader = tf1_loader(prefix, ignore=tuple(scope + p for p in HUB_IGNORE))
    char_embed = names.get(f"{scope}bilm/char_embed")
    padding_row = char_embed is not None and char_embed[0] == kwargs["num_characters"]
    load_backbone(backbone, loader, f"{scope}bilm/", HUB_LSTM, padding_row=padding_row)
    loader.finish()
    return backbone, None

