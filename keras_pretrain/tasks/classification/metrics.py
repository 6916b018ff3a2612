"""GLUE metrics: plain NumPy functions and streaming Keras metrics.

The NumPy functions give the values of scikit-learn (`accuracy_score`,
`f1_score`, `matthews_corrcoef`) and SciPy (`pearsonr`, `spearmanr`), which
are test-only dependencies. `glue_metrics` returns the numbers the GLUE
leaderboard reports for a task; `glue_keras_metrics` the same as Keras metrics
for `compile(metrics=...)`, named like the keys of `glue_metrics` (monitor
`"val_" + GLUE_METRIC[task]` to keep the best checkpoint).

Every function takes `(predictions, labels)`; all of them are symmetric in
their two arguments.
"""

import keras
import numpy as np
from keras import ops

# task -> (the values GLUE reports, the number of classes; None: regression). The multi-value tasks also
# report "mean", the task's score in the GLUE average. The diagnostic set (ax) is scored with R3, the
# K-class Matthews correlation (Gorodkin, 2004), of a three-class MNLI model (Wang et al., 2018).
GLUE_TASKS = {
    "cola": (("mcc",), 2),
    "sst-2": (("accuracy",), 2),
    "mrpc": (("f1", "accuracy"), 2),
    "qqp": (("f1", "accuracy"), 2),
    "sts-b": (("pearson", "spearman"), None),
    "mnli": (("accuracy",), 3),
    "mnli-mm": (("accuracy",), 3),
    "qnli": (("accuracy",), 2),
    "rte": (("accuracy",), 2),
    "wnli": (("accuracy",), 2),
    "ax": (("mcc",), 3),
}

# task -> the value that selects the best checkpoint: the one each task's column of BERT's Table 1 shows
# (Devlin et al., 2019: "F1 scores are reported for QQP and MRPC, Spearman correlations are reported for
# STS-B, and accuracy scores are reported for the other tasks"; Matthews correlation for CoLA and AX).
GLUE_METRIC = {task: names[0] if task != "sts-b" else "spearman" for task, (names, _) in GLUE_TASKS.items()}


def glue_task(task):
    """The canonical name of a GLUE task: `"STS-B"`, `"stsb"` and `"sts_b"` are `"sts-b"`."""
    key = str(task).lower().replace("_", "").replace("-", "")
    names = {name.replace("-", ""): name for name in GLUE_TASKS}
    names.update({"mnlim": "mnli", "mnlimatched": "mnli", "mnlimismatched": "mnli-mm", "diagnostic": "ax"})
    if key not in names:
        raise ValueError(f"unknown GLUE task {task!r}; expected one of {', '.join(GLUE_TASKS)}")
    return names[key]


# === NumPy ===


def _pair(predictions, labels, dtype=None):
    predictions, labels = np.asarray(predictions, dtype=dtype), np.asarray(labels, dtype=dtype)
    if predictions.ndim == 2 and predictions.shape[1] == 1:
        predictions = predictions[:, 0]
    if predictions.ndim != 1 or predictions.shape != labels.shape:
        raise ValueError(f"expected predictions and labels of the same length, found shapes "
                         f"{predictions.shape} and {labels.shape}")
    if not len(labels):
        raise ValueError("no examples")
    return predictions, labels


def accuracy(predictions, labels):
    """Fraction of predictions equal to their label (`sklearn.metrics.accuracy_score`)."""
    predictions, labels = _pair(predictions, labels)
    return float(np.mean(predictions == labels))


def f1(predictions, labels):
    """Binary F1 of the positive class 1 (`sklearn.metrics.f1_score`); 0 when no label or prediction is 1."""
    predictions, labels = _pair(predictions, labels)
    tp = np.sum((predictions == 1) & (labels == 1))
    wrong = np.sum((predictions == 1) != (labels == 1))
    return float(2 * tp / (2 * tp + wrong)) if tp + wrong else 0.0


