"""GLUE task readers: the examples of the authors' processors, from the GLUE download layout.

The reference is the processors of google-research/albert's `classifier_utils.py` (all GLUE tasks) and
bert's `run_classifier.py` (CoLA, MRPC, MNLI): which file holds a split, which files have a header
(CoLA's train and dev have none, its test has one), which column is `text_a` / `text_b` / the label,
the label lists in the authors' order, STS-B's float scores, the placeholder label of the test splits
and the QQP rows (broken by a newline inside a question) that the originals skip. Files are read as
theirs: UTF-8, lines split at "\\n" only, `csv.reader(delimiter="\\t", quoting=csv.QUOTE_NONE)` (a quote
never swallows lines).

Texts are returned raw. ALBERT's processors pass them through `tokenization.preprocess_text` (whitespace
runs collapsed, NFKD, accents removed, lower-cased when uncased) for SentencePiece models and through
`convert_to_unicode` (no change on Python 3) otherwise; our ALBERT tokenizer does that same
preprocessing itself, so the ids, and so the features (`features`), are equal.
Guids are ALBERT's ("we will rely on this guid for GLUE submission"): the file's index column, or
"<split>-<row>" where the file has none (BERT writes "<split>-<index>" for MNLI and "test-<row>" for the
CoLA and MRPC test sets; guids do not enter the features).

Example:
```python
task = TASKS["mrpc"]
examples = read_split(task, "glue_data/MRPC", "train")
examples[0]  # Example(guid='train-1', text_a='Amrozi accused ...', text_b='Referring to him ...', label='1')
```
"""

import csv
import dataclasses
import math
import os
import types
from typing import Mapping, Optional, Tuple, Union

from keras_pretrain.errors import CorpusFormatError

LABEL_LAST = -1  # `line[-1]`: the authors' label column for MNLI, STS-B, QNLI, RTE and WNLI


@dataclasses.dataclass(frozen=True)
class Example:
    """One GLUE example, as the authors' `InputExample`.

    Attributes:
        guid: str, the example's id (see the module docstring).
        text_a: str, the first (or only) text, raw.
        text_b: str or None, the second text of a pair task.
        label: str (one of the task's labels), float (STS-B), or the placeholder label for test splits.
        line: int or None, the example's line in its file (for error messages; not compared, not shown).
    """

    guid: str
    text_a: str
    text_b: Optional[str] = None
    label: Union[str, float, None] = None
    line: Optional[int] = dataclasses.field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class Columns:
    """Where one kind of split (train and dev, or test) keeps its fields: the processor's rules.

    Attributes:
        text_a: int, the column of the first text.
        text_b: int or None, the column of the second text (None: a single-text task).
        label: int or None, the label's column (-1: the last one); None: the task's placeholder label.
        guid: int or None, the id's column; None: "<split>-<row index>" (the header counted, as theirs).
        header: bool, the first row is a header.
        skip_short: bool, rows with too few columns are skipped (QQP), not an error.
    """

    text_a: int
    text_b: Optional[int] = None
    label: Optional[int] = None
    guid: Optional[int] = 0
    header: bool = True
    skip_short: bool = False

    @property
    def min_columns(self):
        """Columns a row needs; a label read from the last column comes after every text column."""
        used = [c for c in (self.text_a, self.text_b, self.guid, self.label) if c is not None and c >= 0]
        return max(used) + (2 if self.label == LABEL_LAST else 1)


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """A GLUE task: its files, columns and labels.

    Attributes:
        name: str, e.g. "mrpc", "sts-b", "mnli-mm".
        labels: tuple of str in the authors' order (label id = index), or None (STS-B: regression).
        is_regression: bool.
        splits: mapping split name -> file name in the task folder.
        metrics: tuple of metric names, as `keras_pretrain.tasks.classification.metrics.GLUE_TASKS`.
        folder: str, the task folder's name in the GLUE download ("MRPC", "STS-B", "diagnostic").
        columns: `Columns` of the train and dev files.
        test_columns: `Columns` of the test files.
        other_files: mapping file name -> other names it goes by (the diagnostic set's "AX.tsv").
    """

    name: str
    labels: Optional[Tuple[str, ...]]
    is_regression: bool
    splits: Mapping[str, str] = dataclasses.field(hash=False)
    metrics: Tuple[str, ...]
    folder: str
    columns: Columns
    test_columns: Columns
    other_files: Mapping[str, Tuple[str, ...]] = dataclasses.field(default_factory=dict, hash=False)

    @property
    def placeholder(self):
        """The label the processors give test examples: the first label (0.0 for STS-B)."""
        return 0.0 if self.is_regression else self.labels[0]

    def columns_of(self, split):
        """The `Columns` of `split` (the test rules for "test", "test_matched", ...)."""
        return self.test_columns if split.startswith("test") else self.columns


