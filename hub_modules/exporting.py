"""Writing a module folder (see hub_modules/__init__.py for the layout)."""

import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import keras

from keras_pretrain.export.serving import is_classifier
from keras_pretrain.export.savedmodel import ExportError

from hub_modules.layout import FORMAT
from hub_modules.layout import FORMAT_VERSION
from hub_modules.layout import MODULE_ENTRIES
from hub_modules.layout import SERVING_PATH
from hub_modules.layout import is_python_tokenizer
from hub_modules.layout import read_tokenizer
from hub_modules.layout import save_tokenizer
from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks.classification import serving
from keras_pretrain.tasks.multiple_choice import serving as choice_serving


class ModuleExportError(ExportError):
    """Writing a module folder failed (names the folder and the cause)."""


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


def read_model(source, pretrainer=False):
    """`(model, tokenizer)` from a `.keras` file, a run folder holding one (tokenizer None), or a published
    release in any format `keras_pretrain.convert.load` reads (family and format printed; `pretrainer`:
    with the release's pretraining heads)."""
    source = os.fspath(source)
    if os.path.isdir(source):
        for name in ("pretrainer.keras", "model.keras"):
            if os.path.exists(os.path.join(source, name)):
                source = os.path.join(source, name)
                break
    if os.path.isfile(source) and source.endswith(".keras"):
        families.import_all()
        return keras.models.load_model(source, compile=False), None
    if not os.path.exists(source) and not os.path.exists(source + ".index"):
        raise FileNotFoundError(f"{source}: no such file or folder (expected a .keras file, a run folder or a "
                                "published release).")
    from keras_pretrain import convert

    model, tokenizer = convert.load(source, pretrainer=pretrainer, task=pretrainer)
    if families.family_of(model).vocabulary.characters:
        tokenizer = None  # ELMo's converter returns its word list; the module's encoder reads strings
    return model, tokenizer


def _has_preprocessor(tokenizer):
    """In-graph tokenizers with a TF-Hub packing (not GPT's Python BPE, not ELMo's mapper)."""
    return tokenizer is not None and hasattr(tokenizer, "get_vocabulary") and not is_python_tokenizer(tokenizer)


