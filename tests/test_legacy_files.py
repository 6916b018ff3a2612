"""Files written by earlier code still load: same weights, same outputs, on every backend.

tests/fixtures/legacy/ holds, per family, a pretrainer and a classifier `.keras` file and a keras-hub preset
folder written by the code of commit e2e37a2 (before the family registry; see make_legacy_files.py), with the
inputs, the backbone outputs and every weight value of the saved models. Loading must give back every array
(none left at its fresh initialisation) and the same backbone outputs.
"""

import collections
import hashlib
import os

import keras
import numpy as np
import pytest

from tests.testing import assert_all_close

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "legacy")
FAMILIES = ["bert", "albert", "roberta", "distil_bert", "ernie", "gpt", "xlnet", "elmo"]
BACKBONES = {
    "bert": "keras_pretrain.models.bert.BertBackbone",
    "albert": "keras_pretrain.models.albert.AlbertBackbone",
    "roberta": "keras_pretrain.models.roberta.RobertaBackbone",
    "distil_bert": "keras_pretrain.models.distil_bert.DistilBertBackbone",
    "ernie": "keras_pretrain.models.ernie.ErnieBackbone",
    "gpt": "keras_pretrain.models.gpt.GPTBackbone",
    "xlnet": "keras_pretrain.models.xlnet.XLNetBackbone",
    "elmo": "keras_pretrain.models.elmo.ElmoBackbone",
}


def backbone_class(family):
    import importlib

    module, name = BACKBONES[family].rsplit(".", 1)
    return getattr(importlib.import_module(module), name)


def expected(family):
    with np.load(os.path.join(HERE, family, "expected.npz")) as f:
        return {k: f[k] for k in f.files}


def fingerprints(arrays):
    return collections.Counter(
        (a.shape, hashlib.sha1(np.ascontiguousarray(a, dtype=a.dtype)).hexdigest()) for a in arrays
    )


def check_outputs(backbone, data):
    inputs = {k.split("/", 1)[1]: v for k, v in data.items() if k.startswith("input/")}
    outputs = backbone(inputs)
    outputs = outputs if isinstance(outputs, dict) else {"output": outputs}
    wanted = {k.split("/", 1)[1]: v for k, v in data.items() if k.startswith("output/")}
    assert wanted, "the fixture stores outputs"
    assert_all_close({k: outputs[k] for k in wanted}, wanted, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["pretrainer", "classifier"])
def test_keras_file_loads_with_every_weight(family, kind):
    backbone_class(family)  # registers the family's classes
    data = expected(family)
    model = keras.saving.load_model(os.path.join(HERE, family, f"{kind}.keras"))
    saved = [v for k, v in sorted(data.items()) if k.startswith(f"{kind}/")]
    loaded = [np.asarray(keras.ops.convert_to_numpy(w)) for w in model.weights]
    assert len(loaded) == len(saved), f"{family} {kind}: {len(loaded)} weights, the file has {len(saved)}"
    missing = fingerprints(saved) - fingerprints(loaded)
    assert not missing, f"{family} {kind}: {sum(missing.values())} saved arrays not loaded: {sorted(missing)[:3]}"
    check_outputs(model.backbone, data)


@pytest.mark.parametrize("family", FAMILIES)
def test_preset_folder_loads(family):
    backbone = backbone_class(family).from_preset(os.path.join(HERE, family, "preset"))
    check_outputs(backbone, expected(family))


TASKS = os.path.join(HERE, "tasks")
TASK_FILES = sorted(f[:-len(".keras")] for f in os.listdir(TASKS) if f.endswith(".keras"))


def test_every_task_class_has_a_file():
    import json
    import zipfile

    import keras_pretrain.tasks

    saved = set()
    for name in TASK_FILES:
        with zipfile.ZipFile(os.path.join(TASKS, f"{name}.keras")) as archive:
            saved.add(json.loads(archive.read("config.json"))["class_name"])
    exported = {name for name in dir(keras_pretrain.tasks) if name[0].isupper() and name.endswith(
        ("Classifier", "Answering", "Choice", "Tagger"))}
    assert saved == exported == {"BeamQuestionAnswering", "ElmoTagger", "MultipleChoice", "SequenceClassifier",
                                 "SpanQuestionAnswering", "TokenClassifier"}


@pytest.mark.parametrize("name", TASK_FILES)
def test_task_file_of_2593cc1_loads_with_its_weights_and_outputs(name):
    """Task files written before tasks became folders (tests/fixtures/legacy/make_task_files.py, 2593cc1)."""
    import keras_pretrain  # noqa: F401 (registers the task classes)

    with np.load(os.path.join(TASKS, f"{name}.npz")) as f:
        data = {k: f[k] for k in f.files}
    model = keras.saving.load_model(os.path.join(TASKS, f"{name}.keras"))
    saved = [v for k, v in sorted(data.items()) if k.startswith("weight/")]
    loaded = [np.asarray(keras.ops.convert_to_numpy(w)) for w in model.weights]
    assert len(loaded) == len(saved), f"{name}: {len(loaded)} weights, the file has {len(saved)}"
    missing = fingerprints(saved) - fingerprints(loaded)
    assert not missing, f"{name}: {sum(missing.values())} saved arrays not loaded"
    inputs = {k.split("/", 1)[1]: v for k, v in data.items() if k.startswith("input/")}
    outputs = model.predict(inputs, verbose=0)
    if isinstance(outputs, dict):
        outputs = dict(sorted(outputs.items()))
    elif isinstance(outputs, (list, tuple)):
        outputs = {str(i): v for i, v in enumerate(outputs)}
    else:
        outputs = {"0": outputs}
    wanted = {k.split("/", 1)[1]: v for k, v in data.items() if k.startswith("output/")}
    assert sorted(outputs) == sorted(wanted)
    assert_all_close({k: np.asarray(outputs[k]) for k in wanted}, wanted, atol=1e-5)