def _task(name, labels, splits, metrics, folder, columns, test_columns, **kwargs):
    return GlueTask(name=name, labels=labels, is_regression=labels is None,
                    splits=types.MappingProxyType(splits), metrics=metrics, folder=folder,
                    columns=columns, test_columns=test_columns, **kwargs)


_BINARY = ("0", "1")
_NLI = ("contradiction", "entailment", "neutral")
_ENTAILMENT = ("entailment", "not_entailment")
_FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
_MNLI_FILES = {split: f"{split}.tsv" for split in
               ("dev_matched", "dev_mismatched", "test_matched", "test_mismatched")}
# The pair tasks with `index, text_a, text_b, ..., label` rows (QNLI, RTE, WNLI; AX without label).
_INDEXED_PAIR = dict(columns=Columns(text_a=1, text_b=2, label=LABEL_LAST),
                     test_columns=Columns(text_a=1, text_b=2))
_MNLI_COLUMNS = dict(columns=Columns(text_a=8, text_b=9, label=LABEL_LAST),
                     test_columns=Columns(text_a=8, text_b=9))

TASKS = {task.name: task for task in (
    _task("cola", _BINARY, _FILES, ("mcc",), "CoLA",
          Columns(text_a=3, label=1, guid=None, header=False), Columns(text_a=1)),
    _task("sst-2", _BINARY, _FILES, ("accuracy",), "SST-2",
          Columns(text_a=0, label=1, guid=None), Columns(text_a=1)),
    _task("mrpc", _BINARY, _FILES, ("f1", "accuracy"), "MRPC",
          Columns(text_a=3, text_b=4, label=0, guid=None), Columns(text_a=3, text_b=4)),
    _task("sts-b", None, _FILES, ("pearson", "spearman"), "STS-B",
          Columns(text_a=7, text_b=8, label=LABEL_LAST), Columns(text_a=7, text_b=8)),
    _task("qqp", _BINARY, _FILES, ("f1", "accuracy"), "QQP",
          Columns(text_a=3, text_b=4, label=5, skip_short=True), Columns(text_a=1, text_b=2)),
    _task("mnli", _NLI, {"train": "train.tsv", "dev": "dev_matched.tsv", "test": "test_matched.tsv",
                         **_MNLI_FILES}, ("accuracy",), "MNLI", **_MNLI_COLUMNS),
    _task("mnli-mm", _NLI, {"train": "train.tsv", "dev": "dev_mismatched.tsv",
                            "test": "test_mismatched.tsv"}, ("accuracy",), "MNLI", **_MNLI_COLUMNS),
    _task("qnli", _ENTAILMENT, _FILES, ("accuracy",), "QNLI", **_INDEXED_PAIR),
    _task("rte", _ENTAILMENT, _FILES, ("accuracy",), "RTE", **_INDEXED_PAIR),
    _task("wnli", _BINARY, _FILES, ("accuracy",), "WNLI", **_INDEXED_PAIR),
    # The diagnostic set: test only, scored with an MNLI model (its labels).
    _task("ax", _NLI, {"test": "diagnostic.tsv"}, ("mcc",), "diagnostic", **_INDEXED_PAIR,
          other_files=types.MappingProxyType({"diagnostic.tsv": ("AX.tsv",)})),
)}
_ALIASES = {"mnlim": "mnli", "mnlimatched": "mnli", "mnlimismatched": "mnli-mm", "diagnostic": "ax"}


def get_task(task):
    """The `GlueTask` of `task` (a `GlueTask`, or a name: "MRPC", "sts_b" and "stsb" all work)."""
    if isinstance(task, GlueTask):
        return task
    key = str(task).lower().replace("_", "").replace("-", "")
    names = {name.replace("-", ""): name for name in TASKS}
    name = names.get(key, _ALIASES.get(key))
    if name is None:
        raise ValueError(f"Unknown GLUE task {task!r}; expected one of {', '.join(TASKS)}.")
    return TASKS[name]


