"""The labelled data of a fine-tuning run: a table, a GLUE task folder, SWAG or RACE, read and checked.

Every reader returns a `TaskData`: the problem type, the label names, and the train / validation / test
examples. Sentence tasks give `keras_pretrain.tasks.classification.glue.Example`s (`text_a`, `text_b`,
`label`), multiple choice `keras_pretrain.tasks.multiple_choice.data.ChoiceExample`s. Bad input raises
`keras_pretrain.errors.TaskDataError`: one line naming the file, the line and the problem, its `argument` the
input concerned (`data`, `validation_data`, `data_dir`).

Tables (a header line; `.tsv` / `.txt` read tab-separated with no quoting, as the GLUE processors read theirs,
so a quote never swallows lines; `.csv` comma-separated with CSV quoting):

- `classify`: `label, text`; `pair`: `label, text_a, text_b` (single-label classification);
- `regression`: `label` (a number), and `text` or `text_a, text_b`;
- `multi-label`: `labels` (names joined by `,`; empty for none), and `text` or `text_a, text_b`.
"""

import csv
import dataclasses
import math
import os
from typing import List
from typing import Optional

from keras_pretrain.errors import CorpusFormatError
from keras_pretrain.errors import TaskDataError
from keras_pretrain.tasks.classification import glue
from keras_pretrain.tasks.multiple_choice import data as choice

SINGLE, REGRESSION, MULTI, CHOICE = ("single_label_classification", "regression",
                                     "multi_label_classification", "multiple_choice")
TABLE_TASKS = {"classify": SINGLE, "pair": SINGLE, "regression": REGRESSION, "multi-label": MULTI}
CHOICE_TASKS = ("swag", "race")
GLUE_TASKS = tuple(name for name in glue.TASKS if name != "ax")  # AX: scored with an MNLI model
TASKS = tuple(TABLE_TASKS) + GLUE_TASKS + CHOICE_TASKS
LABEL_SEPARATOR = ","


@dataclasses.dataclass
class TaskData:
    """What a fine-tuning run trains on.

    Attributes:
        task: the task name (a table task, a GLUE task, swag or race).
        problem_type: SINGLE, REGRESSION, MULTI or CHOICE.
        labels: label names (index = class id) for the classification tasks, else None.
        train, valid: the examples; `valid` None: to be held out from `train` (`split_validation`).
        test: unlabelled examples to predict (a GLUE test split), or None.
        pair: sentence tasks: whether examples have a `text_b`.
        sources: the files read, for the printed summary.
    """

    task: str
    problem_type: str
    labels: Optional[List[str]]
    train: list
    valid: Optional[list] = None
    test: Optional[list] = None
    pair: bool = False
    sources: tuple = ()

    @property
    def glue_task(self):
        return self.task if self.task in glue.TASKS else None


def is_number(text):
    try:
        return math.isfinite(float(text))
    except (TypeError, ValueError):
        return False


def read_rows(path, argument="data"):
    """(header, [(line number, row dict)]) of a table; `TaskDataError` on a missing, non-UTF-8, ragged or empty
    file, and on a row that spans lines (a `.csv` quote left open swallows the lines after it: the row is named
    by the line where it starts). A row's number is the line it starts on."""
    if not os.path.isfile(path):
        raise TaskDataError(f"no such file {path!r}", argument)
    tab = path.endswith((".tsv", ".txt"))
    lines, end = [], 0
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t" if tab else ",", quoting=csv.QUOTE_NONE if tab else csv.QUOTE_MINIMAL)
            for row in reader:
                start, end = end + 1, reader.line_num
                lines.append((start, end, row))
    except UnicodeDecodeError as e:
        raise TaskDataError(f"{path} is not UTF-8 ({e})", argument) from None
    except csv.Error as e:
        raise TaskDataError(f"{path} line {end + 1}: {e}", argument) from None
    lines = [(start, end, row) for start, end, row in lines if row]  # blank lines
    if len(lines) < 2:
        raise TaskDataError(f"{path} holds no rows under its header", argument)
    (_, _, header), rows = lines[0], []
    for start, end, row in lines[1:]:
        if end > start or any("\n" in cell or "\r" in cell for cell in row):
            raise TaskDataError(f"{path} line {start}: a quoted field runs from this line to line {end} "
                                f"({end - start + 1} lines read as one row); close the quote, or use a .tsv (read "
                                "without quoting)", argument)
        if len(row) != len(header):
            raise TaskDataError(f"{path} line {start}: {len(row)} fields, the header has {len(header)} ({header})",
                                argument)
        rows.append((start, dict(zip(header, row))))
    return header, rows


def text_columns(path, header, task, argument="data"):
    """(label column, text columns) of a table task: ("label" or "labels", ["text"] or ["text_a", "text_b"])."""
    wanted = {"classify": [["text"]], "pair": [["text_a", "text_b"]]}.get(task, [["text_a", "text_b"], ["text"]])
    label = "labels" if TABLE_TASKS[task] == MULTI else "label"
    for columns in wanted:
        if label in header and all(c in header for c in columns):
            return label, columns
    options = " or ".join(str([label] + c) for c in wanted)
    raise TaskDataError(f"{path} lacks column(s) of --task {task}: needs {options}; found {header}", argument)


