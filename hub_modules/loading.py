"""Loading module folders back, on any backend."""

import json
import os

import keras

from hub_modules.layout import FORMAT
from hub_modules.layout import FORMAT_VERSION
from hub_modules.layout import read_tokenizer
from keras_pretrain import families
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.export import contracts
from keras_pretrain.models.task import with_layers

REQUIRED_METADATA = ("family", "backbone_class", "config")


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
    if not isinstance(metadata, dict) or metadata.get("format") != FORMAT:
        found = metadata.get("format") if isinstance(metadata, dict) else type(metadata).__name__
        raise CheckpointFormatError(f"{meta_path}: format {found!r}, expected {FORMAT!r}.")
    if metadata.get("format_version", 0) > FORMAT_VERSION:
        raise CheckpointFormatError(
            f"{meta_path}: format_version {metadata['format_version']} is newer than this "
            f"keras_pretrain reads ({FORMAT_VERSION}); upgrade keras_pretrain."
        )
    missing = [key for key in REQUIRED_METADATA if key not in metadata]
    if missing:
        raise CheckpointFormatError(f"{meta_path}: missing the entries {missing}.")
    if metadata["family"] not in families.FAMILIES:
        raise CheckpointFormatError(
            f"{meta_path}: unknown family {metadata['family']!r}; expected one of {sorted(families.FAMILIES)}."
        )
    metadata.setdefault("contract", families.get(metadata["family"]).contract.name)
    return path, metadata


@keras.saving.register_keras_serializable(package="keras_pretrain")
class HubEncoder(keras.layers.Layer):
    """A module's encoder as a Keras layer with the module's input / output names.

    Called with a dict of TF-Hub inputs it returns the dict of the family's
    contract (`keras_pretrain.export.contracts`), computed by the same code as
    the SavedModel, on any backend and trainable in `model.fit`:

    - bert / albert / ernie / roberta / distil_bert: `input_word_ids`,
      `input_mask`, `input_type_ids` (ignored by RoBERTa / DistilBERT) ->
      `pooled_output`, `sequence_output`, `encoder_outputs`, `default`;
    - gpt: `input_word_ids`, `input_mask` -> `logits`, `sequence_output`,
      `encoder_outputs`;
    - xlnet: `input_word_ids`, `input_mask`, `input_type_ids` (+ `mems`) ->
      `sequence_output`, `default`, `mems`;
    - elmo: `char_ids` (B, W + 2, 50) from `ElmoCharacterMapper` (strings in
      tf.data; `load_tokenizer(path)` gives it) -> `word_emb`,
      `lstm_outputs1`, ..., `elmo` (the module's trainable `ScalarMix`),
      `default`, `sequence_len`. The biLM itself is frozen unless
      `trainable_backbone=True` (TF-Hub's ELMo trains only the mix).

    Args:
        backbone: the module's backbone.
        contract: "bert", "roberta", "gpt", "xlnet" or "elmo".
        scalar_mix: ELMo: `{"weights": [...], "gamma": g}` of the mix.
        trainable_backbone: bool. Whether the backbone's weights train.
    """

    def __init__(self, backbone, contract="bert", scalar_mix=None, trainable_backbone=True, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.contract = contract
        self.trainable_backbone = trainable_backbone
        self.backbone.trainable = trainable_backbone
        self.scalar_mix_values = scalar_mix
        self._contract = contracts.get(contract)
        self.scalar_mix = None
        if self._contract.scalar_mix:
            self.scalar_mix = self._contract.module_scalar_mix(None, backbone, scalar_mix or {})

    def call(self, inputs, training=None):
        return self._contract.outputs(self.backbone, inputs, training=training, scalar_mix=self.scalar_mix)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "backbone": keras.layers.serialize(self.backbone),
                "contract": self.contract,
                "scalar_mix": self.scalar_mix_values,
                "trainable_backbone": self.trainable_backbone,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**with_layers(config))


def _family_name(model):
    """The family name of `model`'s backbone ("unknown" for none of ours)."""
    try:
        return families.family_of(model).name
    except ConfigError:
        return "unknown"


def _check_savedmodel(folder):
    """Clear errors for a missing or incomplete SavedModel folder."""
    if not os.path.isdir(folder):
        raise CheckpointFormatError(
            f"{folder}: missing (a module exported with savedmodels=False has no SavedModels; "
            "load it with savedmodel=False, or export it again)."
        )
    variables = os.path.join(folder, "variables")
    required = [os.path.join(folder, "saved_model.pb"), os.path.join(variables, "variables.index")]
    missing = [p for p in required if not os.path.exists(p)]
    if not missing and not any(
        n.startswith("variables.data-") for n in os.listdir(variables)
    ):
        missing = [os.path.join(variables, "variables.data-00000-of-00001")]
    if missing:
        raise CheckpointFormatError(
            f"{missing[0]}: missing (the module's SavedModel is incomplete; re-export it, "
            "or load with savedmodel=False to rebuild from model.keras)."
        )


def load_savedmodel(folder):
    """`tf.saved_model.load(folder)` with tensorflow-text registered, clear errors."""
    import tensorflow as tf

    try:
        import tensorflow_text  # noqa: F401  (ops of the preprocessors)
    except ImportError:
        pass
    _check_savedmodel(folder)
    try:
        return tf.saved_model.load(folder)
    except Exception as e:  # TF raises many types for corrupt files
        raise CheckpointFormatError(
            f"{folder}: unreadable SavedModel ({type(e).__name__}: {str(e)[:300]})."
        ) from None


