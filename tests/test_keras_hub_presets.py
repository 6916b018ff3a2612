"""keras-hub's generic entry points resolve our classes from a run's `preset/` folder, and
`keras.saving.load_model` loads every family's task files (tests/fixtures/legacy), in a fresh process that
imports only keras, keras_hub and keras_pretrain (issue 38, item 3): registration on `import keras_pretrain`,
and `backbone_cls` / `preprocessor_cls` on every task."""

import json
import os
import subprocess
import sys

import keras
import pytest

from tests.hub_modules.fixtures import build

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAMILIES = ["bert", "albert", "roberta", "distil_bert", "ernie", "gpt", "xlnet", "elmo"]

CHECK = r"""
import json, sys
import keras
import keras_hub
import keras_pretrain  # registers every family's classes
from keras_pretrain import families

preset, name, has_tokenizer, legacy = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4]
family = families.get(name)
found = {}
for kind in ("pretrainer", "classifier"):  # .keras files of every family's tasks load after the import alone
    found[kind + "_file"] = type(keras.saving.load_model(f"{legacy}/{kind}.keras")).__name__
backbone_entry = keras_hub.models.Backbone if issubclass(family.backbone_class, keras_hub.models.Backbone) \
    else family.backbone_class  # XLNet's backbone is a subclassed keras.Model (see SubclassedBackbone)
found["backbone"] = type(backbone_entry.from_preset(preset)).__name__
if has_tokenizer:
    found["tokenizer"] = type(keras_hub.tokenizers.Tokenizer.from_preset(preset)).__name__
classifier_cls = family.classifier_class
entry = keras_hub.models.TextClassifier if issubclass(family.backbone_class, keras_hub.models.Backbone) \
    else classifier_cls
text_classifier = entry.from_preset(preset, num_classes=2)  # every family's preprocessor builds from a preset
found["text_classifier"] = type(text_classifier).__name__
found["preprocessor"] = type(text_classifier.preprocessor).__name__
found["own_classifier"] = type(classifier_cls.from_preset(preset, num_classes=2)).__name__
if issubclass(family.pretrainer_class, keras_hub.models.MaskedLM):
    found["masked_lm"] = type(keras_hub.models.MaskedLM.from_preset(preset)).__name__
print("FOUND " + json.dumps(found))
"""


@pytest.mark.tf_only
@pytest.mark.parametrize("name", FAMILIES)
def test_keras_hub_entry_points_resolve_our_classes(name, tmp_path):
    from keras_pretrain import families

    family = families.get(name)
    model, tokenizer, _ = build(name, tmp_path)
    backbone = getattr(model, "backbone", model)
    preset = str(tmp_path / "preset")
    backbone.save_to_preset(preset)
    has_tokenizer = hasattr(tokenizer, "save_to_preset")
    if has_tokenizer:
        tokenizer.save_to_preset(preset)
    env = dict(os.environ, KERAS_BACKEND=keras.config.backend(), PYTHONPATH=ROOT)
    legacy = os.path.join(ROOT, "tests", "fixtures", "legacy", name)
    result = subprocess.run([sys.executable, "-c", CHECK, preset, name, "1" if has_tokenizer else "0", legacy],
                            capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.split("FOUND ", 1)[1])
    assert found["backbone"] == family.backbone_class.__name__
    assert found["pretrainer_file"] == family.pretrainer_class.__name__
    assert found["classifier_file"].endswith("Classifier"), found
    if has_tokenizer:
        assert found["tokenizer"] == type(tokenizer).__name__
    assert found["text_classifier"] == family.classifier_class.__name__
    assert found["own_classifier"] == family.classifier_class.__name__
    expected = {"albert", "bert", "roberta", "distil_bert", "ernie"}  # the masked-LM families
    assert ("masked_lm" in found) == (name in expected), found
    if "masked_lm" in found:
        assert found["masked_lm"] == family.pretrainer_class.__name__
    # Every family has a keras-hub preprocessor (`Family.keras_preprocessor`): the classifier gets it.
    assert found["preprocessor"] == family.keras_preprocessor_class.__name__
