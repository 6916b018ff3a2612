"""Hostile fine-tuning data and serving inputs (issue 44, item 3 and the serving part of item 5).

One case per input. The data cases run `recipes.finetune.main(argv)` in-process: the tables, GLUE folders and
SWAG / RACE folders are read before any model loads (`--from` is an empty folder, never read), so a case takes
milliseconds. CoNLL and SQuAD files are read after the model; their cases call the recipe's own readers
(`finetune_ner.read`, `finetune_squad.read_examples`) with the recipe's parser. Each case asserts exit code 2,
the one `error:` line naming the file (and the line or question where there is one) and the problem, and that
nothing was written: `--out` does not exist and every input file keeps its bytes.

The serving cases export a tiny classifier's serving SavedModel (and a TF-Hub preprocessor) once and call their
signatures as TensorFlow Serving does (`signatures[...]`, which never checks shapes by itself): anything but a
batch of strings `[B]`, and pair inputs of different lengths, are refused.
"""

import argparse
import json
import os

import numpy as np
import pytest

from recipes import finetune
from recipes import finetune_data
from recipes import finetune_ner
from recipes import finetune_squad

one_backend = pytest.mark.one_backend
tf_only = pytest.mark.tf_only


# --- files ---------------------------------------------------------------------------------------------------


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    return str(path)


def tsv(path, header, rows, sep="\t"):
    return write(path, "".join(sep.join(r) + "\n" for r in [header, *rows]))


def two_labels(n=20):
    return [("ab"[i % 2], f"text {i}") for i in range(n)]


MRPC_HEADER = ("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String")
MNLI_HEADER = tuple(f"c{i}" for i in range(11)) + ("gold_label",)
STSB_HEADER = ("index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2",
               "score")
SWAG_HEADER = ("video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source", "ending0", "ending1",
               "ending2", "ending3", "label")


def mrpc(folder, labels, name="train.tsv"):
    return tsv(os.path.join(folder, name), MRPC_HEADER,
               [(label, str(i), str(i), f"a {i}", f"b {i}") for i, label in enumerate(labels)])


def mnli(folder, name, labels):
    return tsv(os.path.join(folder, name), MNLI_HEADER,
               [(str(i), *["x"] * 7, f"a {i}", f"b {i}", "x", label) for i, label in enumerate(labels)])


def stsb(folder, name, scores):
    return tsv(os.path.join(folder, name), STSB_HEADER,
               [(str(i), "g", "f", "2015", str(i), "s", "s", f"a {i}", f"b {i}", s) for i, s in enumerate(scores)])


def swag(path, labels, header=SWAG_HEADER):
    rows = [(f"v{i}", str(i), "s", f"context {i}", f"question {i}", "gold", "e0", "e1", "e2", "e3", str(label))
            for i, label in enumerate(labels)]
    return tsv(path, header, [r[:len(header)] for r in rows], sep=",")


def race(folder, split, answers):
    for i, answer in enumerate(answers):
        write(os.path.join(folder, split, "middle", f"{i}.txt"), json.dumps(
            {"id": f"{i}.txt", "article": f"article {i}", "questions": ["which?"],
             "options": [["w", "x", "y", "z"]], "answers": [answer]}))
    for level in ("middle", "high"):
        os.makedirs(os.path.join(folder, split, level), exist_ok=True)


# --- the cases -----------------------------------------------------------------------------------------------
# Each returns (argv after --from/--out, [substrings of the error line]).


def held_out_only_label(tmp_path):
    rows = two_labels(20)
    first_held_out = np.random.default_rng(0).permutation(21)[0]  # finetune's split, --seed 0, fraction 0.2
    rows.insert(first_held_out, ("c", "the only row of c"))
    path = tsv(tmp_path / "t.tsv", ("label", "text"), rows)
    return ["--data", path], [path, f"line {first_held_out + 2}", "['c']", "held-out", "--validation-data"]


