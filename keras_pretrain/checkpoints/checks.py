"""Checks of a release's files made before anything is built or allocated (hostile or mismatched input).

A release's configuration decides what the importer builds: a `model.pt` whose `args.encoder_layers` is
1,000,000, or an `xlnet_config.json` with `n_layer: 1000000` beside a 2-layer checkpoint, would build a
million layers (hours, then out of memory) before `WeightLoader.finish` says that nothing fits. So every
importer compares the configuration with the checkpoint's variable names and shapes first
(`check_config`), from what the checkpoint's index says (TF1 `.index`, a safetensors header, hdf5 dataset
shapes, the state dict's tensors), and refuses in a moment with one `ConfigError` naming both files:

- each layer count of the config must equal the number of numbered blocks of the checkpoint (a
  regular expression over its names, e.g. `bert/encoder/layer_(\\d+)/`);
- each size (vocabulary, width, feed-forward width, positions, ...) must equal the dimension of at least
  one of the variables that hold it (the "probes": a name, an axis and a factor, e.g. the LSTM bias is
  4 x dim); one damaged variable among agreeing ones is left to `WeightLoader.finish`, which lists it
  with every other problem;
- a size whose probes are all absent from the checkpoint cannot be checked exactly; it must then not
  exceed the checkpoint's largest dimension (the missing variables are listed later, as usual);
- a count the checkpoint cannot tell (ALBERT's shared layers) must not exceed `MAX_UNCHECKED_COUNT`.

Also here: NumPy `.npy` headers read without reading the data (`npy_header`: a header claiming more
values than the file holds is refused before anything is allocated; a `.npz` saved as `.npy` is named
as such), the shapes of a safetensors file from its header (`safetensors_shapes`), the nesting depth of
an unpickled object (`check_nesting`), a tokenizer file that its library cannot read
(`tokenizer_from_file`) and the note printed when a release has no tokenizer (`no_tokenizer`).
"""

import json
import os
import re
import struct

import numpy as np

from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError

# The most blocks a configuration may claim where the checkpoint cannot tell how many (ALBERT's
# num_hidden_layers: its groups are shared; the published models have 12 or 24).
MAX_UNCHECKED_COUNT = 1024
# How deep a checkpoint's pickled objects may nest (fairseq's are about 6 deep).
MAX_NESTING = 100


