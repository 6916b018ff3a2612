"""Copying named arrays from a checkpoint onto Keras variables, checked.

A `WeightLoader` wraps a mapping `name -> array` (read lazily) and the file it
came from. Converters call `loader.assign(variable, name, transform)` for every
variable of the model; `loader.finish()` then raises one
`CheckpointFormatError` that lists every missing name, every shape mismatch
and every unexpected name (other than the ones the converter declared
ignorable, such as optimizer slots), so a user sees all problems at once.
"""

import fnmatch

import numpy as np

from keras_pretrain.checkpoints.checks import check_finite
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ExportError


class WeightLoader:
    """Checked assignment of checkpoint arrays to Keras variables.

    Args:
        names: iterable of the names present in the checkpoint.
        read: callable `name -> np.ndarray`.
        source: str, the file or folder the arrays come from (for messages).
        ignore: glob patterns of names that may stay unused.
        shapes: optional {name: shape} read from the checkpoint's index (nothing loaded), for the
            checks made before a model is built (`keras_pretrain.checkpoints.checks.check_config`).

    Every float array read is checked for NaN and Inf (listed by `finish` as problems).
    """

    def __init__(self, names, read, source, ignore=(), shapes=None):
        self.names = set(names)
        self.shapes = dict(shapes) if shapes is not None else None
        self._read = read
        self.source = str(source)
        self.ignore = tuple(ignore)
        self.used = set()
        self.problems = []

    @classmethod
    def from_dict(cls, arrays, source, ignore=()):
        return cls(arrays.keys(), lambda n: np.asarray(arrays[n]), source, ignore,
                   shapes={n: np.shape(a) for n, a in arrays.items()})

    def __contains__(self, name):
        return name in self.names

    def first_present(self, *names):
        """The first of `names` that the checkpoint holds (else the first)."""
        for name in names:
            if name in self.names:
                return name
        return names[0]

    def get(self, name):
        """The array `name`, or None (recorded as missing)."""
        if name not in self.names:
            self.problems.append(f"missing variable {name!r}")
            return None
        self.used.add(name)
        value = np.asarray(self._read(name))
        problem = check_finite(name, value, self.source)
        if problem is not None:
            self.problems.append(problem)
        return value

    def assign(self, variable, name, transform=None, reshape=False):
        """Copies checkpoint array `name` (after `transform`) into `variable`.

        Args:
            variable: a Keras variable.
            name: the checkpoint name.
            transform: optional callable applied to the array first (e.g. a
                transpose from a PyTorch `Linear` layout).
            reshape: bool. Allow a reshape to the variable's shape when the
                sizes agree (attention kernels split per head).
        """
        value = self.get(name)
        if value is None:
            return
        if transform is not None:
            value = transform(value)
        expected = tuple(variable.shape)
        if tuple(value.shape) != expected:
            if reshape and value.size == int(np.prod(expected)):
                value = value.reshape(expected)
            else:
                self.problems.append(
                    f"shape mismatch for {name!r}: checkpoint has "
                    f"{tuple(value.shape)}, model variable {variable.path!r} "
                    f"expects {expected}"
                )
                return
        variable.assign(value.astype(variable.dtype))

    def unexpected(self):
        return sorted(
            n
            for n in self.names - self.used
            if not any(fnmatch.fnmatchcase(n, p) for p in self.ignore)
        )

    def finish(self, allow_unexpected=False):
        """Raises `CheckpointFormatError` listing every problem found."""
        problems = list(self.problems)
        if not allow_unexpected:
            problems += [
                f"unexpected variable {n!r} (not used by the model)"
                for n in self.unexpected()
            ]
        if problems:
            shown = "\n  - ".join(problems[:50])
            more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
            raise CheckpointFormatError(
                f"{self.source}: {len(problems)} problem(s) loading weights:"
                f"\n  - {shown}{more}"
            )