def quote_swallowing_csv(tmp_path):
    rows = [("ab"[i % 2], ('"' if i == 3 else "") + f"text {i}") for i in range(22)]  # row 3 opens, never closes
    path = tsv(tmp_path / "t.csv", ("label", "text"), rows, sep=",")
    return ["--data", path], [path, "line 5", "to line 23", "19 lines read as one row"]


def scores_as_classes(tmp_path):
    scores = [str(100 + (i * 37) % 500) for i in range(183)]  # 183 distinct integer scores (a price, a year)
    rows = [(s, f"text {i}") for i, s in enumerate(scores * 2)]
    path = tsv(tmp_path / "t.tsv", ("label", "text"), rows)
    top = max(scores, key=int)
    return ["--data", path], [path, f"line {scores.index(top) + 2}", "183 distinct numbers", "--task regression"]


def decimal_labels(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text"), [(f"{i % 5}.0", f"text {i}") for i in range(20)])
    return ["--data", path], [path, "line 2", "'0.0'", "--task regression"]


def float_labels(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text"), [("0.5", "a"), ("1.25", "b"), ("3", "c")] * 3)
    return ["--data", path], [path, "line 2", "'0.5'", "--task regression"]


def pair_scores(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text_a", "text_b"), [(str(3 * i), f"a {i}", f"b {i}") for i in range(30)])
    return ["--task", "pair", "--data", path], [path, "line 31", "30 distinct numbers", "--task regression"]


def single_label(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text"), [("a", f"text {i}") for i in range(10)])
    return ["--data", path], [path, "every row has the label 'a'"]


def validation_only_label(tmp_path):
    train = tsv(tmp_path / "t.tsv", ("label", "text"), two_labels())
    valid = tsv(tmp_path / "v.tsv", ("label", "text"), [("a", "x"), ("c", "y")])
    return ["--data", train, "--validation-data", valid], [valid, "line 3", "['c']", "never occur"]


def empty_train(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text"), [])
    return ["--data", path], [path, "no rows"]


def empty_validation(tmp_path):
    train = tsv(tmp_path / "t.tsv", ("label", "text"), two_labels())
    valid = tsv(tmp_path / "v.tsv", ("label", "text"), [])
    return ["--data", train, "--validation-data", valid], [valid, "no rows"]


def constant_scores(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("label", "text"), [("1.5", f"text {i}") for i in range(10)])
    return ["--task", "regression", "--data", path], [path, "every row has the score 1.5"]


def same_label_set(tmp_path):
    path = tsv(tmp_path / "t.tsv", ("labels", "text"), [("a,b", f"text {i}") for i in range(10)])
    return ["--task", "multi-label", "--data", path], [path, "every row has the labels 'a,b'"]


def glue_single_label(tmp_path):
    folder = str(tmp_path / "MRPC")
    train = mrpc(folder, "1" * 10)
    mrpc(folder, "01", "dev.tsv")
    mrpc(folder, "00", "test.tsv")  # a whole folder (before, a missing test.tsv stopped the run)
    return ["--task", "mrpc", "--data-dir", folder], [train, "every row has the label '1'"]


def glue_dev_only_label(tmp_path):
    folder = str(tmp_path / "MNLI")
    mnli(folder, "train.tsv", ["entailment", "contradiction"] * 5)
    dev = mnli(folder, "dev_matched.tsv", ["entailment", "neutral"])
    mnli(folder, "test_matched.tsv", ["-", "-"])
    return ["--task", "mnli", "--data-dir", folder], [dev, "line 3", "'neutral'", "never occurs"]


def glue_constant_scores(tmp_path):
    folder = str(tmp_path / "STS-B")
    train = stsb(folder, "train.tsv", ["2.0"] * 6)
    stsb(folder, "dev.tsv", ["1.0", "3.5"])
    stsb(folder, "test.tsv", ["", ""])
    return ["--task", "sts-b", "--data-dir", folder], [train, "every row has the score 2.0"]


def glue_empty_dev(tmp_path):
    folder = str(tmp_path / "MRPC")
    mrpc(folder, "01" * 5)
    dev = mrpc(folder, "", "dev.tsv")
    return ["--task", "mrpc", "--data-dir", folder], [dev, "no examples"]


def glue_label_outside_the_task(tmp_path):
    folder = str(tmp_path / "MRPC")
    train = mrpc(folder, "0120")
    mrpc(folder, "01", "dev.tsv")
    return ["--task", "mrpc", "--data-dir", folder], [train, "line 4", "'2'", "not one of the mrpc labels"]


def swag_quote(tmp_path):
    folder = str(tmp_path / "swag")
    train = swag(os.path.join(folder, "train.csv"), [i % 4 for i in range(25)])
    with open(train, encoding="utf-8") as f:
        text = f.read().replace("context 3", '"context 3').replace("question 21,", 'question 21",')
    write(train, text)
    swag(os.path.join(folder, "val.csv"), [0, 1])
    return ["--task", "swag", "--data-dir", folder], [train, "line 5", "to line 23", "19 lines read as one row"]


def swag_single_answer(tmp_path):
    folder = str(tmp_path / "swag")
    train = swag(os.path.join(folder, "train.csv"), [0] * 8)
    swag(os.path.join(folder, "val.csv"), [0, 1])
    return ["--task", "swag", "--data-dir", folder], [train, "every question's answer is choice 0"]


def swag_unlabelled(tmp_path):
    folder = str(tmp_path / "swag")
    train = swag(os.path.join(folder, "train.csv"), [i % 4 for i in range(8)], header=SWAG_HEADER[:-1])
    swag(os.path.join(folder, "val.csv"), [0, 1])
    return ["--task", "swag", "--data-dir", folder], [train, "no label column"]


def swag_empty_validation(tmp_path):
    folder = str(tmp_path / "swag")
    swag(os.path.join(folder, "train.csv"), [i % 4 for i in range(8)])
    valid = swag(os.path.join(folder, "val.csv"), [])
    return ["--task", "swag", "--data-dir", folder], [valid, "no example"]


def race_single_answer(tmp_path):
    folder = str(tmp_path / "RACE")
    race(folder, "train", "AAAA")
    race(folder, "dev", "AB")
    return ["--task", "race", "--data-dir", folder], [os.path.join(folder, "train"), "every question's answer is "
                                                                                     "choice 0"]


def race_empty_split(tmp_path):
    folder = str(tmp_path / "RACE")
    race(folder, "train", "ABCD")
    race(folder, "dev", "")
    return ["--task", "race", "--data-dir", folder], [os.path.join(folder, "dev"), "empty split"]


DATA_CASES = {f.__name__: f for f in (
    scores_as_classes, decimal_labels, float_labels, pair_scores, quote_swallowing_csv, single_label,
    validation_only_label, held_out_only_label, empty_train, empty_validation, constant_scores, same_label_set,
    glue_single_label, glue_dev_only_label, glue_constant_scores, glue_empty_dev, glue_label_outside_the_task,
    swag_quote, swag_single_answer, swag_unlabelled, swag_empty_validation, race_single_answer, race_empty_split)}


def snapshot(folder):
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                files[os.path.join(root, name)] = f.read()
    return files


def error_line(capsys):
    lines = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(lines) == 1, lines
    return lines[0]


@one_backend
@pytest.mark.parametrize("case", list(DATA_CASES))
def test_hostile_finetuning_data_exits_2_naming_the_file(case, tmp_path, capsys):
    source, out = tmp_path / "source", tmp_path / "out"
    source.mkdir()  # never read: the data is refused first
    argv, expected = DATA_CASES[case](tmp_path)
    before = snapshot(tmp_path)
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", str(source), "--out", str(out), *argv])
    line = error_line(capsys)
    assert info.value.code == 2, line
    for part in expected:
        assert part in line, (part, line)
    assert not out.exists() and snapshot(tmp_path) == before


# --- inputs that must be read as they are (no silent merge, no false error) ------------------------------------


def args_of(argv):
    parser = finetune.build_parser()
    args = parser.parse_args(["--from", "unused", *argv])
    return parser, args


@one_backend
def test_a_quote_in_a_tsv_is_text_and_every_line_a_row(tmp_path):
    """TSVs are read without quoting, as the GLUE processors (bert's `run_classifier._read_tsv`: `quotechar=None`):
    a stray quote is a character, and the rows are the lines."""
    rows = [("ab"[i % 2], ('"' if i == 3 else "") + f"text {i}") for i in range(22)]
    path = tsv(tmp_path / "t.tsv", ("label", "text"), rows)
    examples = finetune_data.read_table(finetune.build_parser(), path, "classify")
    assert len(examples) == 22 and examples[3].text_a == '"text 3'
    folder = str(tmp_path / "MRPC")
    mrpc(folder, "01" * 5)
    with open(os.path.join(folder, "train.tsv"), encoding="utf-8") as f:
        text = f.read().replace("a 3", '"a 3')
    write(os.path.join(folder, "train.tsv"), text)
    mrpc(folder, "01", "dev.tsv")
    data = finetune_data.read_task(*args_of(["--task", "mrpc", "--data-dir", folder]))
    assert len(data.train) == 10 and data.train[3].text_a == '"a 3'
    assert data.test is None  # a folder without test.tsv is fine (nothing to predict)


@one_backend
def test_integer_class_ids_are_classes(tmp_path):
    """Class ids 0/1, 1..5, -1/0/1 are classes, not scores."""
    parser = finetune.build_parser()
    for name, labels in (("01", ["0", "1"]), ("stars", ["1", "2", "3", "4", "5"]), ("sign", ["-1", "0", "1"])):
        path = tsv(tmp_path / f"{name}.tsv", ("label", "text"), [(labels[i % len(labels)], f"t {i}")
                                                                  for i in range(20)])
        args = parser.parse_args(["--from", "unused", "--data", path])
        assert sorted(finetune_data.read_task(parser, args).labels) == sorted(labels)


# --- CoNLL and SQuAD: the recipe's readers -------------------------------------------------------------------

CONLL = "-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\nBlack NNP I-NP I-PER\n\n"


def squad(qas, context="The cat sat on the mat."):
    return json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})


def qa(qid, text="cat", start=4):
    return {"id": qid, "question": "who?", "answers": [{"text": text, "answer_start": start}]}


FILE_CASES = {  # name: (reader, task, train text, predict text, [expected in the line], which file it names)
    "conll_only_o": (finetune_ner.read, "ner", "a x x O\nb x x O\n\n", "a x x O\n\n", ["every word is tagged O"], 0),
    "conll_predict_tag_unseen": (finetune_ner.read, "ner", CONLL, "x x x B-LOC\n\n", ["line 1", "'B-LOC'"], 1),
    "conll_empty": (finetune_ner.read, "ner", "", CONLL, ["no sentences"], 0),
    "conll_numeric_tags": (finetune_ner.read, "ner", "a x x 3\nb x x 5\n\n", CONLL, ["line 1", "not an IOB tag"], 0),
    "squad_duplicate_ids": (finetune_squad.read_examples, "squad-v1.1", squad([qa("q1")]),
                            squad([qa("q2"), qa("q2")]), ["question 1", "'q2'", "own id"], 1),
    "squad_id_not_a_string": (finetune_squad.read_examples, "squad-v1.1", squad([qa(["q1"])]), squad([qa("q2")]),
                              ["question 0", "`id` is a list"], 0),
    "squad_answer_outside": (finetune_squad.read_examples, "squad-v1.1", squad([qa("q1", start=400)]),
                             squad([qa("q2")]), ["'q1'", "outside"], 0),
    "squad_no_answer_found": (finetune_squad.read_examples, "squad-v1.1", squad([qa("q1", text="dog")]),
                              squad([qa("q2")]), ["no training question with an answer"], 0),
}


@one_backend
@pytest.mark.parametrize("case", list(FILE_CASES))
def test_hostile_conll_and_squad_files_exit_2_naming_the_file(case, tmp_path, capsys):
    reader, task, train, predict, expected, named = FILE_CASES[case]
    suffix = ".json" if task.startswith("squad") else ".txt"
    paths = [write(tmp_path / f"train{suffix}", train), write(tmp_path / f"predict{suffix}", predict)]
    before = snapshot(tmp_path)
    parser = finetune.build_parser()
    args = argparse.Namespace(task=task, train_file=paths[0], predict_file=paths[1])
    with pytest.raises(SystemExit) as info:
        reader(parser, args)
    line = error_line(capsys)
    assert info.value.code == 2, line
    for part in [paths[named], *expected]:
        assert part in line, (part, line)
    assert snapshot(tmp_path) == before


# --- serving: a batch of strings, nothing else ---------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the tokenizer's ops)

    from keras_pretrain.export.preprocessor_savedmodel import export_preprocessor
    from keras_pretrain.tasks.classification.serving import export_serving
    from tests.tasks.classification.test_serving import LABELS
    from tests.tasks.classification.test_serving import SEQ_LENGTH
    from tests.tasks.classification.test_serving import _classifier

    root = tmp_path_factory.mktemp("serving")
    classifier, tokenizer = _classifier()
    export_serving(classifier, str(root / "pair" / "1"), tokenizer=tokenizer, labels=LABELS, seq_length=SEQ_LENGTH,
                   pair=True)
    export_preprocessor(tokenizer, str(root / "preprocessor"), seq_length=SEQ_LENGTH)
    return {"classifier": tf.saved_model.load(str(root / "pair" / "1")).signatures["serving_default"],
            "preprocessor": tf.saved_model.load(str(root / "preprocessor")).signatures}


SERVING_CASES = {  # name: (signature, inputs, a regex of the error; either input of a pair may be named first)
    "matrix_1x2": ("classifier", {"text_a": [["a cat", "the mat"]], "text_b": [["on", "the"]]},
                   r"Shape of tensor text_[ab] \[1,2\] is not compatible with expected shape \[\?\]"),
    "scalar": ("classifier", {"text_a": "a cat", "text_b": "on"},
               r"Shape of tensor text_[ab] \[\] is not compatible with expected shape \[\?\]"),
    "pair_lengths_differ": ("classifier", {"text_a": ["a cat", "the mat"], "text_b": ["on"]},
                            "text_a and text_b must hold as many rows"),
    "preprocessor_matrix_1x2": ("serving_default", {"text": [["a cat", "the mat"]]},
                                r"Shape of tensor text \[1,2\] is not compatible with expected shape \[\?\]"),
    "preprocessor_pair_lengths_differ": ("pair", {"text_a": ["a cat", "the mat"], "text_b": ["on"]},
                                         "text_a and text_b must hold as many rows"),
}


@tf_only
@pytest.mark.parametrize("case", list(SERVING_CASES))
def test_serving_signatures_take_a_batch_of_strings_only(case, served):
    import tensorflow as tf

    name, inputs, expected = SERVING_CASES[case]
    signature = served["classifier"] if name == "classifier" else served["preprocessor"][name]
    with pytest.raises(tf.errors.InvalidArgumentError, match=expected):
        signature(**{k: tf.constant(v) for k, v in inputs.items()})


@tf_only
def test_serving_signatures_still_serve_a_batch(served):
    import tensorflow as tf

    out = served["classifier"](text_a=tf.constant(["a cat", "the mat"]), text_b=tf.constant(["on", "the"]))
    assert out["logits"].shape == (2, 3) and out["labels"].shape == (2,)
    packed = served["preprocessor"]["pair"](text_a=tf.constant(["a cat"]), text_b=tf.constant(["on"]))
    assert packed["input_word_ids"].shape[0] == 1