def _is_size(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _first_line(error):
    text = str(error)
    return text.splitlines()[0][:200] if text else ""


def read_json(path):
    """Reads a JSON config file, raising `ConfigError` naming the file."""
    if not os.path.exists(path):
        raise ConfigError(f"{path}: file not found.")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid JSON ({e}).") from None
    if not isinstance(config, dict):
        raise ConfigError(f"{path}: expected a JSON object, found {type(config).__name__}.")
    return config


def count_blocks(names, pattern):
    """The sorted distinct block numbers that `pattern` (a regex with one group) finds in `names`."""
    expression = re.compile(pattern)
    found = set()
    for name in names:
        match = expression.search(name)
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def check_config(config, checkpoint, shapes, sizes=(), layers=(), unchecked=()):
    """Refuses (ConfigError naming `config` and `checkpoint`) a configuration that disagrees with the
    checkpoint's variables, before a model is built (see the module docstring).

    Args:
        config: the file the sizes come from (for messages).
        checkpoint: the checkpoint file or prefix (for messages).
        shapes: {variable name: shape} of the checkpoint (from its index; nothing read).
        sizes: `(key, value, probes)`: the config's `key` says `value`; `probes` are
            `(name, axis)` or `(name, axis, factor)`: variable `name`'s dimension `axis` is
            `factor * value` (factor 1 by default).
        layers: `(key, value, pattern)`: `value` blocks, counted in the checkpoint's names by
            `pattern` (a regex whose group 1 is the block number).
        unchecked: `(key, value)`: counts the checkpoint cannot tell, bounded by
            `MAX_UNCHECKED_COUNT`.
    """
    shapes = {name: tuple(int(d) for d in shape) for name, shape in shapes.items()}
    where = f"{config} (checked against {checkpoint})"
    for key, value, *_ in tuple(sizes) + tuple(layers) + tuple(unchecked):
        if not _is_size(value) or value < 0:
            raise ConfigError(f"{config}: {key} must be a non-negative integer; found {value!r}.")
    problems = []
    for key, value, pattern in layers:
        found = count_blocks(shapes, pattern)
        if len(found) != value or (found and found[-1] != len(found) - 1):
            numbers = f"numbered {found[0]} .. {found[-1]}" if found else "none"
            problems.append(f"{key} is {value}, but {checkpoint} holds {len(found)} ({numbers}; "
                            f"names matching {pattern!r})")
    largest = max((d for shape in shapes.values() for d in shape), default=0)
    for key, value, probes in sizes:
        present = [(p[0], p[1], p[2] if len(p) > 2 else 1) for p in probes if p[0] in shapes]

        def agrees(name, axis, factor):
            shape = shapes[name]
            return -len(shape) <= axis < len(shape) and shape[axis] == factor * value

        # One damaged variable is the loader's to list (with every other problem); a size that no
        # variable holding it confirms is the configuration's.
        if present and not any(agrees(*probe) for probe in present):
            name, axis, factor = present[0]
            claim = f"{factor} x {value} = {factor * value}" if factor != 1 else f"{value}"
            problems.append(f"{key} is {value}, but {name!r} has shape {list(shapes[name])} (axis {axis} "
                            f"should be {claim})")
        if not present and value > largest:
            problems.append(f"{key} is {value}, more than any dimension of {checkpoint} (the largest is "
                            f"{largest}; none of {[p[0] for p in probes]} is in it)")
    for key, value in unchecked:
        if value > MAX_UNCHECKED_COUNT:
            problems.append(f"{key} is {value}; the checkpoint cannot tell this count and more than "
                            f"{MAX_UNCHECKED_COUNT} is refused")
    if problems:
        raise ConfigError(
            f"{where}: the configuration does not describe this checkpoint, nothing was built: "
            + "; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
            + "."
        )


def heads_divide(config, key_heads, heads, key_width, width):
    """ConfigError unless `heads` (positive) divides `width`."""
    if not _is_size(heads) or heads <= 0 or not _is_size(width) or width % heads:
        raise ConfigError(f"{config}: {key_width} {width!r} is not divisible by {key_heads} {heads!r}.")


# --- Files read by their headers ---------------------------------------------------------------------------


def safetensors_shapes(path):
    """{name: shape} from a safetensors file's header (nothing else read); CheckpointFormatError naming it."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ValueError("shorter than its 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            size = os.path.getsize(path)
            if length > size - 8:
                raise ValueError(f"the header claims {length:,} bytes; the file has {size:,}")
            header = json.loads(f.read(length).decode("utf-8"))
        return {name: tuple(entry["shape"]) for name, entry in header.items() if name != "__metadata__"}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise CheckpointFormatError(f"{path}: unreadable safetensors header ({type(e).__name__}: "
                                    f"{_first_line(e)}).") from None


def hf_shapes(folder):
    """{name: shape} of a Hugging Face folder's weights without reading them (safetensors header; a
    `pytorch_model.bin` is opened memory-mapped), or None when neither file is there."""
    path = os.path.join(folder, "model.safetensors")
    if os.path.isfile(path):
        return path, safetensors_shapes(path)
    path = os.path.join(folder, "pytorch_model.bin")
    if os.path.isfile(path):
        try:
            import torch

            state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            return path, {k: tuple(v.shape) for k, v in state.items() if hasattr(v, "shape")}
        except Exception:  # the loader reports an unreadable file with its own message
            return path, None
    return None, None


ZIP_MAGIC = b"PK\x03\x04"


def npy_header(path):
    """`(shape, dtype, offset)` of a `.npy` file, read from its header only.

    Raises:
        CheckpointFormatError naming the file: a `.npz` (zip) saved under a `.npy` name, not a `.npy`
            file, an object array, or a header that claims more bytes than the file holds (nothing is
            allocated).
    """
    from numpy.lib import format as npy_format

    try:
        with open(path, "rb") as f:
            start = f.read(4)
            if start == ZIP_MAGIC:
                raise CheckpointFormatError(
                    f"{path}: a .npz (zip) archive saved under a .npy name, not a .npy array.")
            f.seek(0)
            version = npy_format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = npy_format.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = npy_format.read_array_header_2_0(f)
            offset = f.tell()
    except CheckpointFormatError:
        raise
    except (OSError, ValueError, EOFError, SyntaxError, TypeError) as e:
        raise CheckpointFormatError(f"{path}: not a NumPy .npy array ({type(e).__name__}: {_first_line(e)}).") \
            from None
    if dtype.hasobject:
        raise CheckpointFormatError(f"{path}: a .npy array of Python objects (pickled); refusing to read it.")
    count = int(np.prod(shape, dtype=np.float64)) if shape else 1
    available = os.path.getsize(path) - offset
    if count * dtype.itemsize > available:
        raise CheckpointFormatError(
            f"{path}: truncated or forged: its header claims {count:,} values of {dtype} "
            f"({count * dtype.itemsize:,} bytes) but the file holds {available:,} bytes of data (nothing was "
            "read).")
    return tuple(shape), dtype, offset


# --- Objects and files a release holds ---------------------------------------------------------------------


def check_nesting(value, source, limit=MAX_NESTING):
    """CheckpointFormatError naming `source` when containers in `value` nest deeper than `limit` (checked
    without recursion: a deeply nested pickle would otherwise raise RecursionError wherever it is read)."""
    stack = [(value, 0)]
    seen = set()
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise CheckpointFormatError(
                f"{source}: its objects nest more than {limit} levels deep (a checkpoint's are a few "
                "levels); a corrupt or hostile file, refused.")
        if id(item) in seen:
            continue
        if isinstance(item, dict):
            seen.add(id(item))
            stack.extend((v, depth + 1) for v in item.values())
            stack.extend((k, depth + 1) for k in item.keys() if isinstance(k, tuple))
        elif isinstance(item, (list, tuple, set, frozenset)):
            seen.add(id(item))
            stack.extend((v, depth + 1) for v in item)
        else:
            attributes = getattr(item, "__dict__", None)
            if isinstance(attributes, dict) and not hasattr(item, "shape"):
                seen.add(id(item))
                stack.append((attributes, depth + 1))


def tokenizer_from_file(make, path, what):
    """`make()`, a tokenizer built from the file `path`; any error of its library (a corrupt
    `spiece.model` raises a TensorFlow `InternalError` that names no file) becomes one
    CheckpointFormatError naming the file and `what` it should be."""
    try:
        return make()
    except (CheckpointFormatError, ConfigError):
        raise
    except Exception as e:
        detail = re.sub(r"\{\{.*?\}\}\s*", "", _first_line(e)).strip()  # TF's op-name prefix
        raise CheckpointFormatError(f"{path}: not a readable {what} ({type(e).__name__}: "
                                    f"{detail or 'no detail'}).") from None


def no_tokenizer(source, expected):
    """Prints that the release `source` holds no tokenizer (`expected`: the files looked for)."""
    print(f"{source}: no tokenizer in this release (looked for {expected}); the model is loaded without one.",
          flush=True)


def check_finite(name, value, source):
    """A problem line (or None) when the float array `value` holds NaN or Inf values."""
    value = np.asarray(value)
    if not np.issubdtype(value.dtype, np.inexact) or value.size == 0:
        return None
    finite = np.isfinite(value)
    if finite.all():
        return None
    bad = int(value.size - np.count_nonzero(finite))
    kind = "NaN" if np.isnan(value).any() and not np.isinf(value).any() else "NaN / Inf"
    amount = "all" if bad == value.size else f"{bad:,} of {value.size:,}"
    return f"{name!r} holds {kind} values ({amount}): a corrupt checkpoint"


def check_hf_folder(folder, spec, checks):
    """A Hugging Face folder's `config.json` against its weights' shapes (the safetensors header), before
    anything is built. `checks(kwargs, config_path, shapes)` gives `(sizes, layers)` or `(sizes, layers,
    unchecked)` of `check_config`; `spec` the family's `HFSpec` (its `config` makes the kwargs)."""
    config_path = os.path.join(os.fspath(folder), "config.json")
    config = read_json(config_path)
    kwargs = spec.config(config, config_path)
    weights, shapes = hf_shapes(folder)
    if shapes is None:
        return  # no weights, or unreadable: the loader says so
    check_config(config_path, weights, shapes, *checks(kwargs, config_path, shapes))


def tokenizer_note(result, folder, spec):
    """`result` (`(model, tokenizer)`) of a Hugging Face conversion, saying when there is no tokenizer."""
    if result[1] is None and spec.tokenizer is not None:
        no_tokenizer(folder, " + ".join(spec.tokenizer_files))
    return result
