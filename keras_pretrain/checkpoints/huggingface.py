"""Local Hugging Face model folders (config.json + safetensors / .bin)."""

import os

import numpy as np

from keras_pretrain.checkpoints.checks import read_json  # noqa: F401 (read here by the converters)
from keras_pretrain.checkpoints.weights import WeightLoader
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError


def require(config, keys, source):
    missing = [k for k in keys if k not in config]
    if missing:
        raise ConfigError(f"{source}: missing config key(s) {missing}.")
    return config


def _safetensors_arrays(path):
    from safetensors.numpy import load_file

    try:
        return load_file(path)
    except Exception as e:
        raise CheckpointFormatError(
            f"{path}: unreadable safetensors file ({type(e).__name__}: {e})."
        ) from None


def _torch_arrays(path):
    try:
        import torch
    except ImportError:
        raise CheckpointFormatError(
            f"{path}: reading a PyTorch .bin file needs torch; install it or "
            "convert the folder to model.safetensors."
        ) from None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointFormatError(
            f"{path}: unreadable PyTorch checkpoint ({type(e).__name__})."
        ) from None
    return {k: v.float().numpy() if v.is_floating_point() else v.numpy() for k, v in state.items()}


def hf_loader(folder, ignore=()):
    """A `WeightLoader` over the weights of a local Hugging Face folder."""
    candidates = ["model.safetensors", "pytorch_model.bin"]
    for name in candidates:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            if name.endswith(".safetensors"):
                arrays = _safetensors_arrays(path)
            else:
                arrays = _torch_arrays(path)
            arrays = {k: np.asarray(v, dtype=np.float32) if np.issubdtype(np.asarray(v).dtype, np.floating) else v for k, v in arrays.items()}
            return WeightLoader.from_dict(arrays, path, ignore)
    raise CheckpointFormatError(
        f"{folder}: no weights found (expected one of {candidates})."
    )
