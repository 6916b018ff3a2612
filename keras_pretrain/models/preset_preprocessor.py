"""What the families' tokenizers and preprocessors share: presets that set the packing length, and the
keras-hub preprocessing base and decorator they build on.

keras-hub exports neither `PreprocessingLayer` nor `preprocessing_function` nor its preset reading
publicly; they are imported here once, so that a keras-hub change is mended in one place.
"""

# private API: keras-hub exports no preprocessing layer base class (its public tokenizers and packers
# derive from this one, which runs TF string ops on every backend and converts the outputs).
from keras_hub.src.layers.preprocessing.preprocessing_layer import PreprocessingLayer  # noqa: F401 - re-exported

# private API: keras-hub exports no public form of the decorator its tokenizers' `call` /
# `_tokenize_tf` use (TF inputs in, backend tensors out outside `tf.data`).
from keras_hub.src.utils.tensor_utils import preprocessing_function  # noqa: F401 - re-exported

# private API: keras-hub reads preset folders publicly only inside its classes' `from_preset`, which
# would build the backbone or take the class default length; its loader and file check are what it
# uses there itself.
from keras_hub.src.utils.preset_utils import check_file_exists
# private API: as above.
from keras_hub.src.utils.preset_utils import get_preset_loader


def preset_sequence_length(preset):
    """The backbone's `max_sequence_length` in a preset folder (None if it has none)."""
    config = get_preset_loader(preset).config
    return (config.get("config") or {}).get("max_sequence_length")


class PresetPreprocessorMixin:
    """`from_preset` for our preprocessors: the model's own length by default.

    keras-hub builds a preprocessor from a preset that holds no
    `preprocessor.json` with its class default (`sequence_length=512`), and
    looks for a keras-hub subclass matching the backbone class (there is none
    for our backbones). Here the preprocessor is built from the preset's
    tokenizer with `sequence_length` = the backbone's `max_sequence_length`
    (its position count), unless given; a saved `preprocessor.json` keeps
    its own length.
    """

    @classmethod
    def from_preset(cls, preset, config_file="preprocessor.json", **kwargs):
        loader = get_preset_loader(preset)
        if "sequence_length" not in kwargs and not check_file_exists(preset, config_file):
            length = preset_sequence_length(preset)
            if length:
                kwargs["sequence_length"] = int(length)
        return loader.load_preprocessor(cls, config_file, **kwargs)


def sequence_length_property(*layers):
    """A preprocessor's `sequence_length` property that also sets it on the layers named (packers, tokenizer)
    when they exist, as keras-hub's preprocessors do for their packer."""

    def get(self):
        return self._sequence_length

    def set(self, value):
        self._sequence_length = value
        for name in layers:
            layer = getattr(self, name, None)
            if layer is not None:
                layer.sequence_length = value

    return property(get, set)
