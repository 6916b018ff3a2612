"""Writing a module folder (see hub_modules/__init__.py for the layout)."""

import json
import os
import subprocess
import sys
import tempfile

import keras

FORMAT = "keras_pretrain.hub_module"
FORMAT_VERSION = 1


class ModuleExportError(RuntimeError):
    pass


def _versions():
    import keras_hub

    import keras_pretrain

    versions = {"keras": keras.__version__, "keras_hub": keras_hub.__version__,
                "keras_pretrain": keras_pretrain.__version__}
    try:
        import tensorflow as tf

        versions["tensorflow"] = tf.__version__
    except ImportError:
        pass
    return versions


def _family(model):
    module = type(getattr(model, "backbone", model)).__module__
    parts = module.split(".")
    return parts[parts.index("models") + 1] if "models" in parts else "unknown"


def export(model, out_dir, tokenizer=None, seq_length=128, overwrite=False):
    """Writes `model` (a backbone or pretrainer) as a module folder.

    Args:
        model: a keras_pretrain backbone or pretrainer (the pretrainer adds the
            encoder's `mlm` sub-object).
        out_dir: the module folder to create; it must not exist or be empty
            unless `overwrite=True`.
        tokenizer: the model's tokenizer (adds `preprocessor/` and `tokenizer/`).
        seq_length: packed length of the preprocessor's default call.

    SavedModels hold TF graphs: under JAX or PyTorch the SavedModels are written
    by a TensorFlow-backend subprocess from the saved `model.keras`.
    """
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and os.listdir(out_dir) and not overwrite:
        raise FileExistsError(f"{out_dir}: exists and is not empty (pass overwrite=True to replace it).")
    os.makedirs(out_dir, exist_ok=True)
    metadata_path = os.path.join(out_dir, "metadata.json")
    if os.path.exists(metadata_path):
        os.remove(metadata_path)  # the module is complete only once it is rewritten
    model.save(os.path.join(out_dir, "model.keras"))
    if tokenizer is not None:
        save_tokenizer(tokenizer, os.path.join(out_dir, "tokenizer"))
    if keras.config.backend() == "tensorflow":
        write_savedmodels(out_dir, model, tokenizer, seq_length)
    else:
        env = dict(os.environ, KERAS_BACKEND="tensorflow")
        result = subprocess.run(
            [sys.executable, "-m", "hub_modules.exporting", out_dir, str(seq_length)],
            env=env, capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise ModuleExportError(
                f"{out_dir}: writing the SavedModels (TensorFlow subprocess) failed:\n{result.stderr[-2000:]}"
            )
    backbone = getattr(model, "backbone", model)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "family": _family(model),
        "model_class": type(model).__name__,
        "backbone_class": type(backbone).__name__,
        "config": backbone.get_config(),
        "has_mlm": hasattr(model, "masked_lm_head"),
        "tokenizer": tokenizer is not None,
        "seq_length": seq_length,
        "exported_from_backend": keras.config.backend(),
        "versions": _versions(),
    }
    with tempfile.NamedTemporaryFile("w", dir=out_dir, delete=False, suffix=".tmp") as f:
        json.dump(metadata, f, indent=2, default=str)
    os.replace(f.name, metadata_path)
    return out_dir


def save_tokenizer(tokenizer, folder):
    """tokenizer.json (the layer config) + assets/ (vocabulary files)."""
    os.makedirs(os.path.join(folder, "assets"), exist_ok=True)
    tokenizer.save_assets(os.path.join(folder, "assets"))
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(keras.saving.serialize_keras_object(tokenizer), f, indent=2)


def read_tokenizer(folder):
    with open(os.path.join(folder, "tokenizer.json")) as f:
        tokenizer = keras.saving.deserialize_keras_object(json.load(f))
    tokenizer.load_assets(os.path.join(folder, "assets"))
    return tokenizer


def write_savedmodels(out_dir, model, tokenizer, seq_length):
    from keras_pretrain.export import export_encoder
    from keras_pretrain.export import export_preprocessor

    export_encoder(model, os.path.join(out_dir, "encoder"))
    if tokenizer is not None:
        export_preprocessor(tokenizer, os.path.join(out_dir, "preprocessor"), seq_length=seq_length)


def _main(out_dir, seq_length):
    """TensorFlow-backend subprocess: SavedModels from model.keras + tokenizer/."""
    os.environ["KERAS_BACKEND"] = "tensorflow"
    import keras_pretrain.models  # noqa: F401  (registers our classes)
    from hub_modules.loading import _import_families

    _import_families()
    model = keras.models.load_model(os.path.join(out_dir, "model.keras"))
    tokenizer = None
    if os.path.isdir(os.path.join(out_dir, "tokenizer")):
        tokenizer = read_tokenizer(os.path.join(out_dir, "tokenizer"))
    write_savedmodels(out_dir, model, tokenizer, seq_length)


if __name__ == "__main__":
    _main(sys.argv[1], int(sys.argv[2]))
