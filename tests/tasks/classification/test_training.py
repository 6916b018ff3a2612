"""`keras_pretrain.tasks.classification.training`, called directly: predictions of each problem type, the task's
metrics, the selection metric, the trivial baseline, the best-epoch callback and the GLUE submission file
(the whole run through the recipe: tests/tasks/classification/test_finetune_tasks.py)."""

import math
import os

import numpy as np
import pytest

from keras_pretrain.tasks.classification import training
from keras_pretrain.tasks.classification.tables import CHOICE
from keras_pretrain.tasks.classification.tables import MULTI
from keras_pretrain.tasks.classification.tables import REGRESSION
from keras_pretrain.tasks.classification.tables import SINGLE
from keras_pretrain.tasks.classification.tables import TaskData

pytestmark = pytest.mark.one_backend


def data_of(problem_type, labels=None, task="classify"):
    return TaskData(task, problem_type, labels, [])


class Backbone:
    def __init__(self, hidden_dim):
        self.hidden_dim = hidden_dim


def test_defaults_of_tiny_and_base_models():
    assert training.default_learning_rate(Backbone(16)) == 1e-3 and training.default_seq_length(Backbone(16)) == 64
    assert training.default_learning_rate(Backbone(768)) == 3e-5 and training.default_seq_length(Backbone(768)) == 128
    assert training.total_steps(33, 32, 3) == 6 and training.total_steps(0, 32, 3) == 1


