"""The module folder's format: its name and version, its entries, and the tokenizer files.

Shared by `hub_modules.exporting` (writing) and `hub_modules.loading` (reading), which do not import each
other.
"""

import importlib
import json
import os

import keras

from keras_pretrain import families
from keras_pretrain.errors import CheckpointFormatError

FORMAT = "keras_pretrain.hub_module"
FORMAT_VERSION = 1
MODULE_ENTRIES = ("metadata.json", "model.keras", "tokenizer", "encoder", "preprocessor", "classifier")
SERVING_PATH = os.path.join("classifier", "1")  # TensorFlow Serving's NAME/VERSION layout


def is_python_tokenizer(tokenizer):
    """A tokenizer in plain Python (GPT's BPE), not a Keras layer: saved as files, no in-graph ops."""
    return tokenizer is not None and not isinstance(tokenizer, keras.layers.Layer)


def _python_tokenizer_classes():
    """"package:Class" -> class, for the families' Python tokenizers (the only classes tokenizer.json may name)."""
    classes = {}
    for family in families.FAMILIES.values():
        if "." not in family.tokenizer:
            cls = family.tokenizer_class
            if not issubclass(cls, keras.layers.Layer):
                classes[f"{family.package}:{family.tokenizer}"] = cls
    return classes


def save_tokenizer(tokenizer, folder):
    """tokenizer.json (the layer config, or the Python class) + assets/ (vocabulary files)."""
    assets = os.path.join(folder, "assets")
    os.makedirs(assets, exist_ok=True)
    if is_python_tokenizer(tokenizer):
        tokenizer.save(assets)  # vocab.json + merges.txt
        name = next(k for k, cls in _python_tokenizer_classes().items() if cls is type(tokenizer))
        config = {"python_class": name, "unk_token": getattr(tokenizer, "unk_token", None)}
    else:
        if hasattr(tokenizer, "save_assets"):
            tokenizer.save_assets(assets)
        config = keras.saving.serialize_keras_object(tokenizer)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(config, f, indent=2)


def read_tokenizer(folder):
    """The tokenizer `save_tokenizer` wrote to `folder`."""
    families.import_all()  # registers the Keras tokenizer classes
    with open(os.path.join(folder, "tokenizer.json")) as f:
        config = json.load(f)
    assets = os.path.join(folder, "assets")
    if "python_class" in config:
        known = _python_tokenizer_classes()
        if config["python_class"] not in known:
            raise CheckpointFormatError(
                f"{os.path.join(folder, 'tokenizer.json')}: python_class {config['python_class']!r} is not a "
                f"keras_pretrain tokenizer; expected one of {sorted(known)}."
            )
        kwargs = {"unk_token": config["unk_token"]} if config.get("unk_token") else {}
        return known[config["python_class"]].from_folder(assets, **kwargs)
    tokenizer = keras.saving.deserialize_keras_object(config)
    if hasattr(tokenizer, "load_assets"):
        tokenizer.load_assets(assets)
    return tokenizer
