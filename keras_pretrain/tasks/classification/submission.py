"""GLUE submission files: `index<TAB>prediction`, one row per example in file order.

The format the GLUE server takes (one file per task, e.g. `MRPC.tsv`): a
header line `index\\tprediction`, then row i (0-based) holds example i's
prediction as one of the task's label strings (`entailment`, `0` / `1`) or,
for STS-B, a float. `recipes.evaluate` scores such a file against a dev set.

Example:
```python
write_submission("MRPC.tsv", [1, 0, 1], "mrpc")        # class ids -> "1", "0", "1"
read_submission("MRPC.tsv", "mrpc")                     # array([1, 0, 1])
```
"""

import numpy as np

from keras_pretrain.tasks.classification.glue import check_value
from keras_pretrain.tasks.classification.glue import get_task
from keras_pretrain.errors import CorpusFormatError

HEADER = ("index", "prediction")


def write_submission(path, predictions, task):
    """Writes `predictions` of `task` as a GLUE submission file.

    Args:
        path: str, the .tsv file to write.
        predictions: classification: class ids [N] (indices into
            `TASKS[task].labels`) or logits [N, C] (their argmax); STS-B:
            scores [N] or [N, 1], written exactly (shortest round-trip repr).
        task: a GLUE task name or `GlueTask`.
    """
    task = get_task(task)
    predictions = np.asarray(predictions)
    if task.is_regression:
        values = [repr(float(x)) for x in predictions.reshape(-1)]
    else:
        if predictions.ndim == 2:
            predictions = np.argmax(predictions, axis=-1)
        if not np.issubdtype(predictions.dtype, np.integer) or predictions.ndim != 1:
            raise ValueError(f"{task.name}: expected class ids [N] or logits [N, C], found "
                             f"{predictions.dtype} of shape {predictions.shape}")
        if predictions.size and (predictions.min() < 0 or predictions.max() >= len(task.labels)):
            raise ValueError(f"{task.name}: class ids must be in [0, {len(task.labels)}), found "
                             f"{predictions.min()}..{predictions.max()}")
        values = [task.labels[i] for i in predictions]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\t".join(HEADER) + "\n")
        f.writelines(f"{i}\t{value}\n" for i, value in enumerate(values))


def read_submission(path, task=None):
    """The predictions of a GLUE submission file, in row order.

    Args:
        path: str, the .tsv file.
        task: optional GLUE task name or `GlueTask`. Given, label strings
            become class ids (an int array) and STS-B predictions floats.

    Returns:
        A list of the prediction strings (no `task`), or a NumPy array.

    Raises:
        CorpusFormatError: the file is missing or not UTF-8, the header is not
            `index\\tprediction`, a row has not 2 columns or its index is not
            its row number, or (with `task`) a prediction is not one of the
            task's labels or, for STS-B, not a finite number.
    """
    task = None if task is None else get_task(task)
    try:
        with open(path, encoding="utf-8", newline="") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        raise CorpusFormatError(f"{path}: no such file") from None
    except UnicodeDecodeError as e:
        raise CorpusFormatError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or tuple(lines[0].rstrip("\r").split("\t")) != HEADER:
        found = repr(lines[0]) if lines else "an empty file"
        raise CorpusFormatError(f"{path}, line 1: expected the header 'index\\tprediction', found {found}")
    predictions = []
    for number, line in enumerate(lines[1:], 2):
        row = line.rstrip("\r").split("\t")
        if len(row) != 2:
            raise CorpusFormatError(f"{path}, line {number}: expected 2 tab-separated columns "
                                    f"(index, prediction), found {len(row)}: {line!r}")
        if row[0].strip() != str(number - 2):
            raise CorpusFormatError(f"{path}, line {number}: expected index {number - 2}, found {row[0]!r} "
                                    "(one row per example, in file order)")
        predictions.append(row[1] if task is None else _value(task, row[1], path, number))
    if task is None:
        return predictions
    return np.asarray(predictions, dtype=np.float64 if task.is_regression else np.int64)


def _value(task, text, path, number):
    value = check_value(task, text, path, number, "prediction")
    return value if task.is_regression else task.labels.index(value)
