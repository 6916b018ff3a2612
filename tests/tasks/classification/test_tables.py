"""`keras_pretrain.tasks.classification.tables`, called directly: the task tables read and checked, the label
names, the held-out validation rows, the task folders; bad input raises `TaskDataError` naming the file (the
recipe's exit-2 lines over these: tests/hostile/test_hostile_data.py, tests/recipes)."""

import os

import numpy as np
import pytest

from keras_pretrain.errors import CorpusFormatError
from keras_pretrain.errors import TaskDataError
from keras_pretrain.tasks.classification import tables

pytestmark = pytest.mark.one_backend


def table(tmp_path, name, header, rows, sep="\t"):
    path = tmp_path / name
    path.write_text("".join(sep.join(r) + "\n" for r in [header, *rows]), encoding="utf-8", newline="")
    return str(path)


def two_labels(n=20):
    return [("ab"[i % 2], f"text {i}") for i in range(n)]


def raises(call, *args, **kwargs):
    with pytest.raises(TaskDataError) as info:
        call(*args, **kwargs)
    return info.value


def test_a_table_reads_as_examples_numbered_by_line(tmp_path):
    path = table(tmp_path, "p.tsv", ("label", "text_a", "text_b"), [("x", "a 1", "b 1"), ("y", '"a 2', "b 2")])
    examples = tables.read_table(path, "pair")
    assert [(e.guid, e.text_a, e.text_b, e.label) for e in examples] == [("2", "a 1", "b 1", "x"),
                                                                        ("3", '"a 2', "b 2", "y")]
    scores = tables.read_table(table(tmp_path, "r.tsv", ("label", "text"), [(" 2.5 ", "t")]), "regression")
    assert scores[0].label == 2.5 and scores[0].text_b is None
    multi = tables.read_table(table(tmp_path, "m.csv", ("labels", "text"), [('"b, a,b"', "t"), ("", "u")], ","),
                              "multi-label")
    assert [e.label for e in multi] == [("a", "b"), ()]


@pytest.mark.parametrize("name, text, argument, expected", [
    ("missing.tsv", None, "data", "no such file"),
    ("ragged.tsv", "label\ttext\na\tb\tc\n", "validation_data", "line 2: 3 fields, the header has 2"),
    ("empty.tsv", "label\ttext\n\n", "data", "holds no rows under its header"),
    ("quote.csv", 'label,text\na,"open\nb,x\n', "data", "line 2: a quoted field runs from this line to line"),
    ("columns.tsv", "label\ttext\na\tb\n", "data", "lacks column(s) of --task pair"),
    ("blank.tsv", "label\ttext_a\ttext_b\na\t \tb\n", "data", "line 2: empty text"),
])
def test_a_bad_table_raises_naming_the_file_and_the_line(tmp_path, name, text, argument, expected):
    path = tmp_path / name
    if text is not None:
        path.write_text(text, encoding="utf-8", newline="")
    error = raises(tables.read_table, str(path), "pair", argument)
    assert isinstance(error, CorpusFormatError) and isinstance(error, ValueError)
    assert str(path) in str(error) and expected in str(error), str(error)
    assert error.argument == argument


def test_a_table_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "bytes.tsv"
    path.write_bytes(b"label\ttext\n\xff\xfe\n")
    assert str(raises(tables.read_rows, str(path))).startswith(f"{path} is not UTF-8")


@pytest.mark.parametrize("labels, expected", [
    (["a"], "every row has the label 'a'; a classifier needs two labels or more"),
    (["1", "2.5"], "line 3: the labels are numbers ('2.5', not an integer class id)"),
    (["0", "5", "7"], "line 4: the labels are 3 distinct numbers from 0 to 7"),
])
def test_classification_labels_that_are_scores_or_one_class_raise(tmp_path, labels, expected):
    path = table(tmp_path, "t.tsv", ("label", "text"), [(labels[i % len(labels)], f"t {i}") for i in range(6)])
    error = raises(tables.check_classification_labels, path, tables.read_table(path, "classify"), "classify")
    assert f"{path}" in str(error) and expected in str(error), str(error)


@pytest.mark.parametrize("labels", [["0", "1"], ["1", "2", "3", "4", "5"], ["-1", "0", "1"], ["neg", "pos"]])
def test_class_ids_and_names_are_classes(tmp_path, labels):
    path = table(tmp_path, "t.tsv", ("label", "text"), [(labels[i % len(labels)], f"t {i}") for i in range(20)])
    data = tables.read_table_task("classify", path)
    assert data.labels == sorted(labels) and data.problem_type == tables.SINGLE
    assert len(data.train) == 16 and len(data.valid) == 4  # --validation-fraction 0.2 held out