def export(model, out_dir, tokenizer=None, seq_length=128, overwrite=False, savedmodels=True, labels=None,
           pair=False):
    """Writes `model` as a module folder.

    Args:
        model: a keras_pretrain backbone or task of any family (a masked-LM
            pretrainer adds the encoder's `mlm` sub-object; an
            `ElmoEmbedder` gives the module its `ScalarMix`), or the path of a
            `.keras` file / run folder holding one, or of a published release in
            any format `keras_pretrain.convert.load` reads (its tokenizer is
            used when `tokenizer` is None).
        out_dir: the module folder to create; it must not exist or be empty
            unless `overwrite=True`.
        tokenizer: the model's tokenizer: saved in `tokenizer/`; in-graph ones
            (WordPiece, SentencePiece, RoBERTa's byte-level BPE) also give
            `preprocessor/`. GPT's Python BPE is saved as `vocab.json` +
            `merges.txt` (also copied into `encoder/assets/`). ELMo needs
            none (its encoder takes strings; `tokenizer/` holds the
            `ElmoCharacterMapper` for tf.data).
        seq_length: packed length of the preprocessor's default call.
        savedmodels: bool. Write `encoder/` and `preprocessor/`; without them
            the module still loads with `hub_modules.load` on every backend.
        labels: a classifier's label names (index = class id; default "0",
            "1", ...).
        pair: bool. The classifier reads pairs of strings (`text_a`,
            `text_b`) rather than one (`text`).

    A classifier (`BertClassifier`, ..., `GPTClassifier`, `ElmoClassifier`)
    also gives `classifier/1/`: the serving SavedModel (strings in; logits,
    probabilities, label ids and names out, the tokenizer in the same
    graph; see `keras_pretrain.tasks.classification.serving`), described by
    `metadata.json`'s `serving` entry. Its `encoder/` is the backbone's.

    SavedModels hold TF graphs: under JAX or PyTorch the SavedModels are written
    by a TensorFlow-backend subprocess from the saved `model.keras`.
    """
    from keras_pretrain.export import contracts

    if isinstance(model, (str, os.PathLike)):
        model, found = read_model(model)
        tokenizer = tokenizer if tokenizer is not None else found
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and os.listdir(out_dir) and not overwrite:
        raise FileExistsError(f"{out_dir}: exists and is not empty (pass overwrite=True to replace it).")
    try:
        family = families.family_of(model)
    except ConfigError as e:
        raise ModuleExportError(f"{out_dir}: cannot export a {type(model).__name__}: {e}") from None
    contract = family.contract
    os.makedirs(out_dir, exist_ok=True)
    # metadata.json goes first and comes back last: the module is complete
    # only once it is rewritten. Stale parts of an older module go too.
    for name in MODULE_ENTRIES:
        path = os.path.join(out_dir, name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    backbone = getattr(model, "backbone", model)
    saved = model if isinstance(model, keras.Model) else backbone  # an ElmoEmbedder is a layer
    saved.save(os.path.join(out_dir, "model.keras"))
    extra = {}
    mix = contract.module_scalar_mix(model, backbone)
    if mix is not None:
        weights, gamma = contracts.scalar_mix_values(mix)
        extra["scalar_mix"] = {"weights": weights, "gamma": gamma}
    if tokenizer is None and family.vocabulary.characters:  # ELMo: the character mapper, for tf.data
        tokenizer = family.tokenizer_class(max_characters=backbone.max_characters)
    if tokenizer is not None:
        save_tokenizer(tokenizer, os.path.join(out_dir, "tokenizer"))
    with_preprocessor = _has_preprocessor(tokenizer)
    if is_classifier(model) and savedmodels:
        extra["serving"] = serving_metadata(model, family.name, labels, pair, seq_length)
    if savedmodels:
        if keras.config.backend() == "tensorflow":
            write_savedmodels(out_dir, model, extra, seq_length)
        else:
            _run_tensorflow([out_dir, str(seq_length), json.dumps(extra)], out_dir)
    metadata = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "family": family.name,
        "contract": contract.name,
        "model_class": type(saved).__name__,
        "backbone_class": type(backbone).__name__,
        "config": backbone.get_config(),
        "has_mlm": contracts.has_mlm(model) and contract.mlm,
        "tokenizer": tokenizer is not None,
        "tokenizer_class": None if tokenizer is None else type(tokenizer).__name__,
        "preprocessor": bool(savedmodels and with_preprocessor),
        "savedmodels": bool(savedmodels),
        "seq_length": seq_length,
        "exported_from_backend": keras.config.backend(),
        "versions": _versions(),
        **extra,
    }
    with tempfile.NamedTemporaryFile("w", dir=out_dir, delete=False, suffix=".tmp") as f:
        json.dump(metadata, f, indent=2, default=str)
    os.replace(f.name, os.path.join(out_dir, "metadata.json"))
    return out_dir


def write_savedmodels(out_dir, model, extra, seq_length):
    """`encoder/` (+ `preprocessor/`) from the model and `out_dir/tokenizer/` (TF backend)."""
    from keras_pretrain.export import export_encoder
    from keras_pretrain.export import export_preprocessor

    family = families.family_of(model)
    backbone = getattr(model, "backbone", model)
    mix = None
    if "scalar_mix" in extra:
        mix = family.contract.module_scalar_mix(model, backbone, extra["scalar_mix"])
    tokenizer = None
    tokenizer_folder = os.path.join(out_dir, "tokenizer")
    if os.path.isdir(tokenizer_folder):
        tokenizer = read_tokenizer(tokenizer_folder)
    assets = []
    if is_python_tokenizer(tokenizer):
        assets = [os.path.join(tokenizer_folder, "assets", n) for n in ("vocab.json", "merges.txt")]
    export_encoder(model, os.path.join(out_dir, "encoder"), contract=family.contract, scalar_mix=mix, assets=assets)
    if _has_preprocessor(tokenizer):
        export_preprocessor(tokenizer, os.path.join(out_dir, "preprocessor"), seq_length=seq_length)
    if "serving" in extra:
        spec = extra["serving"]
        _export(model, tokenizer, dict(spec, path=os.path.join(out_dir, spec["path"])), family=family.name)