def read_table(path, task, argument="data"):
    """The `Example`s of a table of `task` (see the module docstring)."""
    header, rows = read_rows(path, argument)
    label_column, columns = text_columns(path, header, task, argument)
    examples = []
    for number, row in rows:
        texts = [row[c] for c in columns]
        if any(not t.strip() for t in texts):
            raise TaskDataError(f"{path} line {number}: empty text", argument)
        label = row[label_column].strip()
        if TABLE_TASKS[task] == REGRESSION:
            if not is_number(label):
                raise TaskDataError(f"{path} line {number}: label {label!r} is not a number (--task regression)",
                                    argument)
            label = float(label)
        elif TABLE_TASKS[task] == MULTI:
            label = tuple(sorted({x.strip() for x in label.split(LABEL_SEPARATOR) if x.strip()}))
        elif not label:
            raise TaskDataError(f"{path} line {number}: empty label", argument)
        examples.append(glue.Example(guid=str(number), text_a=texts[0], text_b=texts[1] if len(texts) > 1 else None,
                                     label=label))
    return examples


def is_class_id(text):
    """An integer written as one ("-1", "0", "7"; not "7.0" or "1e3")."""
    return text.isascii() and text.lstrip("-").isdigit() and text.count("-") <= 1


def check_classification_labels(path, examples, task, argument="data"):
    """Numeric labels that are not class ids, or a single label, under a classification task raise (never a
    silent classifier with one class per score). Numbers are class ids only when written as integers forming a
    run -1.., 0.. or 1.. with none missing (0/1, 1..5 stars); anything else ("2.5", "3.0", 183 prices) is a
    score: `--task regression`."""
    first = {}  # label -> the line it first occurs on
    for example in examples:
        first.setdefault(example.label, example.guid)
    labels = sorted(first)
    if len(labels) < 2:
        raise TaskDataError(f"{path}: every row has the label {next(iter(labels), '')!r}; a classifier needs "
                            "two labels or more", argument)
    if not all(is_number(x) for x in labels):
        return
    scores = [x for x in labels if not is_class_id(x)]
    if scores:
        example = min(scores, key=lambda x: int(first[x]))
        raise TaskDataError(f"{path} line {first[example]}: the labels are numbers ({example!r}, not an integer "
                            f"class id): use --task regression for a score, or class names / integer ids for --task "
                            f"{task}", argument)
    values = sorted(int(x) for x in labels)
    if values[0] not in (-1, 0, 1) or values[-1] - values[0] + 1 != len(values) or len(values) != len(labels):
        example = max(labels, key=lambda x: (int(x), -int(first[x])))
        raise TaskDataError(f"{path} line {first[example]}: the labels are {len(labels)} distinct numbers from "
                            f"{values[0]} to {values[-1]} ({example!r}, ...), not the class ids 0..{len(labels) - 1} "
                            f"or 1..{len(labels)}: use --task regression for a score, or class names / ids for "
                            f"--task {task}", argument)


def check_scores(path, examples, argument="data"):
    """Regression: scores that never vary leave nothing to learn (and no correlation to report)."""
    if len({e.label for e in examples}) < 2:
        raise TaskDataError(f"{path}: every row has the score {examples[0].label:g}; --task regression needs "
                            "scores that vary", argument)


def check_multi_labels(path, examples, argument="data"):
    """Multi-label: rows that all have the same label set leave nothing to learn."""
    if len({e.label for e in examples}) < 2:
        raise TaskDataError(f"{path}: every row has the labels {','.join(examples[0].label)!r}; a multi-label "
                            "classifier needs rows whose labels differ", argument)


def split_validation(data, seed, fraction):
    """Holds `fraction` of the training examples out for validation when no validation set is given (a seeded
    permutation; done when the table is read, so that a label falling only in the held-out rows is caught)."""
    import numpy as np

    if data.valid is not None:
        return
    order = np.random.default_rng(seed).permutation(len(data.train))
    split = max(1, int(len(data.train) * fraction))
    data.valid = [data.train[i] for i in order[:split]]
    data.train = [data.train[i] for i in order[split:]]


def label_names(data, path, valid_path=None, held_out=""):
    """The sorted label names of the training examples; validation labels must be among them (`valid_path`: the
    validation table; None: held out from `path`, `held_out` says how)."""
    if data.problem_type == MULTI:
        names = sorted({x for e in data.train for x in e.label})
        if not names:
            raise TaskDataError(f"{path}: no row has a label", "data")
    else:
        names = sorted({e.label for e in data.train})
    for example in data.valid or []:
        unknown = set(example.label if data.problem_type == MULTI else [example.label]) - set(names)
        if unknown and valid_path:
            raise TaskDataError(f"{valid_path} line {example.guid}: label(s) {sorted(unknown)} never occur in the "
                                f"training data {path} (labels {names})", "validation_data")
        if unknown:
            raise TaskDataError(f"{path} line {example.guid}: label(s) {sorted(unknown)} fall only in the held-out "
                                f"validation rows ({held_out}): the classifier would never train on them; add rows "
                                "with them or give --validation-data", "data")
    return names


