"""Modules across tools and backends: tensorflow_hub, saved_model_cli, other backends; errors; registry."""

import json
import os
import shutil
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest

import hub_modules
from keras_pretrain.errors import CheckpointFormatError
from tests.hub_modules.fixtures import MIXED_TEXT
from tests.testing import max_abs_diff

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QUIET = {"TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONWARNINGS": "ignore"}


@pytest.mark.tf_only
def test_tensorflow_hub_keras_layer_loads_and_fine_tunes(hub_module):
    """tf_keras + tensorflow_hub, as users of TF-Hub's BERT / ELMo modules write it."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (preprocessor ops)

    hub = pytest.importorskip("tensorflow_hub")
    tf_keras = pytest.importorskip("tf_keras")
    for family in ("bert", "albert"):
        module = hub_module(family)
        preprocessor = hub.KerasLayer(os.path.join(module.path, "preprocessor"))
        encoder = hub.KerasLayer(os.path.join(module.path, "encoder"), trainable=True)
        text = tf_keras.Input(shape=(), dtype=tf.string)
        outputs = encoder(preprocessor(text))
        model = tf_keras.Model(text, tf_keras.layers.Dense(2)(outputs["pooled_output"]))
        model.compile(tf_keras.optimizers.SGD(0.1), tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      run_eagerly=True)  # the restored training=True graph either way
        # The encoder's trainable weights are the backbone's (the mlm head lives in encoder.mlm).
        assert len(encoder.trainable_weights) == len(module.model.backbone.trainable_weights)
        texts = tf.constant([MIXED_TEXT, "猫"])
        vectors = encoder(preprocessor(texts))["default"]
        layer = hub_modules.load(module.path)
        expected = layer({k: v.numpy() for k, v in preprocessor(texts).items()})["default"]
        assert max_abs_diff(vectors, expected) <= 1e-5
        if family != "bert":
            continue  # one fine-tuning run is enough
        before = [w.numpy().copy() for w in encoder.trainable_weights]
        model.fit(texts, np.array([0, 1]), epochs=1, verbose=0)
        changed = [np.abs(w.numpy() - b).max() > 0 for w, b in zip(encoder.trainable_weights, before)]
        assert all(changed), family
    # ELMo: strings (default) and the `tokens` signature, as the TF-Hub ELMo module.
    module = hub_module("elmo")
    elmo = hub.KerasLayer(os.path.join(module.path, "encoder"), output_key="elmo", trainable=True)
    sentences = tf.constant(["The cat sat", "猫 坐 在 垫子 上 !"])
    assert max_abs_diff(elmo(sentences), module.reference["elmo"]) <= 1e-5
    assert sorted(w.name.split("/")[-1].split(":")[0] for w in elmo.trainable_weights) == ["gamma", "scalar_weights"]
    tokens = hub.KerasLayer(os.path.join(module.path, "encoder"), signature="tokens", output_key="default")
    got = tokens({"tokens": tf.constant([["The", "cat", "sat", "", "", ""], ["猫", "坐", "在", "垫子", "上", "!"]]),
                  "sequence_len": tf.constant([3, 6])})
    assert max_abs_diff(got, module.reference["default"]) <= 1e-5


@pytest.mark.tf_only
def test_saved_model_cli_runs_gpt_generate(hub_module, tmp_path):
    module = hub_module("gpt")
    np.save(tmp_path / "ids.npy", np.array([[5, 6, 7]], "int32"))
    np.save(tmp_path / "mask.npy", np.ones((1, 3), "int32"))
    np.save(tmp_path / "length.npy", np.array(8, "int32"))
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    result = subprocess.run(
        [cli, "run", "--dir", os.path.join(module.path, "encoder"), "--tag_set", "serve", "--signature_def",
         "generate", "--inputs",
         f"input_word_ids={tmp_path}/ids.npy;input_mask={tmp_path}/mask.npy;max_length={tmp_path}/length.npy"],
        capture_output=True, text=True, timeout=180, env={**os.environ, **QUIET},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    module.model.compile(sampler="greedy")
    expected = module.model.generate_ids([[5, 6, 7]], 8)[0]
    assert "output_ids" in result.stdout
    assert " ".join(map(str, expected)) in " ".join(result.stdout.replace("[", " ").replace("]", " ").split())


EXPORT_ON_TENSORFLOW = """
import sys, numpy as np, hub_modules
from tests.hub_modules.fixtures import build, reference_outputs
model, tokenizer, inputs = build("xlnet", None)
hub_modules.export(model, sys.argv[1], tokenizer=tokenizer, savedmodels=False)
np.savez(sys.argv[2], expected=reference_outputs("xlnet", model, inputs)["sequence_output"], **inputs)
"""


@pytest.mark.skipif(keras.config.backend() != "torch", reason="one other backend is enough (PyTorch: eager, fast)")
def test_module_exported_on_tensorflow_trains_here(tmp_path):
    """A module written by the TensorFlow backend (subprocess) loads and fine-tunes on PyTorch."""
    path, arrays = str(tmp_path / "module"), str(tmp_path / "arrays.npz")
    result = subprocess.run(
        [sys.executable, "-c", EXPORT_ON_TENSORFLOW, path, arrays], capture_output=True, text=True, timeout=300,
        cwd=ROOT, env={**os.environ, **QUIET, "KERAS_BACKEND": "tensorflow"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert hub_modules.read_metadata(path)[1]["exported_from_backend"] == "tensorflow"
    data = dict(np.load(arrays))
    expected = data.pop("expected")
    layer = hub_modules.load(path)
    assert max_abs_diff(layer(data)["sequence_output"], expected) <= 1e-5
    inputs = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in data}
    model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)["default"]))
    model.compile(keras.optimizers.SGD(0.1), keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = keras.ops.convert_to_numpy(layer.backbone.token_embedding.embeddings).copy()
    model.fit(data, np.array([0, 1]), epochs=1, verbose=0)
    assert np.abs(keras.ops.convert_to_numpy(layer.backbone.token_embedding.embeddings) - before).max() > 0


@pytest.mark.skipif(keras.config.backend() == "tensorflow", reason="the TensorFlow run exports in-process")
def test_export_on_this_backend_writes_savedmodels_through_tensorflow(hub_module):
    """JAX / PyTorch: the SavedModels come from a TensorFlow subprocess and compute what this backend does."""
    import tensorflow as tf

    module = hub_module("bert")  # exported with SavedModels on every backend
    assert hub_modules.read_metadata(module.path)[1]["exported_from_backend"] == keras.config.backend()
    encoder = module.savedmodel("encoder")
    outputs = encoder({k: tf.constant(v) for k, v in module.inputs.items()})
    assert max_abs_diff(outputs["sequence_output"], module.reference["sequence_output"]) <= 1e-5
    assert os.path.exists(os.path.join(module.path, "preprocessor", "saved_model.pb"))


def test_corrupt_modules_give_clear_errors(hub_module, tmp_path):
    module = hub_module("bert")
    with pytest.raises(CheckpointFormatError, match="no such module folder"):
        hub_modules.load(str(tmp_path / "nothing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointFormatError, match="metadata.json missing"):
        hub_modules.load(str(empty))

    def copy(name):
        target = tmp_path / name
        shutil.copytree(module.path, target)
        return target

    def edit_metadata(folder, **changes):
        metadata = json.loads((folder / "metadata.json").read_text())
        metadata.update(changes)
        (folder / "metadata.json").write_text(json.dumps(metadata))
        return metadata

    bad = copy("bad_format")
    edit_metadata(bad, format="something-else")
    with pytest.raises(CheckpointFormatError, match="format 'something-else'"):
        hub_modules.load(str(bad))
    (bad / "metadata.json").write_text("{not json")
    with pytest.raises(CheckpointFormatError, match=r"metadata.json: not valid JSON"):
        hub_modules.load(str(bad))
    edit = copy("wrong_family")
    edit_metadata(edit, family="gpt", backbone_class="GPTBackbone")
    message = r"metadata.json: says backbone_class 'GPTBackbone'.*holds a BertBackbone"
    with pytest.raises(CheckpointFormatError, match=message):
        hub_modules.load(str(edit))
    edit = copy("wrong_config")
    metadata = json.loads((edit / "metadata.json").read_text())
    edit_metadata(edit, config={**metadata["config"], "hidden_dim": 32})
    with pytest.raises(CheckpointFormatError, match=r"config differs from .*model.keras in \['hidden_dim'\]"):
        hub_modules.load(str(edit))
    edit = copy("no_family")
    del metadata["family"]
    (edit / "metadata.json").write_text(json.dumps(metadata))
    with pytest.raises(CheckpointFormatError, match=r"missing the entries \['family'\]"):
        hub_modules.load(str(edit))
    # model.keras without its weights file, or not a zip at all.
    broken = copy("no_weights")
    original = os.path.join(module.path, "model.keras")
    with zipfile.ZipFile(original) as source, zipfile.ZipFile(broken / "model.keras", "w") as target:
        for item in source.infolist():
            if not item.filename.endswith(".h5"):
                target.writestr(item, source.read(item.filename))
    with pytest.raises(CheckpointFormatError, match=r"no_weights/model.keras: unreadable or incomplete"):
        hub_modules.load(str(broken))
    (broken / "model.keras").write_bytes(b"not a zip file")
    with pytest.raises(CheckpointFormatError, match="model.keras: unreadable"):
        hub_modules.load(str(broken))
    os.remove(broken / "model.keras")
    with pytest.raises(CheckpointFormatError, match="model.keras missing"):
        hub_modules.load(str(broken))
    if keras.config.backend() == "tensorflow":  # SavedModel variables missing
        missing = copy("no_variables")
        variables = missing / "encoder" / "variables"
        for name in os.listdir(variables):
            if name.startswith("variables.data"):
                os.remove(variables / name)
        with pytest.raises(CheckpointFormatError, match=r"encoder/variables/variables.data-00000-of-00001: missing"):
            hub_modules.load(str(missing), savedmodel=True)
        shutil.rmtree(missing / "encoder")
        with pytest.raises(CheckpointFormatError, match=r"no_variables/encoder: missing"):
            hub_modules.load(str(missing), savedmodel=True)
    else:
        with pytest.raises(CheckpointFormatError, match="savedmodel=True needs the TensorFlow backend"):
            hub_modules.load(module.path, savedmodel=True)


def test_export_refuses_to_overwrite_and_reads_saved_models(hub_module, tmp_path):
    module = hub_module("gpt")
    with pytest.raises(FileExistsError, match="exists and is not empty"):
        hub_modules.export(module.model, module.path)
    # A `.keras` file (e.g. a pretraining run's) is a valid source.
    module.model.save(tmp_path / "pretrainer.keras")
    path = hub_modules.export(str(tmp_path), str(tmp_path / "module"), tokenizer=module.tokenizer, savedmodels=False)
    layer = hub_modules.load(path)
    assert max_abs_diff(layer(module.inputs)["logits"], module.reference["logits"]) <= 1e-5


def test_registry_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_PRETRAIN_CACHE", str(tmp_path))
    with pytest.raises(CheckpointFormatError) as info:
        hub_modules.resolve("albert_base_v2")
    message = str(info.value)
    assert "albert_base_v2.tar.gz" in message and str(tmp_path) in message and "nothing is downloaded" in message
    (tmp_path / "albert_base_v2.tar.gz").write_bytes(b"")
    assert hub_modules.resolve("albert_base_v2") == str(tmp_path / "albert_base_v2.tar.gz")


def test_registry_has_every_preset(tmp_path, monkeypatch):
    from hub_modules.registry import handles

    monkeypatch.setenv("KERAS_PRETRAIN_CACHE", str(tmp_path))
    known = handles()
    for name in ("bert_base_en_uncased", "roberta_base_en", "distil_bert_base_en_uncased", "ernie_1.0_base_zh",
                 "gpt1", "xlnet_base_cased", "elmo_original", "albert_base_zh", "albert_base_v2", "albert_base_hub"):
        assert {"source", "file", "contains", "loader"} <= set(known[name]), name
    presets = [n for n in known if known[n]["loader"] == "hub_modules:load"]
    assert len(presets) >= 8
    with pytest.raises(CheckpointFormatError) as info:
        hub_modules.resolve(presets[0])
    assert str(tmp_path / presets[0]) in str(info.value) and "nothing is downloaded" in str(info.value)
    (tmp_path / presets[0]).mkdir()
    assert hub_modules.resolve(presets[0]) == str(tmp_path / presets[0])
    # Paths and unknown names are returned as they are (read_metadata then says what is wrong).
    assert hub_modules.resolve(str(tmp_path / "nope")) == str(tmp_path / "nope")


@pytest.mark.one_backend
def test_each_task_names_its_serving_writer():
    """The export asks the task which module writes its serving graph (`serving_module`), not a dict key; each
    module has the one entry point `write_from_spec`."""
    import importlib

    from keras_pretrain.models.gpt import GPTClassifier
    from keras_pretrain.tasks import BeamQuestionAnswering
    from keras_pretrain.tasks import ElmoTagger
    from keras_pretrain.tasks import MultipleChoice
    from keras_pretrain.tasks import SequenceClassifier
    from keras_pretrain.tasks import SpanQuestionAnswering
    from keras_pretrain.tasks import TokenClassifier

    expected = {
        SequenceClassifier: "classification", MultipleChoice: "multiple_choice", TokenClassifier:
        "token_classification", ElmoTagger: "token_classification", SpanQuestionAnswering: "question_answering",
        BeamQuestionAnswering: "question_answering",
    }
    for cls, task in expected.items():
        assert cls.serving_module == f"keras_pretrain.tasks.{task}.serving", cls
        assert callable(importlib.import_module(cls.serving_module).write_from_spec)
    gpt = GPTClassifier.__new__(GPTClassifier)
    gpt.task = "multiple_choice"
    assert gpt.serving_module == "keras_pretrain.tasks.multiple_choice.serving"
    gpt.task = "entailment"
    assert gpt.serving_module == "keras_pretrain.tasks.classification.serving"