def _lines(path):
    """The file's lines as str, split at "\\n" only (as `tf.gfile`), each decoded as UTF-8."""
    with open(path, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusFormatError(
                    f"{path}, line {number}: not UTF-8 (byte {raw[e.start]:#04x}, the line's byte {e.start + 1}: "
                    f"{e.reason}); GLUE files are UTF-8.") from None


def _rows(path):
    """`(line number, row)` of a tab-separated file, without quoting (as the originals)."""
    reader = csv.reader(_lines(path), delimiter="\t", quoting=csv.QUOTE_NONE)
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:  # e.g. a lone "\r" inside a line; the originals' reader fails there too
            raise CorpusFormatError(f"{path}, line {reader.line_num}: unreadable row ({e}).") from None
        yield reader.line_num, row


def check_value(task, value, path, line, what="label"):
    """A label (or prediction) cell of `task`: a finite float for STS-B, else one of the task's label strings;
    `CorpusFormatError` naming the file and line otherwise."""
    if task.is_regression:
        try:
            score = float(value)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise CorpusFormatError(
                f"{path}, line {line}: {what} {value!r} is not a number ({task.name} {what}s are scores).")
        return score
    if value not in task.labels:
        raise CorpusFormatError(
            f"{path}, line {line}: {what} {value!r} is not one of the {task.name} labels {list(task.labels)}.")
    return value


_label = check_value


def read_file(task, path, split):
    """The examples of one GLUE file, as the authors' processor reads it.

    Args:
        task: a `GlueTask` or a task name.
        path: str, the .tsv file.
        split: str, "train", "dev", "test" (or MNLI's "dev_matched", ...): which columns apply ("test*":
            the test rules, with the placeholder label) and the prefix of generated guids.

    Returns:
        A list of `Example`s, in file order.

    Raises:
        CorpusFormatError: the file is missing or not UTF-8, a row has too few columns (except the QQP
            rows the originals skip), a label is not one of the task's (or, for STS-B, not a number), or
            the file has no examples.
    """
    task = get_task(task)
    columns = task.columns_of(split)
    if not os.path.isfile(path):
        raise CorpusFormatError(f"{path}: no such file (the {task.name} {split} split).")
    examples = []
    for index, (line, row) in enumerate(_rows(path)):
        if index == 0 and columns.header:
            continue
        if len(row) < columns.min_columns:
            if columns.skip_short and row:
                continue
            raise CorpusFormatError(
                f"{path}, line {line}: {len(row)} columns, expected at least {columns.min_columns} "
                f"(a {task.name} {split} row: {_describe(columns)}).")
        guid = f"{split}-{index}" if columns.guid is None else row[columns.guid]
        text_b = None if columns.text_b is None else row[columns.text_b]
        if columns.label is None:
            label = task.placeholder
        else:
            label = _label(task, row[columns.label], path, line)
        examples.append(Example(guid, row[columns.text_a], text_b, label, line=line))
    if not examples:
        raise CorpusFormatError(f"{path}: no examples (the {task.name} {split} split is empty).")
    return examples


def check_labels(task, train, train_path, others=()):
    """Refuses labelled splits a model cannot learn from or be scored on (`CorpusFormatError`, naming the file
    and the line): a training split whose rows all have one label (one score for STS-B), and a label of another
    split (`others`: `(examples, path)` pairs, e.g. dev) that no training row has, whose class the model would
    never see in training.

    Args:
        task: a `GlueTask` or a task name.
        train: the training `Example`s (`read_file`).
        train_path: str, their file.
        others: `(examples, path)` of the other labelled splits (not the test splits: their labels are
            placeholders).
    """
    task = get_task(task)
    seen = {}
    for example in train:
        seen.setdefault(example.label, example.line)
    if len(seen) < 2:
        value = next(iter(seen), None)
        what = f"the score {value}" if task.is_regression else f"the label {value!r}"
        raise CorpusFormatError(
            f"{train_path}: every row has {what}; {task.name} training needs "
            + ("scores that vary." if task.is_regression else f"two labels or more (of {list(task.labels)})."))
    if task.is_regression:
        return
    for examples, path in others:
        for example in examples:
            if example.label not in seen:
                raise CorpusFormatError(
                    f"{path}, line {example.line}: label {example.label!r} never occurs in the training file "
                    f"{train_path} (its labels: {sorted(seen)}); a model is never trained on that class.")


def _describe(columns):
    names = [("guid", columns.guid), ("text_a", columns.text_a), ("text_b", columns.text_b),
             ("label", columns.label)]
    return ", ".join(f"{name} in column {'last' if c == LABEL_LAST else c}" for name, c in names if c is not None)


def split_path(task, data_dir, split):
    """The file of `split`: in `data_dir` itself (the task folder) or in `data_dir/<task.folder>`.

    Raises:
        ValueError: the task has no such split.
        CorpusFormatError: no such file.
    """
    task = get_task(task)
    if split not in task.splits:
        raise ValueError(f"The {task.name} task has no split {split!r}; expected one of {list(task.splits)}.")
    name = task.splits[split]
    candidates = [os.path.join(folder, file)
                  for file in (name, *task.other_files.get(name, ()))
                  for folder in (data_dir, os.path.join(data_dir, task.folder))]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise CorpusFormatError(
        f"{candidates[0]}: no such file (the {task.name} {split} split; also looked for "
        f"{', '.join(candidates[1:])}).")


def read_split(task, data_dir, split):
    """`read_file` of `split`'s file in `data_dir` (the task folder, or the GLUE folder holding it).

    Args:
        task: a `GlueTask` or a task name.
        data_dir: str, e.g. "glue_data/MRPC" (or "glue_data").
        split: str, one of `task.splits` ("train", "dev", "test"; MNLI also "dev_matched",
            "dev_mismatched", "test_matched", "test_mismatched").

    Returns:
        A list of `Example`s.
    """
    return read_file(task, split_path(task, data_dir, split), split)

