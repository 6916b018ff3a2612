"""Reading PyTorch `.pt` checkpoints (fairseq's `model.pt`) without running pickled code.

A `torch.save` file is a pickle: unpickling it may call any importable
function the file names (`os.system`, ...). `torch.load(weights_only=True)`
prevents that with an allow-list, but it refuses the whole file as soon as the
pickle names one global outside the list, and fairseq checkpoints name many
that no allow-list should hold: `cfg` is an omegaconf `DictConfig` (newer
releases), `extra_state` holds fairseq meter objects (older ones) and numpy
scalars, `last_optimizer_state` / `optimizer_history` hold whatever the
optimizer and scheduler stored. Allowing those classes would run their code
(`__setstate__`, constructors) and needs fairseq and omegaconf installed.

So `load` uses a restricted unpickler instead (`torch.load(pickle_module=...)`,
where torch still rebuilds the tensors from the file's storages):

- the globals in `ALLOWED` are the real objects: tensor rebuilding
  (`torch._utils._rebuild_tensor_v2`, `_rebuild_parameter`, the same as
  `weights_only` allows), `collections.OrderedDict` and `argparse.Namespace`
  (fairseq's `args`), which only store data;
- any other global becomes an inert `Placeholder` class: calling it,
  instantiating it or setting its state only records the arguments. Nothing is
  imported and nothing named by the file is called, so a payload such as
  `os.system("...")` is loaded as a harmless record. Storage types are
  resolved by torch itself and never reach `find_class`;
- setting state (pickle's BUILD) is allowed only on instances of those
  types, never on a class or function (which could re-point, say,
  `argparse.Namespace` methods for the rest of the process). The pure-Python
  unpickler makes that check possible; the pickles are small (the tensor
  data are separate records), so its speed does not matter.

The weights and `args` come out as usual; placeholders stand where a part we
never use held an object (`plain` turns an omegaconf placeholder back into
dicts and values, for `cfg`).
"""

import argparse
import collections
import functools
import pickle
import types

from keras_pretrain.errors import CheckpointFormatError


class Placeholder:
    """Stands for a global the checkpoint names and the allow-list does not hold.

    Subclasses (one per global, made by `placeholder`) carry `module` and
    `qualname`; instances record the arguments they were called with and the
    state pickle gave them. No method runs code from the checkpoint.
    """

    module = ""
    qualname = ""

    def __new__(cls, *args, **kwargs):
        instance = object.__new__(cls)
        instance.args, instance.kwargs, instance.state = args, kwargs, None
        return instance

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        self.state = state

    def __repr__(self):
        return f"<placeholder for {self.module}.{self.qualname}>"


def placeholder(module, qualname):
    """A `Placeholder` subclass standing for the global `module.qualname`."""
    return type(qualname.split(".")[-1], (Placeholder,), {"module": module, "qualname": qualname})


@functools.lru_cache(maxsize=None)
def _allowed():
    from torch import _utils

    found = {
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("argparse", "Namespace"): argparse.Namespace,
    }
    for name in ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter"):
        if hasattr(_utils, name):
            found[("torch._utils", name)] = getattr(_utils, name)
    return found


class RestrictedUnpickler(pickle._Unpickler):
    """A pickle reader that resolves only the allow-listed globals (see the module docstring)."""

    dispatch = dict(pickle._Unpickler.dispatch)

    def find_class(self, module, name):
        allowed = _allowed().get((module, name))
        return allowed if allowed is not None else placeholder(module, name)

    def load_build(self):
        import torch

        target = self.stack[-2]  # BUILD: [..., target, state]
        if not isinstance(target, (Placeholder, argparse.Namespace, collections.OrderedDict, torch.Tensor)):
            raise pickle.UnpicklingError(f"refusing to set the state of {type(target).__name__} {target!r:.80}")
        super().load_build()

    dispatch[pickle.BUILD[0]] = load_build


def _load(file, **kwargs):
    return RestrictedUnpickler(file, **kwargs).load()


# What `torch.load(pickle_module=...)` uses: `Unpickler` (subclassed by torch to
# resolve storages) and `load` (the headers of the legacy format).
RESTRICTED_PICKLE = types.SimpleNamespace(__name__="restricted_pickle", Unpickler=RestrictedUnpickler, load=_load)


def looks_like_torch_file(path):
    """Whether `path` starts as `torch.save` files do: a zip (torch >= 1.6) or a pickle (the legacy format)."""
    try:
        with open(path, "rb") as f:
            start = f.read(4)
    except OSError:
        return False
    return start.startswith(b"PK\x03\x04") or start[:1] == b"\x80"


def load(path, name=None):
    """The object `torch.save` wrote to `path`, unpickled with the restricted unpickler.

    Raises:
        CheckpointFormatError: naming the file (`name`, default `path`) when it
            is not a readable PyTorch file (not a torch file, truncated, corrupt).
    """
    name = name or path
    try:
        import torch
    except ImportError:
        raise CheckpointFormatError(f"{name}: reading a PyTorch checkpoint needs torch; install it.") from None
    from keras_pretrain.checkpoints.checks import check_nesting

    try:
        state = torch.load(path, map_location="cpu", pickle_module=RESTRICTED_PICKLE, weights_only=False)
    except FileNotFoundError:
        raise CheckpointFormatError(f"{name}: no such file.") from None
    except RecursionError:
        raise CheckpointFormatError(f"{name}: its pickle nests too deep to read; a corrupt or hostile file.") \
            from None
    except Exception as e:  # zip, pickle and storage errors of every kind
        message = str(e).splitlines()[0][:200] if str(e) else ""
        raise CheckpointFormatError(
            f"{name}: not a readable PyTorch checkpoint, or truncated ({type(e).__name__}: {message})."
        ) from None
    check_nesting(state, name)
    return state


def plain(value):
    """`value` with `argparse.Namespace` and omegaconf placeholders turned into dicts.

    An omegaconf `DictConfig` pickles as its node tree: containers keep their
    children in `_content`, leaves their value in `_val`.
    """
    if isinstance(value, argparse.Namespace):
        return {k: plain(v) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, Placeholder) and isinstance(value.state, dict):
        if "_content" in value.state:
            return plain(value.state["_content"])
        if "_val" in value.state:
            return plain(value.state["_val"])
    return value


def state_dict_arrays(state, path, key="model"):
    """`state[key]` (a state dict of tensors) as float32 / integer numpy arrays by name.

    Raises:
        CheckpointFormatError: naming `path` when `state` is not a dict with
            `key`, or when entries of it are not tensors (all listed).
    """
    import torch

    if not isinstance(state, dict) or key not in state:
        found = sorted(map(str, state)) if isinstance(state, dict) else type(state).__name__
        raise CheckpointFormatError(
            f"{path}: no {key!r} entry (a fairseq checkpoint holds the weights under 'model'); found {found}."
        )
    weights = state[key]
    if not isinstance(weights, dict):
        raise CheckpointFormatError(f"{path}: {key!r} is a {type(weights).__name__}, not a state dict.")
    bad = sorted(str(n) for n, t in weights.items() if not isinstance(t, torch.Tensor))
    if bad:
        raise CheckpointFormatError(f"{path}: entries of {key!r} that are not tensors: {bad}.")
    return {
        name: (t.detach().float() if t.is_floating_point() else t.detach()).numpy()
        for name, t in weights.items()
    }
