"""docs/add-a-task.md, followed in a test module: a new task written once (a sentence score: one float per
sequence, from the family's summary) runs on families whose summaries differ, without a family branch."""

import keras
import keras_hub
import numpy as np
import pytest

from keras_pretrain import families
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.tasks.classification import task_inputs
from tests.hub_modules.fixtures import TRANSFORMER


@keras.saving.register_keras_serializable(package="test_add_a_task")
class SentenceScorer(TaskMixin, keras_hub.models.Task):
    """One float per sequence: the family's summary layer, then Dense(1) (step 1 of the guide)."""

    backbone_cls = None
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, **kwargs):
        family = families.family_of(backbone)
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.summary_layer = family.summary.layer(name="summary")
        self.score = keras.layers.Dense(1, name="score")
        inputs = task_inputs(backbone, family.token_states)
        outputs = self.backbone(inputs)
        vector = self.summary_layer(outputs, inputs["padding_mask"])
        super().__init__(inputs=inputs, outputs=self.score(vector)[:, 0], **kwargs)

    def default_compile_args(self):
        return {"optimizer": keras.optimizers.Adam(1e-2), "loss": "mse"}


@pytest.mark.parametrize("name", ["bert", "roberta", "xlnet"])  # pooled, first token, last token
def test_a_task_from_the_guide_runs_on_every_summary(name, tmp_path):
    family = families.get(name)
    config = dict(TRANSFORMER, vocabulary_size=30)
    if family.positions:
        config["max_sequence_length"] = 16 + family.position_offset
    backbone = family.backbone_class(**config)
    task = SentenceScorer(backbone)
    assert isinstance(task.summary_layer, family.summary.layer)
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(3, 30, (8, 10)).astype("int32"), "segment_ids": np.zeros((8, 10), "int32"),
         "padding_mask": np.ones((8, 10), "int32")}
    x = {k: x[k] for k in task.input}
    y = rng.normal(size=8).astype("float32")
    task.compile()
    history = task.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    path = str(tmp_path / "scorer.keras")
    task.save(path)
    reloaded = keras.saving.load_model(path, compile=False)
    np.testing.assert_allclose(np.asarray(reloaded.predict(x, verbose=0)), np.asarray(task.predict(x, verbose=0)),
                               atol=1e-5)