def _mcc_from_confusion(confusion):
    """R_K of a [K, K] confusion matrix (rows: labels), in fractions of its total; 0 when undefined."""
    total = np.sum(confusion)
    confusion = confusion / total
    true, predicted = np.sum(confusion, axis=1), np.sum(confusion, axis=0)
    numerator = np.trace(confusion) - np.dot(true, predicted)
    denominator = (1.0 - np.dot(predicted, predicted)) * (1.0 - np.dot(true, true))
    return float(numerator / np.sqrt(denominator)) if denominator > 0 else 0.0


def matthews_corrcoef(predictions, labels):
    """Matthews correlation, K classes (R_K) as `sklearn.metrics.matthews_corrcoef`; 0 when undefined."""
    predictions, labels = _pair(predictions, labels)
    classes, ids = np.unique(np.concatenate([labels, predictions]), return_inverse=True)
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    np.add.at(confusion, (ids[:len(labels)], ids[len(labels):]), 1.0)
    return _mcc_from_confusion(confusion)


def pearson(predictions, labels):
    """Pearson correlation (`scipy.stats.pearsonr`), in float64; NaN when either side is constant."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    x, y = x - np.mean(x), y - np.mean(y)
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    return float(np.clip(np.dot(x, y) / denominator, -1.0, 1.0)) if denominator > 0 else float("nan")


def average_ranks(values):
    """1-based ranks, ties sharing their mean rank (`scipy.stats.rankdata(method="average")`)."""
    values = np.asarray(values)
    ordered = np.sort(values)
    return (np.searchsorted(ordered, values, "left") + np.searchsorted(ordered, values, "right") + 1) / 2.0


def spearman(predictions, labels):
    """Spearman correlation (`scipy.stats.spearmanr`): the Pearson correlation of the average ranks."""
    x, y = _pair(predictions, labels, dtype=np.float64)
    return pearson(average_ranks(x), average_ranks(y))


def glue_metrics(task, predictions, labels):
    """The numbers GLUE reports for `task`, as a dict of floats.

    cola, ax: `{"mcc"}`; sst-2, mnli, mnli-mm, qnli, rte, wnli: `{"accuracy"}`;
    mrpc, qqp: `{"f1", "accuracy", "mean"}`; sts-b: `{"pearson", "spearman",
    "mean"}` ("mean": the task's score in the GLUE average).

    Args:
        task: a GLUE task name (see `glue_task`).
        predictions: classification: integer class ids, indices into the
            task's label list (`keras_pretrain.tasks.classification.glue.TASKS[task].labels`;
            F1 counts class 1 as positive, MRPC's and QQP's label "1").
            sts-b: floats, shape [N] or [N, 1]. Label strings are mapped to
            ids by `keras_pretrain.tasks.classification.submission.read_submission`.
        labels: the gold values, of the same kind.

    Example:
    ```python
    glue_metrics("mrpc", [1, 0, 1, 1], [1, 0, 0, 1])
    # {"f1": 0.8, "accuracy": 0.75, "mean": 0.775}
    ```
    """
    task = glue_task(task)
    names, num_classes = GLUE_TASKS[task]
    if num_classes is not None:
        for side, values in (("predictions", predictions), ("labels", labels)):
            if not np.issubdtype(np.asarray(values).dtype, np.integer):
                raise TypeError(f"{task}: {side} must be integer class ids (indices into the task's label "
                                f"list), found dtype {np.asarray(values).dtype}")
    functions = {"mcc": matthews_corrcoef, "accuracy": accuracy, "f1": f1, "pearson": pearson, "spearman": spearman}
    result = {name: functions[name](predictions, labels) for name in names}
    if len(names) > 1:
        result["mean"] = float(np.mean([result[name] for name in names]))
    return result


# === Keras ===


def _flat(values, dtype):
    return ops.reshape(ops.cast(values, dtype), (-1,))


def _class_ids(y_true, y_pred, num_classes):
    """Integer labels [B] and the argmax of logits [B, C]."""
    if y_pred.shape[-1] is not None and y_pred.shape[-1] != num_classes:
        raise ValueError(f"expected logits [B, {num_classes}], found shape {tuple(y_pred.shape)}")
    return _flat(y_true, "int32"), ops.cast(ops.argmax(y_pred, axis=-1), "int32")


def _weights(sample_weight, like):
    if sample_weight is None:
        return ops.ones_like(like)
    return ops.broadcast_to(_flat(sample_weight, like.dtype), ops.shape(like))


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MatthewsCorrelation(keras.metrics.Metric):
    """Matthews correlation of integer labels and the argmax of logits, streaming.

    A [C, C] confusion matrix of (weighted) counts over all batches; the
    result is the K-class R_K of `sklearn.metrics.matthews_corrcoef` (the
    binary MCC for C = 2), 0 when undefined (one class only).

    Args:
        num_classes: int. The width C of the logits [B, C].
        name: metric name.
        dtype: dtype of the counts.

    Example:
    ```python
    model.compile(loss=..., metrics=[MatthewsCorrelation(num_classes=2)])
    ```
    """

    def __init__(self, num_classes=2, name="mcc", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.num_classes = int(num_classes)
        self._direction = "up"
        self.confusion = self.add_variable(shape=(self.num_classes, self.num_classes), initializer="zeros",
                                           name="confusion")

    def update_state(self, y_true, y_pred, sample_weight=None):
        labels, predicted = _class_ids(y_true, y_pred, self.num_classes)
        rows = ops.one_hot(labels, self.num_classes, dtype=self.dtype)
        rows = rows * ops.expand_dims(_weights(sample_weight, rows[:, 0]), -1)
        columns = ops.one_hot(predicted, self.num_classes, dtype=self.dtype)
        self.confusion.assign_add(ops.matmul(ops.transpose(rows), columns))

    def result(self):
        total = ops.maximum(ops.sum(self.confusion), 1.0)
        confusion = self.confusion / total
        true, predicted = ops.sum(confusion, axis=1), ops.sum(confusion, axis=0)
        numerator = ops.trace(confusion) - ops.sum(true * predicted)
        denominator = (1.0 - ops.sum(predicted * predicted)) * (1.0 - ops.sum(true * true))
        defined = denominator > 0
        return ops.where(defined, numerator / ops.sqrt(ops.where(defined, denominator, 1.0)), 0.0)

    def get_config(self):
        return {"num_classes": self.num_classes, "name": self.name, "dtype": self.dtype}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BinaryF1(keras.metrics.Metric):
    """F1 of the positive class 1 from integer labels and logits [B, C] (argmax), streaming.

    Counts of true positives and of errors (false positives + false
    negatives) over all batches: `sklearn.metrics.f1_score`, 0 when no
    label and no prediction is 1.

    Args:
        name: metric name.
        dtype: dtype of the counts.
    """

    def __init__(self, name="f1", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._direction = "up"
        self.true_positives = self.add_variable(shape=(), initializer="zeros", name="true_positives")
        self.errors = self.add_variable(shape=(), initializer="zeros", name="errors")

    def update_state(self, y_true, y_pred, sample_weight=None):
        if y_pred.shape[-1] == 1:
            raise ValueError(f"expected logits [B, C] with C >= 2 (argmax), found shape {tuple(y_pred.shape)}")
        labels, predicted = _class_ids(y_true, y_pred, y_pred.shape[-1])
        label_one, predicted_one = ops.equal(labels, 1), ops.equal(predicted, 1)
        weights = _weights(sample_weight, ops.cast(labels, self.dtype))
        both = ops.cast(ops.logical_and(label_one, predicted_one), self.dtype)
        self.true_positives.assign_add(ops.sum(weights * both))
        self.errors.assign_add(ops.sum(weights * ops.cast(ops.not_equal(label_one, predicted_one), self.dtype)))

    def result(self):
        denominator = 2.0 * self.true_positives + self.errors
        return ops.where(denominator > 0, 2.0 * self.true_positives / ops.maximum(denominator, 1e-12), 0.0)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class PearsonCorrelation(keras.metrics.Metric):
    """Pearson correlation of all the values seen (streaming), for regression outputs [B] or [B, 1].

    Unlike `keras.metrics.PearsonCorrelation` (the mean of per-batch
    correlations), this is the correlation over the whole dataset. Each
    batch's mean and centred sums of squares and products are merged into
    the running ones (Chan et al., 1979), so that float32 keeps about 6
    significant digits where plain running sums of x, x^2, xy lose them
    to cancellation. NaN while either side is constant (as `scipy.stats.pearsonr`).

    Args:
        name: metric name.
        dtype: dtype of the running moments.
    """

    def __init__(self, name="pearson", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self._direction = "up"
        moments = ("count", "mean_pred", "mean_true", "sum_pp", "sum_tt", "sum_pt")
        for moment in moments:
            setattr(self, moment, self.add_variable(shape=(), initializer="zeros", name=moment))

    def update_state(self, y_true, y_pred, sample_weight=None):
        pred, true = _flat(y_pred, self.dtype), _flat(y_true, self.dtype)
        weights = _weights(sample_weight, pred)
        count = ops.sum(weights)
        mean_pred = ops.sum(weights * pred) / ops.maximum(count, 1e-12)
        mean_true = ops.sum(weights * true) / ops.maximum(count, 1e-12)
        pred, true = pred - mean_pred, true - mean_true
        total = self.count + count
        share = count / ops.maximum(total, 1e-12)  # the batch's part of the merged count
        delta_pred, delta_true = mean_pred - self.mean_pred, mean_true - self.mean_true
        cross = self.count * share  # n_a * n_b / (n_a + n_b)
        self.sum_pp.assign_add(ops.sum(weights * pred * pred) + delta_pred * delta_pred * cross)
        self.sum_tt.assign_add(ops.sum(weights * true * true) + delta_true * delta_true * cross)
        self.sum_pt.assign_add(ops.sum(weights * pred * true) + delta_pred * delta_true * cross)
        self.mean_pred.assign_add(delta_pred * share)
        self.mean_true.assign_add(delta_true * share)
        self.count.assign(total)

    def result(self):
        return _correlation(self.sum_pt, self.sum_pp, self.sum_tt)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}


def _correlation(sum_xy, sum_xx, sum_yy):
    """sum_xy / sqrt(sum_xx sum_yy) clipped to [-1, 1]; NaN when a side has no spread."""
    denominator = sum_xx * sum_yy
    defined = denominator > 0
    value = ops.clip(sum_xy / ops.sqrt(ops.where(defined, denominator, 1.0)), -1.0, 1.0)
    return ops.where(defined, value, float("nan"))


def _average_ranks(values):
    """`average_ranks` in keras.ops: (#smaller + #smaller-or-equal + 1) / 2."""
    ordered = ops.sort(values)
    smaller = ops.searchsorted(ordered, values, side="left")
    not_larger = ops.searchsorted(ordered, values, side="right")
    return ops.cast(smaller + not_larger + 1, values.dtype) / 2.0


@keras.saving.register_keras_serializable(package="keras_pretrain")
class SpearmanCorrelation(keras.metrics.Metric):
    """Exact Spearman correlation of all the values seen, for regression outputs [B] or [B, 1].

    Ranks need every value: they are kept in fixed-size buffers of
    `capacity` entries (a counter says how many are filled; each batch is
    written after the last one with a `where` over the buffer, so the
    update is jit-compiled on every backend, O(capacity) per batch). The
    result ranks the filled entries with ties sharing their mean rank
    (sort + searchsorted) and is the Pearson correlation of the ranks, as
    `scipy.stats.spearmanr`; it sorts the buffers, O(capacity log capacity),
    at every step Keras logs metrics. Values must be finite. More than `capacity`
    values since the last `reset_state()` make the result NaN (in `fit` the
    training metric counts a whole epoch: use a capacity of at least the
    training set, or pass it to `compile` for evaluation only).

    Args:
        capacity: int. The most values one evaluation holds (8192: every
            GLUE STS-B split; 2 x 4 bytes of buffers each).
        name: metric name.
        dtype: dtype of the stored values.
    """

    def __init__(self, capacity=8192, name="spearman", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.capacity = int(capacity)
        self._direction = "up"
        self.count = self.add_variable(shape=(), initializer="zeros", dtype="int32", name="count")
        self.pred = self.add_variable(shape=(self.capacity,), initializer="zeros", name="pred")
        self.true = self.add_variable(shape=(self.capacity,), initializer="zeros", name="true")
        self.kept = self.add_variable(shape=(self.capacity,), initializer="zeros", name="kept")

    def update_state(self, y_true, y_pred, sample_weight=None):
        """Appends the batch; a `sample_weight` of 0 leaves an example out (any other counts it once)."""
        pred, true = _flat(y_pred, self.dtype), _flat(y_true, self.dtype)
        kept = ops.cast(ops.not_equal(_weights(sample_weight, pred), 0), self.dtype)
        size = ops.shape(pred)[0]
        offset = ops.arange(self.capacity, dtype="int32") - self.count  # buffer slot -> batch position
        inside = ops.logical_and(offset >= 0, offset < size)
        source = ops.minimum(ops.maximum(offset, 0), ops.maximum(size - 1, 0))
        for buffer, values in ((self.pred, pred), (self.true, true), (self.kept, kept)):
            buffer.assign(ops.where(inside, ops.take(values, source), buffer.value))
        self.count.assign_add(ops.cast(size, "int32"))

    def result(self):
        kept = ops.greater(self.kept, 0)
        far = float("inf")
        ranks = [_average_ranks(ops.where(kept, values, far)) for values in (self.pred.value, self.true.value)]
        mean = (ops.sum(ops.cast(kept, self.dtype)) + 1.0) / 2.0  # of the ranks 1..n of the kept values
        pred, true = (ops.where(kept, r - mean, 0.0) for r in ranks)
        value = _correlation(ops.sum(pred * true), ops.sum(pred * pred), ops.sum(true * true))
        return ops.where(ops.greater(self.count, self.capacity), float("nan"), value)

    def get_config(self):
        return {"capacity": self.capacity, "name": self.name, "dtype": self.dtype}


def glue_keras_metrics(task, spearman_capacity=8192):
    """Keras metrics of a GLUE task for `compile(metrics=...)`, named as the keys of `glue_metrics`.

    Classification models give logits [B, C] and take integer labels; STS-B
    models give scores [B] or [B, 1]. No "mean" (Keras compiles no metric of
    metrics): take it from the logs if needed.

    Args:
        task: a GLUE task name (see `glue_task`).
        spearman_capacity: int. STS-B: `SpearmanCorrelation`'s capacity.

    Example:
    ```python
    classifier.compile(metrics=glue_keras_metrics("cola"))
    classifier.fit(train, validation_data=dev, callbacks=[keras.callbacks.ModelCheckpoint(
        "best.keras", monitor="val_" + GLUE_METRIC["cola"], mode="max", save_best_only=True)])
    ```
    """
    names, num_classes = GLUE_TASKS[glue_task(task)]
    factories = {
        "mcc": lambda: MatthewsCorrelation(num_classes=num_classes, name="mcc"),
        "accuracy": lambda: keras.metrics.SparseCategoricalAccuracy(name="accuracy"),
        "f1": lambda: BinaryF1(name="f1"),
        "pearson": lambda: PearsonCorrelation(name="pearson"),
        "spearman": lambda: SpearmanCorrelation(capacity=spearman_capacity, name="spearman"),
    }
    return [factories[name]() for name in names]
