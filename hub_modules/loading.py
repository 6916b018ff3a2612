"""Loading module folders back, on any backend."""

import importlib
import json
import os

import keras

from hub_modules.exporting import FORMAT
from hub_modules.exporting import FORMAT_VERSION
from keras_pretrain.errors import CheckpointFormatError

FAMILIES = ("bert", "albert", "roberta", "distil_bert", "ernie", "gpt", "xlnet", "elmo")


def _import_families():
    """Imports every family package so their classes are registered."""
    for family in FAMILIES:
        try:
            importlib.import_module(f"keras_pretrain.models.{family}")
        except ImportError:
            pass


def read_metadata(path):
    """The module's metadata.json, checked; raises `CheckpointFormatError`."""
    from hub_modules.registry import resolve

    path = resolve(path)
    meta_path = os.path.join(path, "metadata.json")
    if not os.path.isdir(path):
        raise CheckpointFormatError(f"{path}: no such module folder.")
    if not os.path.exists(meta_path):
        raise CheckpointFormatError(
            f"{path}: not a complete keras_pretrain module (metadata.json missing; "
            "an interrupted export leaves no metadata)."
        )
    try:
        with open(meta_path) as f:
            metadata = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointFormatError(f"{meta_path}: not valid JSON ({e}).") from None
    if metadata.get("format") != FORMAT:
        raise CheckpointFormatError(f"{meta_path}: format {metadata.get('format')!r}, expected {FORMAT!r}.")
    if metadata.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointFormatError(
            f"{meta_path}: format_version {metadata['format_version']} is newer than this "
            f"keras_pretrain reads ({FORMAT_VERSION}); upgrade keras_pretrain."
        )
    return path, metadata


@keras.saving.register_keras_serializable(package="keras_pretrain")
class HubEncoder(keras.layers.Layer):
    """A module's encoder as a layer taking TF-Hub input names.

    Called with a dict of `input_word_ids`, `input_mask`, `input_type_ids`, it
    returns `pooled_output`, `sequence_output`, `encoder_outputs` and
    `default`, like the TF-Hub encoder; trainable on every backend.
    """

    def __init__(self, backbone, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone

    @staticmethod
    def _ours(inputs):
        return {
            "token_ids": inputs["input_word_ids"],
            "padding_mask": inputs["input_mask"],
            "segment_ids": inputs["input_type_ids"],
        }

    def call(self, inputs, training=None):
        outputs = dict(self.backbone(self._ours(inputs), training=training))
        outputs["default"] = outputs.get("pooled_output")
        return outputs

    def compute_output_spec(self, inputs, training=None):
        outputs = dict(self.backbone.compute_output_spec(self._ours(inputs)))
        outputs["default"] = outputs.get("pooled_output")
        return outputs

    def get_config(self):
        config = super().get_config()
        config["backbone"] = keras.layers.serialize(self.backbone)
        return config

    @classmethod
    def from_config(cls, config):
        config["backbone"] = keras.layers.deserialize(config["backbone"])
        return cls(**config)


def load(path, trainable=True, savedmodel=False):
    """A module's encoder as a Keras layer usable in `model.fit`.

    Args:
        path: a module folder or a registry handle.
        trainable: bool.
        savedmodel: on the TensorFlow backend, wrap the `encoder/` SavedModel
            (`keras.layers.TFSMLayer`) instead of rebuilding our model; the
            default rebuilds the model from `model.keras`, which works on
            every backend (a module exported on one backend trains on another).
    """
    path, metadata = read_metadata(path)
    if savedmodel:
        if keras.config.backend() != "tensorflow":
            raise CheckpointFormatError(
                f"{path}: savedmodel=True needs the TensorFlow backend; leave it False to rebuild "
                "the model from model.keras on this backend."
            )
        return keras.layers.TFSMLayer(os.path.join(path, "encoder"), call_endpoint="serve", trainable=trainable)
    model_path = os.path.join(path, "model.keras")
    if not os.path.exists(model_path):
        raise CheckpointFormatError(f"{path}: model.keras missing.")
    _import_families()
    try:
        model = keras.models.load_model(model_path, compile=False)
    except Exception as e:  # zip/h5 errors
        raise CheckpointFormatError(
            f"{model_path}: unreadable or incomplete ({type(e).__name__}: {str(e)[:200]})."
        ) from None
    backbone = getattr(model, "backbone", model)
    backbone.trainable = trainable
    return HubEncoder(backbone, name=f"{metadata['family']}_hub_encoder")


def load_model(path):
    """The full model saved in the module (pretrainer or backbone)."""
    path, _ = read_metadata(path)
    _import_families()
    return keras.models.load_model(os.path.join(path, "model.keras"))


def load_tokenizer(path):
    """The module's tokenizer (a keras-hub tokenizer of ours)."""
    from hub_modules.exporting import read_tokenizer

    path, metadata = read_metadata(path)
    folder = os.path.join(path, "tokenizer")
    if not os.path.isdir(folder):
        raise CheckpointFormatError(f"{path}: this module has no tokenizer/ folder.")
    _import_families()
    try:
        return read_tokenizer(folder)
    except (OSError, ValueError, KeyError) as e:
        raise CheckpointFormatError(f"{folder}: unreadable tokenizer ({type(e).__name__}: {e}).") from None