def load(path, trainable=True, savedmodel=False, trainable_backbone=None):
    """A module's encoder as a Keras layer usable in `model.fit`.

    Args:
        path: a module folder or a registry handle; or a published release in
            any format `keras_pretrain.convert.load` reads (converted on the
            fly, family and format printed; save it with `hub_modules.export`
            to keep the module).
        trainable: bool.
        savedmodel: on the TensorFlow backend, wrap the `encoder/` SavedModel
            (`keras.layers.TFSMLayer`, endpoint `serve`) instead of
            rebuilding our model; the default rebuilds the model from
            `model.keras` (a `HubEncoder`), which works on every backend (a
            module exported on one backend trains on another).
        trainable_backbone: bool or None. Train the backbone's weights
            (None: yes, except ELMo, where only the mix trains as in TF-Hub).
    """
    release = None if savedmodel else _release(path)
    if release is not None:
        backbone = getattr(release, "backbone", release)
        metadata = {"contract": families.family_of(backbone).contract.name, "family": families.family_of(backbone).name}
    else:
        path, metadata = read_metadata(path)
    contract = metadata["contract"]
    if savedmodel:
        if keras.config.backend() != "tensorflow":
            raise CheckpointFormatError(
                f"{path}: savedmodel=True needs the TensorFlow backend; leave it False to rebuild "
                "the model from model.keras on this backend."
            )
        folder = os.path.join(path, "encoder")
        _check_savedmodel(folder)
        try:
            import tensorflow_text  # noqa: F401
        except ImportError:
            pass
        try:
            return keras.layers.TFSMLayer(folder, call_endpoint="serve", trainable=trainable)
        except Exception as e:  # TF raises many types for corrupt files
            raise CheckpointFormatError(
                f"{folder}: unreadable SavedModel ({type(e).__name__}: {str(e)[:300]})."
            ) from None
    model = release if release is not None else load_model(path, metadata)
    backbone = getattr(model, "backbone", model)
    if trainable_backbone is None:
        trainable_backbone = contracts.get(contract).trains_backbone
    layer = HubEncoder(
        backbone,
        contract=contract,
        scalar_mix=metadata.get("scalar_mix"),
        trainable_backbone=bool(trainable and trainable_backbone),
        name=f"{metadata['family']}_hub_encoder",
    )
    layer.trainable = trainable
    if not (trainable and trainable_backbone):
        backbone.trainable = False
    return layer


def _release(path):
    """The backbone of a published release at `path` (not a module folder), or None."""
    from keras_pretrain import convert
    from keras_pretrain.checkpoints.formats import detect

    path = os.fspath(path)
    if not os.path.exists(path) or os.path.exists(os.path.join(path, "metadata.json")):
        return None
    try:
        detect(path)
    except CheckpointFormatError:
        return None  # read_metadata says what is wrong with the module folder
    return convert.load(path, task=False)[0]


def load_model(path, metadata=None):
    """The full model saved in the module (task or backbone), checked against metadata.json."""
    if metadata is None:
        path, metadata = read_metadata(path)
    model_path = os.path.join(path, "model.keras")
    if not os.path.exists(model_path):
        raise CheckpointFormatError(f"{path}: model.keras missing ({model_path}; the module is incomplete, export it again).")
    families.import_all()
    try:
        model = keras.models.load_model(model_path, compile=False)
    except Exception as e:  # zip / h5 / missing-weight errors
        raise CheckpointFormatError(
            f"{model_path}: unreadable or incomplete ({type(e).__name__}: {str(e)[:200]})."
        ) from None
    backbone = getattr(model, "backbone", model)
    meta_path = os.path.join(path, "metadata.json")
    if type(backbone).__name__ != metadata["backbone_class"]:
        raise CheckpointFormatError(
            f"{meta_path}: says backbone_class {metadata['backbone_class']!r} (family "
            f"{metadata['family']!r}), but {model_path} holds a {type(backbone).__name__}."
        )
    found = _family_name(model)
    if found != metadata["family"]:
        raise CheckpointFormatError(
            f"{meta_path}: says family {metadata['family']!r}, but {model_path} holds a {found!r} model."
        )
    config = backbone.get_config()
    different = sorted(
        key for key, value in metadata["config"].items()
        if key not in ("name", "trainable", "dtype") and key in config and config[key] != value
    )
    if different:
        raise CheckpointFormatError(
            f"{meta_path}: config differs from {model_path} in {different} (e.g. {different[0]}: "
            f"metadata {metadata['config'][different[0]]!r}, model {config[different[0]]!r})."
        )
    return model


def load_tokenizer(path, lowercase=None):
    """The module's tokenizer (a keras-hub tokenizer of ours, GPT's Python BPE, ELMo's mapper).

    `lowercase` (None: as saved) replaces the casing of a WordPiece or
    SentencePiece tokenizer (`keras_pretrain.casing.with_lowercase`).
    """
    from keras_pretrain.casing import with_lowercase

    path, metadata = read_metadata(path)
    folder = os.path.join(path, "tokenizer")
    if not os.path.isdir(folder):
        raise CheckpointFormatError(f"{path}: this module has no tokenizer/ folder.")
    if not os.path.exists(os.path.join(folder, "tokenizer.json")):
        raise CheckpointFormatError(f"{os.path.join(folder, 'tokenizer.json')}: missing (the module is incomplete; export it again).")
    families.import_all()
    try:
        tokenizer = read_tokenizer(folder)
    except FileNotFoundError as e:
        missing = e.filename or str(e)
        raise CheckpointFormatError(f"{missing}: missing (the module's tokenizer is incomplete; export it again).") from None
    except Exception as e:
        raise CheckpointFormatError(f"{folder}: unreadable tokenizer ({type(e).__name__}: {e}).") from None
    return with_lowercase(tokenizer, lowercase)