def serving_metadata(model, family, labels=None, pair=False, seq_length=128, threshold=0.5):
    """`metadata.json`'s description of a classifier's serving SavedModel."""
    limit = getattr(model.backbone, "max_sequence_length", None)
    if choice_serving.is_multiple_choice(model):
        return {"path": SERVING_PATH, "signature": "serving_default",
                "inputs": list(choice_serving.choice_inputs(model, family)),
                "outputs": list(choice_serving.CHOICE_OUTPUTS), "labels": None, "pair": True, "multiple_choice": True,
                "seq_length": min(seq_length, limit) if limit else seq_length,
                "requires": families.get(family).contract.serving_requires}
    num_classes = serving.num_classes_of(model)
    labels = [str(i) for i in range(num_classes)] if labels is None else [str(x) for x in labels]
    if len(labels) != num_classes:
        raise ModuleExportError(f"{type(model).__name__}: {num_classes} classes but {len(labels)} labels {labels}.")
    return {
        "path": SERVING_PATH,
        "signature": "serving_default",
        "inputs": list(serving.text_inputs(model, pair, family)),
        "outputs": list(serving.outputs_of(model)),
        "labels": labels,
        **({"threshold": float(threshold)} if "label_mask" in serving.outputs_of(model) else {}),
        "pair": bool(pair),
        "seq_length": min(seq_length, limit) if limit else seq_length,
        "requires": families.get(family).contract.serving_requires,
    }


def export_serving(model, path, tokenizer=None, labels=None, pair=False, seq_length=128, threshold=0.5):
    """Writes `model`'s serving SavedModel to `path` (`NAME/1`), on any backend.

    See `keras_pretrain.tasks.classification.serving.export_serving`; under JAX or PyTorch
    the model and tokenizer are saved to a temporary folder and written by a
    TensorFlow-backend subprocess. Returns the `metadata.json`-style
    description (inputs, outputs, labels, length).
    """
    path = os.fspath(path)
    family = families.family_of(model).name
    spec = serving_metadata(model, family, labels, pair, seq_length, threshold)
    spec["path"] = path
    if keras.config.backend() == "tensorflow":
        _export(model, tokenizer, spec, family)
        return spec
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, "model.keras"))
        if tokenizer is not None and not is_python_tokenizer(tokenizer):
            save_tokenizer(tokenizer, os.path.join(tmp, "tokenizer"))
        _run_tensorflow(["--serving", tmp, json.dumps(spec)], path)
    return spec


def export_qa_serving(model, path, tokenizer, **options):
    """Writes a span-QA `model`'s serving SavedModel to `path` (`NAME/1`), on any backend (the answer-class model
    too: ALBERT's SentencePiece one for v2.0, XLNet's for v1.1 and v2.0).

    See `keras_pretrain.tasks.question_answering.serving.export_qa_serving` (`options`: `seq_length`, `doc_stride`,
    `max_query_length`, `n_best_size`, `max_answer_length`, `version_2_with_negative`,
    `null_score_diff_threshold`); under JAX or PyTorch the model and tokenizer are saved to a temporary folder
    and written by a TensorFlow-backend subprocess. Returns the `metadata.json`-style description.
    """
    from keras_pretrain.tasks.question_answering import serving as qa_serving

    path = os.fspath(path)
    v2 = bool(options.get("version_2_with_negative"))
    qa_serving.check_model(model, qa_serving.check_tokenizer(tokenizer), v2)
    spec = {"path": path, "signature": "serving_default", "inputs": ["question", "context"],
            "outputs": list(qa_serving.V2_OUTPUTS if v2 else qa_serving.OUTPUTS), "question_answering": True,
            "options": options, "requires": "tensorflow_text"}
    return _in_tensorflow(model, tokenizer, spec, lambda: qa_serving.export_qa_serving(model, path, tokenizer,
                                                                                      **options))