def test_scores_and_label_sets_that_never_vary_raise(tmp_path):
    path = table(tmp_path, "r.tsv", ("label", "text"), [("3", "a"), ("3.0", "b")])
    assert "every row has the score 3; --task regression needs" in str(raises(tables.read_table_task, "regression",
                                                                                path))
    path = table(tmp_path, "m.tsv", ("labels", "text"), [("x,y", "a"), ("y,x", "b")])
    assert "every row has the labels 'x,y'" in str(raises(tables.read_table_task, "multi-label", path))


def test_a_label_only_in_the_validation_rows_is_named(tmp_path):
    path = table(tmp_path, "t.tsv", ("label", "text"), two_labels())
    valid = table(tmp_path, "v.tsv", ("label", "text"), [("a", "v"), ("c", "w")])
    error = raises(tables.read_table_task, "classify", path, valid)
    assert error.argument == "validation_data"
    assert str(error) == f"{valid} line 3: label(s) ['c'] never occur in the training data {path} (labels ['a', 'b'])"
    held = table(tmp_path, "h.tsv", ("label", "text"), two_labels() + [("c", "only")])
    for seed in range(100):  # a seed that holds the one "c" row out
        data = tables.TaskData("classify", tables.SINGLE, None, tables.read_table(held, "classify"))
        tables.split_validation(data, seed, 0.2)
        if any(e.label == "c" for e in data.valid):
            break
    error = raises(tables.read_table_task, "classify", held, None, 0.2, seed)
    assert error.argument == "data" and "fall only in the held-out validation rows (--validation-fraction 0.2, " \
        f"--seed {seed})" in str(error)


def test_the_held_out_rows_are_a_seeded_permutation():
    data = [tables.TaskData("classify", tables.SINGLE, None, list(range(10))) for _ in range(2)]
    for d in data:
        tables.split_validation(d, 3, 0.3)
    assert data[0].valid == data[1].valid and len(data[0].valid) == 3
    assert sorted(data[0].train + data[0].valid) == list(range(10))
    given = tables.TaskData("classify", tables.SINGLE, None, [1, 2], valid=[3])
    tables.split_validation(given, 0, 0.5)
    assert given.train == [1, 2] and given.valid == [3]  # a validation set given: nothing held out


def test_label_arrays_of_each_problem_type():
    Example = tables.glue.Example
    single = tables.TaskData("classify", tables.SINGLE, ["a", "b"], [Example("1", "t", None, "b")])
    assert single.glue_task is None
    np.testing.assert_array_equal(tables.label_array(single, single.train), [1])
    multi = tables.TaskData("multi-label", tables.MULTI, ["x", "y", "z"], [Example("1", "t", None, ("x", "z"))])
    np.testing.assert_array_equal(tables.label_array(multi, multi.train), [[1, 0, 1]])
    scores = tables.TaskData("regression", tables.REGRESSION, None, [Example("1", "t", None, 0.5)])
    assert tables.label_array(scores, scores.train).dtype == np.float32
    assert tables.TaskData("mrpc", tables.SINGLE, None, []).glue_task == "mrpc"


def test_a_task_folder_that_is_missing_or_holds_no_split_is_named(tmp_path):
    error = raises(tables.read_task, "mrpc", data_dir=str(tmp_path / "nowhere"))
    assert error.argument == "data_dir" and str(error) == f"no such folder {str(tmp_path / 'nowhere')!r}"
    os.makedirs(tmp_path / "MRPC")
    error = raises(tables.read_task, "mrpc", data_dir=str(tmp_path / "MRPC"))
    assert error.argument == "data_dir" and str(tmp_path / "MRPC") in str(error)
    with pytest.raises(ValueError, match="data_dir is needed"):
        tables.read_task("swag")


def test_swag_answers_that_are_all_one_choice_are_named(tmp_path):
    header = ("video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
              "ending2", "ending3", "label")
    for name in ("train.csv", "val.csv"):
        table(tmp_path, name, header, [(f"v{i}", str(i), "s", f"c {i}", "q", "gold", "e0", "e1", "e2", "e3", "2")
                                       for i in range(4)], ",")
    error = raises(tables.read_task, "swag", data_dir=str(tmp_path))
    assert error.argument == "data_dir"
    assert str(error).startswith(f"{tmp_path / 'train.csv'}: every question's answer is choice 2")