def test_outputs_and_predictions_of_each_problem_type():
    logits = np.array([[2.0, -1.0, 0.1], [-3.0, 0.5, -0.2]], "float32")
    assert training.num_outputs(data_of(SINGLE, ["a", "b", "c"])) == 3
    assert training.num_outputs(data_of(REGRESSION)) == 1 and training.num_outputs(data_of(CHOICE)) is None
    np.testing.assert_array_equal(training.predictions(data_of(SINGLE, ["a", "b", "c"]), logits), [0, 1])
    np.testing.assert_array_equal(training.predictions(data_of(CHOICE), logits), [0, 1])
    np.testing.assert_array_equal(training.predictions(data_of(REGRESSION), logits), [2.0, -3.0])
    np.testing.assert_array_equal(training.predictions(data_of(MULTI, list("abc")), logits, 0.5), [[1, 0, 1], [0, 1, 0]])
    np.testing.assert_array_equal(training.predictions(data_of(MULTI, list("abc")), logits, 0.6), [[1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(training.predictions(data_of(MULTI, list("abc")), logits, 0.9), [[0, 0, 0], [0, 0, 0]])
    assert training.logits_of({"logits": [[1, 2]]}).dtype == np.float32
    np.testing.assert_array_equal(training.logits_of([[1, 2]]), [[1.0, 2.0]])


def test_task_metrics_and_the_value_that_picks_the_best_epoch():
    multi = data_of(MULTI, list("abc"))
    scores = training.task_metrics(multi, np.array([[1, 0, 1], [0, 1, 0]]), np.array([[1, 0, 0], [0, 1, 0]], "float32"))
    assert scores == pytest.approx({"f1": 2 * 2 / (2 * 2 + 1), "exact_match": 0.5, "accuracy": 5 / 6})
    assert training.task_metrics(data_of(SINGLE, ["a", "b"]), np.array([0, 1, 1]), np.array([0, 1, 0])) == {
        "accuracy": pytest.approx(2 / 3)}
    regression = training.task_metrics(data_of(REGRESSION), np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0]))
    assert set(regression) == {"pearson", "spearman", "mse"} and regression["mse"] == pytest.approx(1 / 3)
    assert set(training.task_metrics(data_of(SINGLE, None, "mrpc"), np.array([0, 1]), np.array([0, 1]))) == {
        "accuracy", "f1", "mean"}
    assert training.selection_metric(data_of(REGRESSION)) == "pearson"
    assert training.selection_metric(data_of(MULTI)) == "f1"
    assert training.selection_metric(data_of(CHOICE)) == "accuracy"
    assert training.selection_metric(data_of(SINGLE, None, "cola")) == "mcc"


def test_the_trivial_baseline_of_each_problem_type():
    single = training.baseline(data_of(SINGLE, ["a", "b"]), np.array([1, 1, 0]), np.array([1, 0]))
    assert single == {"accuracy": 0.5}
    assert training.baseline(data_of(CHOICE), np.array([3, 3]), np.array([0, 1, 0, 2])) == {"accuracy": 0.5}
    scores = training.baseline(data_of(REGRESSION), np.array([1.0, 3.0]), np.array([1.0, 3.0], "float32"))
    assert scores["pearson"] == 0.0 and scores["spearman"] == 0.0 and scores["mse"] == 1.0  # a constant
    multi = training.baseline(data_of(MULTI, list("ab")), np.array([[1, 0], [1, 1], [1, 0]], "float32"),
                              np.array([[1, 0], [0, 1]], "float32"))
    assert multi["exact_match"] == 0.5
    assert set(training.BASELINE) == {SINGLE, REGRESSION, MULTI, CHOICE}


class Model:
    """A stand-in for a Keras model: one scalar weight; `predict` gives the logits of the current epoch."""

    def __init__(self, logits_per_epoch):
        self.logits, self.epoch, self.weight, self.stop_training = logits_per_epoch, 0, 0.0, False
        self.input = {"token_ids": None}

    def predict(self, x, batch_size=None, verbose=0):
        return {"logits": np.asarray(self.logits[min(self.epoch, len(self.logits) - 1)], "float32")}

    def get_weights(self):
        return [np.array(self.weight)]

    def set_weights(self, weights):
        self.weight = float(weights[0])


def train(model, callback, epochs):
    for epoch in range(epochs):
        model.weight = float(epoch + 1)  # this epoch's weights
        model.epoch = epoch
        logs = {}
        callback.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    callback.on_train_end()
    return logs


def test_the_best_epoch_is_kept_and_patience_stops_training(capsys):
    right, wrong = [[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]
    y = np.array([1, 0])
    data = data_of(SINGLE, ["a", "b"])
    model = Model([wrong, right, wrong, wrong, right])
    best = training.best_epoch_callback(model, {"token_ids": None}, y, data, 0.5, 2, patience=2, verbose=1)
    logs = train(model, best, 5)
    assert best.best_epoch == 2 and best.best == 1.0 and model.weight == 2.0  # restored
    assert [h["accuracy"] for h in best.history] == [0.0, 1.0, 0.0, 0.0]  # stopped after 2 epochs without better
    assert logs == {"val_accuracy": 0.0}
    assert capsys.readouterr().out.splitlines()[:2] == ["epoch 1: validation accuracy 0.0000",
                                                        "epoch 2: validation accuracy 1.0000"]
    scores = training.evaluate(model, data, {"token_ids": None}, y, batch_size=2)
    assert scores == {"accuracy": 0.0}


def test_a_nan_score_is_never_the_best_epoch():
    data = data_of(REGRESSION)
    constant = [[0.5], [0.5], [0.5]]
    model = Model([constant])
    best = training.best_epoch_callback(model, {}, np.array([1.0, 2.0, 3.0], "float32"), data, 0.5, 2, None, 0)
    train(model, best, 2)
    assert best.best_epoch is None and best.best == -math.inf and len(best.history) == 2


def test_the_glue_submission_file_is_named_after_the_task(tmp_path):
    model = Model([[[0.0, 1.0], [1.0, 0.0], [0.3, 0.1]]])
    data = data_of(SINGLE, ["0", "1"], "mrpc")
    path = training.write_test_predictions(model, data, {"token_ids": np.zeros((3, 4)), "other": None},
                                           str(tmp_path), batch_size=2)
    assert path == os.path.join(str(tmp_path), "MRPC.tsv")
    with open(path, encoding="utf-8") as f:
        assert f.read().split() == ["index", "prediction", "0", "1", "1", "0", "2", "0"]
    data = data_of(SINGLE, ["entailment", "neutral", "contradiction"], "mnli-mm")
    model = Model([[[0.0, 1.0, 0.0]]])
    path = training.write_test_predictions(model, data, {"token_ids": np.zeros((1, 4))}, str(tmp_path), 2)
    assert os.path.basename(path) == "MNLI-mm.tsv"