def read_table_task(task, path, validation_path=None, validation_fraction=0.2, seed=0):
    """The `TaskData` of a table task: `path`'s rows, checked; validation rows from `validation_path`, else
    `validation_fraction` of them held out (seeded), so that a label falling only there is caught."""
    train = read_table(path, task)
    valid = read_table(validation_path, task, "validation_data") if validation_path else None
    data = TaskData(task, TABLE_TASKS[task], None, train, valid, pair=train[0].text_b is not None,
                    sources=(path,) + ((validation_path,) if valid else ()))
    if data.problem_type == SINGLE:
        check_classification_labels(path, train, task)
    elif data.problem_type == REGRESSION:
        check_scores(path, train)
    else:
        check_multi_labels(path, train)
    held_out = ""
    if valid is None:  # held out here, so that a label falling only in the held-out rows is caught
        split_validation(data, seed, validation_fraction)
        held_out = f"--validation-fraction {validation_fraction:g}, --seed {seed}"
    if data.problem_type in (SINGLE, MULTI):
        data.labels = label_names(data, path, validation_path, held_out)
    return data


def read_glue_task(task, data_dir):
    """A GLUE task folder: train, dev (MNLI: matched; `mnli-mm` mismatched) and, when present, test."""
    task = glue.get_task(task)
    try:
        paths = {split: glue.split_path(task, data_dir, split) for split in ("train", "dev")}
        train = glue.read_file(task, paths["train"], "train")
        valid = glue.read_file(task, paths["dev"], "dev")
        glue.check_labels(task, train, paths["train"], [(valid, paths["dev"])])
        test = None
        try:
            test_path = glue.split_path(task, data_dir, "test")
        except CorpusFormatError:  # no test split: nothing to predict
            test_path = None
        if test_path:
            test = glue.read_file(task, test_path, "test")
    except CorpusFormatError as e:
        raise TaskDataError(str(e), "data_dir") from e
    problem = REGRESSION if task.is_regression else SINGLE
    return TaskData(task.name, problem, None if task.is_regression else list(task.labels), train, valid, test,
                    pair=train[0].text_b is not None, sources=(data_dir,))


def read_choice_task(task, data_dir):
    """SWAG (`train.csv`, `val.csv`, `test.csv`) or RACE (`train/`, `dev/`, `test/` of `high/`, `middle/`)."""
    try:
        if task == "swag":
            paths = [os.path.join(data_dir, name) for name in ("train.csv", "val.csv")]
            train, valid = (choice.read_swag(path) for path in paths)
        else:
            paths = [os.path.join(data_dir, split) for split in ("train", "dev")]
            train, valid = choice.read_race(data_dir, "train"), choice.read_race(data_dir, "dev")
    except CorpusFormatError as e:
        raise TaskDataError(str(e), "data_dir") from e
    for examples, path in zip((train, valid), paths):
        if any(e.label is None for e in examples):
            raise TaskDataError(f"{path}: no label column (an unlabelled test file?); training and validation need "
                                "the answer of every question", "data_dir")
    answers = {e.label for e in train}
    if len(answers) < 2:
        raise TaskDataError(f"{paths[0]}: every question's answer is choice {next(iter(answers))}; a model would "
                            "learn the position, not the task (labels of a placeholder file?)", "data_dir")
    return TaskData(task, CHOICE, None, train, valid, sources=(data_dir,))


def read_task(task, data=None, validation_data=None, data_dir=None, validation_fraction=0.2, seed=0):
    """The `TaskData` of `task`: a table task reads the table `data` (and `validation_data`), the others the task
    folder `data_dir` (see the module docstring)."""
    if task in TABLE_TASKS:
        return read_table_task(task, data, validation_data, validation_fraction, seed)
    if data_dir is None:
        raise ValueError(f"task {task!r} reads a task folder: data_dir is needed")
    if not os.path.isdir(data_dir):
        raise TaskDataError(f"no such folder {data_dir!r}", "data_dir")
    if task in CHOICE_TASKS:
        return read_choice_task(task, data_dir)
    return read_glue_task(task, data_dir)


def label_array(data, examples):
    """The training targets of `examples`: class ids, scores, multi-hot rows, or choice indices."""
    import numpy as np

    if data.problem_type == REGRESSION:
        return np.array([e.label for e in examples], "float32")
    if data.problem_type == MULTI:
        index = {name: i for i, name in enumerate(data.labels)}
        rows = np.zeros((len(examples), len(data.labels)), "float32")
        for row, example in zip(rows, examples):
            row[[index[x] for x in example.label]] = 1.0
        return rows
    if data.problem_type == CHOICE:
        return np.array([e.label for e in examples], "int32")
    return np.array([data.labels.index(e.label) for e in examples], "int32")
