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

from keras_pretrain.errors import CheckpointFormatError


class WeightLoader:
    """Checked assignment of checkpoint arrays to Keras variables.

    Args:
        names: iterable of the names present in the checkpoint.
        read: callable `name -> np.ndarray`.
        source: str, the file or folder the arrays come from (for messages).
        ignore: glob patterns of names that may stay unused.
    """

    def __init__(self, names, read, source, ignore=()):
        self.names = set(names)
        self._read = read
        self.source = str(source)
        self.ignore = tuple(ignore)
        self.used = set()
        self.problems = []

    @classmethod
    def from_dict(cls, arrays, source, ignore=()):
        return cls(arrays.keys(), lambda n: np.asarray(arrays[n]), source, ignore)

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
        return np.asarray(self._read(name))

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


def torch_linear(w):
    """PyTorch `Linear.weight` [out, in] -> Keras `Dense.kernel` [in, out]."""
    return np.transpose(w)