class Transform:
    """A checkpoint array -> variable transform that an exporter can run backwards.

    `forward(array)` gives the variable's value; `inverse(value, stored)` gives the checkpoint array back
    from the variable's `value`, where `stored` is what was already written under the same name (None the
    first time: several variables may share one checkpoint array, as GPT's stacked q, k, v).
    """

    def __init__(self, forward, inverse, name):
        self.forward, self.inverse, self.name = forward, inverse, name

    def __call__(self, array):
        return self.forward(array)

    def __repr__(self):
        return f"Transform({self.name})"


def _transpose_back(value, stored):
    return np.transpose(value)


# PyTorch `Linear.weight` [out, in] -> Keras `Dense.kernel` [in, out] (its own inverse).
torch_linear = Transform(np.transpose, _transpose_back, "torch_linear")


def columns(part, width, parts):
    """Column block `part` of `parts` blocks of `width` on the last axis (and back: the block written
    into the stacked array)."""

    def forward(array):
        return array[..., part * width : (part + 1) * width]

    def inverse(value, stored):
        if stored is None:
            stored = np.zeros(value.shape[:-1] + (width * parts,), value.dtype)
        stored = np.array(stored)
        stored[..., part * width : (part + 1) * width] = value
        return stored

    return Transform(forward, inverse, f"columns({part}/{parts})")


def then(first, second):
    """`second(first(array))` (None: the identity); invertible when both are `Transform`s."""
    if first is None:
        return second
    if second is None:
        return first

    def forward(array):
        return second(first(array))

    if not (hasattr(first, "inverse") and hasattr(second, "inverse")):
        return forward

    def inverse(value, stored):
        # `first` runs on the whole array: `second`'s inverse fills its part of `first(stored)`.
        inner = None if stored is None else first(stored)
        return first.inverse(second.inverse(value, inner), stored)

    return Transform(forward, inverse, f"{first.name}+{second.name}")


def unsplit_heads(value):
    """The 2-D kernel / 1-D bias an attention projection split per head came from (`assign(reshape=True)`):
    a [in, heads, head_dim] query / key / value kernel -> [in, heads * head_dim]; a [heads, head_dim, out]
    output kernel -> [heads * head_dim, out]; a [heads, head_dim] bias -> [heads * head_dim]."""
    if value.ndim == 2:
        return value.reshape(-1)
    if value.ndim == 3:
        first, second, third = value.shape
        if first == second * third:
            return value.reshape(first, second * third)
        return value.reshape(first * second, third)
    return value


class WeightWriter:
    """The `WeightLoader`'s interface run backwards: exporting is the importers' placers, unchanged.

    A placer calls `assign(variable, name, transform, reshape)`; the writer stores the checkpoint array
    `name` the loader would have read: the variable's value, un-split per head when `reshape`, through the
    transform's inverse. `arrays` then holds the whole state dict.

    Args:
        present: names the writer claims to hold before anything is written (the placers ask, e.g. for
            the `bert.` prefix of a task model's state dict).
        source: what messages call the export.
    """

    def __init__(self, present=(), source="export"):
        self.arrays = {}
        self.present = set(present)
        self.source = str(source)
        self.ignore = ()
        self.problems = []

    def __contains__(self, name):
        return name in self.present or name in self.arrays

    def first_present(self, *names):
        return names[0]

    def get(self, name):
        raise ExportError(f"{self.source}: the placer of {name!r} reads it directly; it cannot be exported.")

    def assign(self, variable, name, transform=None, reshape=False):
        import keras

        value = np.asarray(keras.ops.convert_to_numpy(variable.value), dtype=np.float32)
        if reshape:
            value = unsplit_heads(value)
        if transform is not None:
            inverse = getattr(transform, "inverse", None)
            if inverse is None:
                raise ExportError(f"{self.source}: {name!r} is placed through a transform with no inverse.")
            value = inverse(value, self.arrays.get(name))
        elif name in self.arrays and not np.array_equal(self.arrays[name], value):
            raise ExportError(f"{self.source}: {name!r} is written twice with different values.")
        self.arrays[name] = np.ascontiguousarray(value)

    def finish(self, allow_unexpected=False):
        if self.problems:
            raise ExportError(f"{self.source}: " + "; ".join(self.problems))
