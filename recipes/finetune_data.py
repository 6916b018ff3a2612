"""The labelled data of `recipes.finetune`: a table, a GLUE task folder, SWAG or RACE.

Every reader returns a `TaskData`: the problem type, the label names, and the train / validation / test
examples. Sentence tasks give `keras_pretrain.data.glue.Example`s (`text_a`, `text_b`, `label`), multiple
choice `keras_pretrain.data.choice.ChoiceExample`s. Bad input stops with exit 2 and one line naming the
file, the line and the problem (`parser.error`).

Tables (`--data FILE`, a header line; `.tsv` / `.txt` read tab-separated with no quoting, as the GLUE
processors read theirs, so a quote never swallows lines; `.csv` comma-separated with CSV quoting):

- `classify`: `label, text`; `pair`: `label, text_a, text_b` (single-label classification);
- `regression`: `label` (a number), and `text` or `text_a, text_b`;
- `multi-label`: `labels` (names joined by `,`; empty for none), and `text` or `text_a, text_b`.
"""

import csv
import dataclasses
import math
import os
from typing import List, Optional

from keras_pretrain.data import choice
from keras_pretrain.data import glue
from keras_pretrain.errors import CorpusFormatError

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
        task: the `--task` name.
        problem_type: SINGLE, REGRESSION, MULTI or CHOICE.
        labels: label names (index = class id) for the classification tasks, else None.
        train, valid: the examples; `valid` None: held out from `train` by `--validation-fraction`.
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


def read_rows(parser, path, flag="--data"):
    """(header, [(line number, row dict)]) of a table; exits 2 on a missing, non-UTF-8, ragged or empty file."""
    if not os.path.isfile(path):
        parser.error(f"{flag}: no such file {path!r}")
    tab = path.endswith((".tsv", ".txt"))
    try:
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter="\t" if tab else ",", quoting=csv.QUOTE_NONE if tab else csv.QUOTE_MINIMAL)
            lines = [(reader.line_num, row) for row in reader]
    except UnicodeDecodeError as e:
        parser.error(f"{flag}: {path} is not UTF-8 ({e})")
    except csv.Error as e:
        parser.error(f"{flag}: {path}: {e}")
    lines = [(n, row) for n, row in lines if row]  # blank lines
    if len(lines) < 2:
        parser.error(f"{flag}: {path} holds no rows under its header")
    (_, header), rows = lines[0], []
    for number, row in lines[1:]:
        if len(row) != len(header):
            parser.error(f"{flag}: {path} line {number}: {len(row)} fields, the header has {len(header)} "
                         f"({header})" + ("; a quote may have swallowed lines" if "\n" in "".join(row) else ""))
        if any("\n" in cell or "\r" in cell for cell in row):
            parser.error(f"{flag}: {path} line {number}: a quoted field spans lines")
        rows.append((number, dict(zip(header, row))))
    return header, rows


def text_columns(parser, path, header, task, flag="--data"):
    """The text columns of a table task: ["text"] or ["text_a", "text_b"]."""
    wanted = {"classify": [["text"]], "pair": [["text_a", "text_b"]]}.get(task, [["text_a", "text_b"], ["text"]])
    label = "labels" if TABLE_TASKS[task] == MULTI else "label"
    for columns in wanted:
        if label in header and all(c in header for c in columns):
            return label, columns
    options = " or ".join(str([label] + c) for c in wanted)
    parser.error(f"{flag}: {path} lacks column(s) of --task {task}: needs {options}; found {header}")


def read_table(parser, path, task, flag="--data"):
    """The `Example`s of a table of `task` (see the module docstring)."""
    header, rows = read_rows(parser, path, flag)
    label_column, columns = text_columns(parser, path, header, task, flag)
    examples = []
    for number, row in rows:
        texts = [row[c] for c in columns]
        if any(not t.strip() for t in texts):
            parser.error(f"{flag}: {path} line {number}: empty text")
        label = row[label_column].strip()
        if TABLE_TASKS[task] == REGRESSION:
            if not is_number(label):
                parser.error(f"{flag}: {path} line {number}: label {label!r} is not a number (--task regression)")
            label = float(label)
        elif TABLE_TASKS[task] == MULTI:
            label = tuple(sorted({x.strip() for x in label.split(LABEL_SEPARATOR) if x.strip()}))
        elif not label:
            parser.error(f"{flag}: {path} line {number}: empty label")
        examples.append(glue.Example(guid=str(number), text_a=texts[0], text_b=texts[1] if len(texts) > 1 else None,
                                     label=label))
    return examples


