"""GLUE metrics: the NumPy functions equal scikit-learn / SciPy; the Keras metrics equal them, streaming, in
`model.evaluate` and `model.fit(validation_data=...)` on the backend of the run."""

import warnings

import keras
import numpy as np
import pytest

from keras_pretrain.tasks.classification import metrics

sklearn_metrics = pytest.importorskip("sklearn.metrics")
pytestmark = pytest.mark.filterwarnings("ignore:A single label was found")  # sklearn's, on one-class cases
stats = pytest.importorskip("scipy.stats")

EXACT = 1e-12  # NumPy (float64) against sklearn / scipy
STREAMING = 1e-5  # the float32 Keras metrics (measured: <= 2e-6, at an offset of 1000)
CAPACITY = 256  # SpearmanCorrelation's in these tests: more than any split here, cheaper to compile than 8192


def classification_cases():
    """(name, predictions, labels): random, constant, one-class, perfect, inverted, 3 classes."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 97)
    noisy = np.where(rng.random(97) < 0.3, 1 - labels, labels)
    return [
        ("random", rng.integers(0, 2, 50), rng.integers(0, 2, 50)),
        ("noisy", noisy, labels),
        ("constant_prediction", np.ones(40, int), rng.integers(0, 2, 40)),
        ("all_one_class", rng.integers(0, 2, 40), np.zeros(40, int)),
        ("all_zero", np.zeros(12, int), np.zeros(12, int)),
        ("perfect", labels, labels),
        ("inverted", 1 - labels, labels),
        ("three_classes", rng.integers(0, 3, 80), rng.integers(0, 3, 80)),
        ("three_classes_two_predicted", rng.integers(0, 2, 80), rng.integers(0, 3, 80)),
    ]


def regression_cases():
    """(name, predictions, labels): continuous, STS-B-like ties, constant, a large offset."""
    rng = np.random.default_rng(1)
    scores = np.round(rng.uniform(0, 5, 300) * 5) / 5  # steps of 0.2: many ties
    return [
        ("continuous", rng.normal(size=200), rng.normal(size=200)),
        ("ties", np.round(scores + rng.normal(0, 1, 300)), scores),
        ("ties_both_sides", np.round(scores), scores),
        ("anti", -scores, scores),
        ("offset", 1000.0 + scores + rng.normal(0, 0.5, 300), 1000.0 + scores),
        ("constant_prediction", np.full(30, 2.5), rng.uniform(0, 5, 30)),
    ]


def ids(cases):
    return [case[0] for case in cases]


def reference_f1(predictions, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero_division's warning: sklearn returns 0.0
        return sklearn_metrics.f1_score(labels == 1, predictions == 1)


def reference_correlation(name, predictions, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        function = stats.pearsonr if name == "pearson" else stats.spearmanr
        return function(predictions, labels)[0]


# === NumPy ===


@pytest.mark.one_backend
@pytest.mark.parametrize("name, predictions, labels", classification_cases(), ids=ids(classification_cases()))
def test_classification_functions_equal_sklearn(name, predictions, labels):
    assert abs(metrics.accuracy(predictions, labels) - sklearn_metrics.accuracy_score(labels, predictions)) < EXACT
    assert abs(metrics.matthews_corrcoef(predictions, labels)
               - sklearn_metrics.matthews_corrcoef(labels, predictions)) < EXACT
    assert abs(metrics.f1(predictions, labels) - reference_f1(predictions, labels)) < EXACT


@pytest.mark.one_backend
def test_undefined_values_are_those_of_the_references():
    labels = np.zeros(10, int)
    assert metrics.matthews_corrcoef(labels, labels) == 0.0 == sklearn_metrics.matthews_corrcoef(labels, labels)
    assert metrics.f1(np.zeros(10, int), labels) == 0.0
    assert np.isnan(metrics.pearson(np.ones(5), np.arange(5.0)))
    assert np.isnan(metrics.spearman(np.arange(5.0), np.ones(5)))
    assert metrics.matthews_corrcoef([1, 0, 1, 1], [1, 0, 0, 1]) == pytest.approx(1 / np.sqrt(3))  # by hand


@pytest.mark.one_backend
@pytest.mark.parametrize("name, predictions, labels", regression_cases(), ids=ids(regression_cases()))
def test_correlations_equal_scipy(name, predictions, labels):
    for metric in ("pearson", "spearman"):
        ours, reference = getattr(metrics, metric)(predictions, labels), reference_correlation(
            metric, predictions, labels)
        assert (np.isnan(ours) and np.isnan(reference)) or abs(ours - reference) < EXACT, (metric, ours, reference)


@pytest.mark.one_backend
def test_average_ranks_equal_scipy():
    values = np.array([3.0, 1.0, 3.0, 2.0, 3.0, 1.0, 7.0])
    np.testing.assert_array_equal(metrics.average_ranks(values), stats.rankdata(values))
    assert list(metrics.average_ranks(values)) == [5.0, 1.5, 5.0, 3.0, 5.0, 1.5, 7.0]


@pytest.mark.one_backend
def test_glue_metrics_reports_each_task_s_values():
    predictions, labels = np.array([1, 0, 1, 1]), np.array([1, 0, 0, 1])
    assert metrics.glue_metrics("MRPC", predictions, labels) == pytest.approx(
        {"f1": 0.8, "accuracy": 0.75, "mean": 0.775})
    assert metrics.glue_metrics("cola", predictions, labels) == pytest.approx({"mcc": 1 / np.sqrt(3)})
    assert metrics.glue_metrics("rte", predictions, labels) == {"accuracy": 0.75}
    assert set(metrics.glue_metrics("ax", [0, 1, 2], [0, 1, 1])) == {"mcc"}
    scores = metrics.glue_metrics("stsb", np.array([[1.0], [2.0], [4.0]]), [1.0, 3.0, 2.0])
    assert set(scores) == {"pearson", "spearman", "mean"}
    assert scores["spearman"] == pytest.approx(0.5) and scores["mean"] == pytest.approx(
        (scores["pearson"] + 0.5) / 2)


@pytest.mark.one_backend
def test_glue_metrics_refuses_bad_input():
    with pytest.raises(TypeError, match="class ids"):
        metrics.glue_metrics("mnli", ["entailment"], ["entailment"])
    with pytest.raises(ValueError, match="unknown GLUE task"):
        metrics.glue_metrics("squad", [1], [1])
    with pytest.raises(ValueError, match="same length"):
        metrics.accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="no examples"):
        metrics.f1([], [])


@pytest.mark.one_backend
def test_the_task_table_agrees_with_the_glue_readers():
    from keras_pretrain.tasks.classification.glue import TASKS

    assert set(TASKS) == set(metrics.GLUE_TASKS)
    for name, task in TASKS.items():
        names, num_classes = metrics.GLUE_TASKS[name]
        assert task.metrics == names and num_classes == (None if task.labels is None else len(task.labels))
    assert metrics.GLUE_METRIC == {"cola": "mcc", "sst-2": "accuracy", "mrpc": "f1", "qqp": "f1",
                                   "sts-b": "spearman", "mnli": "accuracy", "mnli-mm": "accuracy",
                                   "qnli": "accuracy", "rte": "accuracy", "wnli": "accuracy", "ax": "mcc"}


# === Keras ===


def identity_model(width):
    inputs = keras.Input((width,))
    return keras.Model(inputs, keras.layers.Identity()(inputs))


def logits_of(predictions, num_classes, rng):
    """Random logits whose argmax is `predictions`."""
    logits = rng.normal(size=(len(predictions), num_classes)).astype("float32")
    logits[np.arange(len(predictions)), predictions] = logits.max(axis=-1) + 1.0
    return logits


def task_data(task, rng, n=203):
    if task == "sts-b":
        labels = (np.round(rng.uniform(0, 5, n) * 5) / 5).astype("float32")
        predictions = np.round(labels + rng.normal(0, 1, n), 1).astype("float32")  # ties on both sides
        return predictions[:, None], labels, predictions
    num_classes = metrics.GLUE_TASKS[task][1]
    labels = rng.integers(0, num_classes, n)
    predictions = np.where(rng.random(n) < 0.4, rng.integers(0, num_classes, n), labels)
    return logits_of(predictions, num_classes, rng), labels, predictions


def check_evaluate(task, jit_compile):
    """Uneven batches (203 = 5 x 37 + 18) through `evaluate`."""
    inputs, labels, predictions = task_data(task, np.random.default_rng(2))
    model = identity_model(inputs.shape[1])
    model.compile(loss="mse" if task == "sts-b" else keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=metrics.glue_keras_metrics(task, spearman_capacity=CAPACITY), jit_compile=jit_compile)
    result = model.evaluate(inputs, labels, batch_size=37, verbose=0, return_dict=True)
    expected = metrics.glue_metrics(task, predictions, labels)
    expected.pop("mean", None)
    assert {k: v for k, v in result.items() if k != "loss"} == pytest.approx(expected, abs=STREAMING)


@pytest.mark.parametrize("task", ["cola", "mrpc", "ax", "sts-b"])
def test_keras_metrics_equal_glue_metrics_in_evaluate(task):
    check_evaluate(task, "auto")  # jax: jit; tensorflow: a tf.function graph; torch: eager


# torch.compile takes ~35 s per model on 2 CPU cores (measured: same values); the jax run's "auto" is jit already.
JIT_RUN = {"torch": pytest.mark.large, "jax": pytest.mark.skip(reason="the evaluate test above is jit-compiled")}


@JIT_RUN.get(keras.config.backend(), pytest.mark.tf_only)
@pytest.mark.parametrize("task", ["ax", "sts-b"])
def test_keras_metrics_equal_glue_metrics_under_jit_compile(task):
    check_evaluate(task, True)  # tensorflow: XLA


@pytest.mark.parametrize("task", ["cola", "sts-b"])
def test_validation_metrics_of_fit_are_those_of_the_model_s_predictions(task):
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(45, 4)).astype("float32")
    regression = task == "sts-b"
    train_labels = x[:, 0] + 3.0 if regression else (x[:, 0] > 0).astype("int32")
    labels = np.round(y[:, 0] + 3.0, 1) if regression else (y[:, 0] + 0.5 * y[:, 1] > 0).astype("int32")
    inputs = keras.Input((4,))
    model = keras.Model(inputs, keras.layers.Dense(1 if regression else 2)(inputs))
    model.compile(optimizer=keras.optimizers.SGD(0.1), metrics=metrics.glue_keras_metrics(task, CAPACITY),
                  loss="mse" if regression else keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, train_labels, batch_size=16, epochs=1, verbose=0, validation_data=(y, labels),
                        validation_batch_size=7)
    outputs = model.predict(y, verbose=0)
    predictions = outputs[:, 0] if regression else outputs.argmax(-1)
    expected = metrics.glue_metrics(task, predictions, labels)
    for name in metrics.GLUE_TASKS[task][0]:
        assert history.history["val_" + name][-1] == pytest.approx(expected[name], abs=STREAMING), name


def test_pearson_keeps_its_digits_far_from_zero():
    """float32 running sums of x, x^2, xy would lose ~2 digits here (1.8e-2 measured); merged moments do not."""
    rng = np.random.default_rng(4)
    labels = (1000.0 + rng.uniform(0, 5, 1500)).astype("float32")
    predictions = (labels + rng.normal(0, 1, 1500)).astype("float32")
    metric = metrics.PearsonCorrelation()
    for start in range(0, 1500, 32):
        metric.update_state(labels[start:start + 32], predictions[start:start + 32, None])
    reference = stats.pearsonr(predictions.astype("float64"), labels.astype("float64"))[0]
    assert abs(float(metric.result()) - reference) < STREAMING


def test_weights_of_zero_leave_examples_out():
    rng = np.random.default_rng(5)
    labels, predictions = rng.integers(0, 2, 60), rng.integers(0, 2, 60)
    scores, targets = rng.normal(size=60).astype("float32"), rng.normal(size=60).astype("float32")
    weights = (rng.random(60) < 0.7).astype("float32")
    kept = weights > 0
    checks = [
        (metrics.MatthewsCorrelation(), labels, logits_of(predictions, 2, rng),
         sklearn_metrics.matthews_corrcoef(labels[kept], predictions[kept])),
        (metrics.BinaryF1(), labels, logits_of(predictions, 2, rng), reference_f1(predictions[kept], labels[kept])),
        (metrics.PearsonCorrelation(), targets, scores, stats.pearsonr(scores[kept], targets[kept])[0]),
        (metrics.SpearmanCorrelation(capacity=64), targets, scores, stats.spearmanr(scores[kept], targets[kept])[0]),
    ]
    for metric, y_true, y_pred, reference in checks:
        for start in (0, 30):  # two batches of one shape: on JAX each eager op compiles once per shape
            metric.update_state(y_true[start:start + 30], y_pred[start:start + 30],
                                sample_weight=weights[start:start + 30])
        assert abs(float(metric.result()) - reference) < STREAMING, metric.name


def test_spearman_is_nan_past_its_capacity_and_starts_again_after_reset():
    metric = metrics.SpearmanCorrelation(capacity=10)
    metric.update_state(np.arange(6.0), np.arange(6.0))
    metric.update_state(np.arange(4.0), np.arange(4.0))
    assert float(metric.result()) == pytest.approx(stats.spearmanr(np.r_[np.arange(6), np.arange(4)],
                                                                   np.r_[np.arange(6), np.arange(4)])[0])
    metric.update_state(np.arange(1.0), np.arange(1.0))
    assert np.isnan(float(metric.result()))
    metric.reset_state()
    metric.update_state(np.array([1.0, 2.0, 3.0]), np.array([3.0, 1.0, 2.0]))
    assert float(metric.result()) == pytest.approx(-0.5)


def test_undefined_keras_values_are_those_of_the_numpy_ones():
    mcc, f1, pearson = metrics.MatthewsCorrelation(), metrics.BinaryF1(), metrics.PearsonCorrelation()
    zeros = np.zeros(8, "int32")
    mcc.update_state(zeros, logits_of(zeros, 2, np.random.default_rng(6)))
    f1.update_state(zeros, logits_of(zeros, 2, np.random.default_rng(6)))
    pearson.update_state(np.arange(8.0), np.ones((8, 1)))
    assert float(mcc.result()) == 0.0 and float(f1.result()) == 0.0 and np.isnan(float(pearson.result()))


def test_metrics_serialize_and_refuse_logits_of_another_width():
    for metric in (metrics.MatthewsCorrelation(num_classes=3, name="r3"), metrics.BinaryF1(),
                   metrics.PearsonCorrelation(), metrics.SpearmanCorrelation(capacity=100)):
        again = keras.metrics.deserialize(keras.metrics.serialize(metric))
        assert type(again) is type(metric) and again.get_config() == metric.get_config()
    with pytest.raises(ValueError, match=r"\[B, 3\]"):
        metrics.MatthewsCorrelation(num_classes=3).update_state(np.zeros(2, "int32"), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="C >= 2"):
        metrics.BinaryF1().update_state(np.zeros(2, "int32"), np.zeros((2, 1)))