def export_tagging_serving(model, path, tokenizer, labels, **options):
    """Writes a `TokenClassifier`'s NER serving SavedModel to `path` (`NAME/1`), on any backend.

    See `keras_pretrain.tasks.token_classification.serving.export_tagging_serving` (`options`: `seq_length`, `overlap`,
    `aggregation`); under JAX or PyTorch the model and tokenizer are saved to a temporary folder and written by
    a TensorFlow-backend subprocess. Returns the `metadata.json`-style description.
    """
    from keras_pretrain.tasks.token_classification import serving as tagging_serving

    path = os.fspath(path)
    spec = {"path": path, "signature": "serving_default", "inputs": ["text"],
            "outputs": list(tagging_serving.OUTPUTS), "token_classification": True, "labels": list(labels),
            "options": options, "requires": "tensorflow_text"}
    return _in_tensorflow(model, tokenizer, spec, lambda: tagging_serving.export_tagging_serving(
        model, path, tokenizer, list(labels), **options))


def _in_tensorflow(model, tokenizer, spec, write):
    """`write()` under the TensorFlow backend; under another, the model and tokenizer saved to a temporary folder
    and `spec` written by a TensorFlow-backend subprocess (`_serving_main`). Returns `spec`."""
    if keras.config.backend() == "tensorflow":
        write()
        return spec
    with tempfile.TemporaryDirectory() as tmp:
        model.save(os.path.join(tmp, "model.keras"))
        save_tokenizer(tokenizer, os.path.join(tmp, "tokenizer"))
        _run_tensorflow(["--serving", tmp, json.dumps(spec)], spec["path"])
    return spec


def _run_tensorflow(args, out_dir):
    env = dict(os.environ, KERAS_BACKEND="tensorflow")
    result = subprocess.run([sys.executable, "-m", "hub_modules.exporting", *args], env=env,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise ModuleExportError(
            f"{out_dir}: writing the SavedModels (TensorFlow subprocess) failed:\n{result.stderr[-2000:]}"
        )


def _serving_main(folder, spec):
    """TensorFlow-backend subprocess: the serving SavedModel from folder/model.keras (+ tokenizer/)."""
    families.import_all()
    spec = json.loads(spec)
    model = keras.models.load_model(os.path.join(folder, "model.keras"), compile=False)
    tokenizer_folder = os.path.join(folder, "tokenizer")
    tokenizer = read_tokenizer(tokenizer_folder) if os.path.isdir(tokenizer_folder) else None
    _export(model, tokenizer, spec)


def _export(model, tokenizer, spec, family=None):
    """The serving SavedModel `spec` describes, written by the module the task names (`serving_module`: each task
    folder's `serving.write_from_spec`)."""
    writer = getattr(model, "serving_module", None)
    if writer is None:
        raise ModuleExportError(f"{spec['path']}: {type(model).__name__} names no serving writer (serving_module); "
                                "only fine-tuned tasks have a strings-in serving model.")
    importlib.import_module(writer).write_from_spec(model, tokenizer, spec, family=family)


def _main(out_dir, seq_length, extra):
    """TensorFlow-backend subprocess: SavedModels from model.keras + tokenizer/."""
    os.environ["KERAS_BACKEND"] = "tensorflow"
    families.import_all()
    model = keras.models.load_model(os.path.join(out_dir, "model.keras"), compile=False)
    write_savedmodels(out_dir, model, json.loads(extra), seq_length)


if __name__ == "__main__":
    if sys.argv[1] == "--serving":
        os.environ["KERAS_BACKEND"] = "tensorflow"
        _serving_main(sys.argv[2], sys.argv[3])
    else:
        _main(sys.argv[1], int(sys.argv[2]), sys.argv[3])