def check_classification_labels(parser, path, examples, task):
    """Float labels, or a single label, under a classification task stop the run (never a silent classifier)."""
    labels = {e.label for e in examples}
    if all(is_number(x) for x in labels) and any(float(x) != int(float(x)) for x in labels):
        example = next(x for x in sorted(labels) if float(x) != int(float(x)))
        parser.error(f"--data: {path}: the labels are numbers ({example!r}, ...): use --task regression for a "
                     f"score, or integer class labels for --task {task}")
    if len(labels) < 2:
        parser.error(f"--data: {path}: every row has the label {next(iter(labels), '')!r}; a classifier needs "
                     "two labels or more")


def label_names(parser, data, path):
    """The sorted label names of the training examples; validation labels must be among them."""
    if data.problem_type == MULTI:
        names = sorted({x for e in data.train for x in e.label})
        if not names:
            parser.error(f"--data: {path}: no row has a label")
    else:
        names = sorted({e.label for e in data.train})
    for example in data.valid or []:
        unknown = set(example.label if data.problem_type == MULTI else [example.label]) - set(names)
        if unknown:
            parser.error(f"--validation-data: line {example.guid}: label(s) {sorted(unknown)} never occur in the "
                         f"training data (labels {names})")
    return names


def read_table_task(parser, args):
    path = args.data
    train = read_table(parser, path, args.task)
    valid = read_table(parser, args.validation_data, args.task, "--validation-data") if args.validation_data else None
    data = TaskData(args.task, TABLE_TASKS[args.task], None, train, valid, pair=train[0].text_b is not None,
                    sources=(path,) + ((args.validation_data,) if valid else ()))
    if data.problem_type == SINGLE:
        check_classification_labels(parser, path, train, args.task)
    if data.problem_type in (SINGLE, MULTI):
        data.labels = label_names(parser, data, path)
    return data


def read_glue_task(parser, args):
    """A GLUE task folder: train, dev (MNLI: matched; `mnli-mm` mismatched) and, when present, test."""
    task = glue.get_task(args.task)
    try:
        train = glue.read_split(task, args.data_dir, "train")
        valid = glue.read_split(task, args.data_dir, "dev")
        test = None
        if os.path.exists(glue.split_path(task, args.data_dir, "test")):
            test = glue.read_split(task, args.data_dir, "test")
    except CorpusFormatError as e:
        parser.error(f"--data-dir: {e}")
    problem = REGRESSION if task.is_regression else SINGLE
    return TaskData(task.name, problem, None if task.is_regression else list(task.labels), train, valid, test,
                    pair=train[0].text_b is not None, sources=(args.data_dir,))


def read_choice_task(parser, args):
    """SWAG (`train.csv`, `val.csv`, `test.csv`) or RACE (`train/`, `dev/`, `test/` of `high/`, `middle/`)."""
    try:
        if args.task == "swag":
            path = lambda name: os.path.join(args.data_dir, name)  # noqa: E731
            train, valid = choice.read_swag(path("train.csv")), choice.read_swag(path("val.csv"))
        else:
            train, valid = choice.read_race(args.data_dir, "train"), choice.read_race(args.data_dir, "dev")
    except CorpusFormatError as e:
        parser.error(f"--data-dir: {e}")
    return TaskData(args.task, CHOICE, None, train, valid, sources=(args.data_dir,))


def read_task(parser, args):
    """The `TaskData` of `--task` (see the module docstring)."""
    if args.task in TABLE_TASKS:
        return read_table_task(parser, args)
    if not args.data_dir:
        parser.error(f"--task {args.task} reads a task folder: give --data-dir")
    if not os.path.isdir(args.data_dir):
        parser.error(f"--data-dir: no such folder {args.data_dir!r}")
    if args.task in CHOICE_TASKS:
        return read_choice_task(parser, args)
    return read_glue_task(parser, args)


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
