"""Session-wide tiny modules of every family (exporting is the slow part: once each)."""

import collections
import os

import keras
import pytest

from tests.hub_modules.fixtures import MIXED_TEXT
from tests.hub_modules.fixtures import build
from tests.hub_modules.fixtures import reference_outputs
from tests.hub_modules.fixtures import tokenizer_ids

# Elsewhere than in the TensorFlow run each export with SavedModels starts a
# TensorFlow subprocess: only the BERT module has them there (one test uses it).
TENSORFLOW = keras.config.backend() == "tensorflow"


class Module(collections.namedtuple("Module", "family path model tokenizer inputs reference text_ids cache")):
    def savedmodel(self, name):
        """`tf.saved_model.load` of `encoder` / `preprocessor`, once per session."""
        import hub_modules

        if name not in self.cache:
            self.cache[name] = hub_modules.loading.load_savedmodel(os.path.join(self.path, name))
        return self.cache[name]


@pytest.fixture(scope="session")
def hub_module(tmp_path_factory):
    """`hub_module(family)`: a tiny model of the family exported once per session."""
    import hub_modules

    cache = {}

    def get(family):
        if family not in cache:
            folder = tmp_path_factory.mktemp(f"{family}_files")
            model, tokenizer, inputs = build(family, folder)
            # Our Python-side ids of the mixed-language text, now: a later
            # `keras.utils.set_random_seed` (autouse fixture) clears TF's eager
            # kernel cache, which frees eagerly created SentencePiece resources.
            text_ids = None if tokenizer is None else tokenizer_ids(tokenizer, MIXED_TEXT)
            path = str(tmp_path_factory.mktemp("modules") / family)
            savedmodels = TENSORFLOW or family == "bert"
            hub_modules.export(model, path, tokenizer=tokenizer, seq_length=12, savedmodels=savedmodels)
            cache[family] = Module(
                family, path, model, tokenizer, inputs, reference_outputs(family, model, inputs), text_ids, {}
            )
        return cache[family]

    return get
