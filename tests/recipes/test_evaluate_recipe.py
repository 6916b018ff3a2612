"""`python -m recipes.evaluate glue`: one JSON line of GLUE metrics from a dev file and a submission file;
bad input exits 2 with one line naming the file (and the line). Also the submission files' writer and reader.
`python -m recipes.evaluate squad`: the official SQuAD v1.1 / v2.0 numbers of a predictions.json."""

import json
import os

import numpy as np
import pytest

from keras_pretrain.tasks.classification.submission import read_submission
from keras_pretrain.tasks.classification.submission import write_submission
from keras_pretrain.errors import CorpusFormatError
from recipes import evaluate

pytestmark = pytest.mark.one_backend  # files, parsing and NumPy: nothing computed with Keras ops


def dev_rows(task, labels):
    """Rows of a dev .tsv in the GLUE layout of `task` (the columns `keras_pretrain.tasks.classification.glue` reads)."""
    if task == "cola":  # no header: source, label, original label, sentence
        return [f"src\t{label}\t\tsentence {i}" for i, label in enumerate(labels)]
    if task == "mrpc":
        return ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String"] + [
            f"{label}\t{i}\t{i + 100}\tfirst {i}\tsecond {i}" for i, label in enumerate(labels)]
    if task == "mnli":  # index, 7 more columns, sentence1 (8), sentence2 (9), 5 annotator labels, gold last
        header = "\t".join(["index"] + [f"c{k}" for k in range(1, 8)] + ["sentence1", "sentence2"]
                           + [f"label{k}" for k in range(1, 6)] + ["gold_label"])
        return [header] + ["\t".join([str(i)] + ["x"] * 7 + [f"premise {i}", f"hypothesis {i}"] + [label] * 6)
                           for i, label in enumerate(labels)]
    if task == "sts-b":  # index, 6 more columns, sentence1 (7), sentence2 (8), score last
        header = "\t".join(["index"] + [f"c{k}" for k in range(1, 7)] + ["sentence1", "sentence2", "score"])
        return [header] + ["\t".join([str(i)] + ["x"] * 6 + [f"a {i}", f"b {i}", str(label)])
                           for i, label in enumerate(labels)]
    raise AssertionError(task)


@pytest.fixture
def files(tmp_path):
    """`make(task, labels, predictions)` -> (dev path, predictions path); `predictions` are the file's lines."""

    def make(task, labels, predictions):
        dev, preds = tmp_path / "dev.tsv", tmp_path / "preds.tsv"
        dev.write_text("\n".join(dev_rows(task, labels)) + "\n")
        preds.write_text("".join(line + "\n" for line in predictions))
        return str(dev), str(preds)

    return make


def submission(values):
    return ["index\tprediction"] + [f"{i}\t{value}" for i, value in enumerate(values)]


def run(capsys, task, dev, preds):
    assert evaluate.main(["glue", "--task", task, "--data", dev, "--predictions", preds]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    return json.loads(out)


def test_classification_tasks_print_their_glue_values(files, capsys):
    # MRPC: labels 1 1 0 0 1, predictions 1 0 0 1 1: tp 2, fp 1, fn 1 -> F1 2/3, accuracy 3/5.
    dev, preds = files("mrpc", ["1", "1", "0", "0", "1"], submission(["1", "0", "0", "1", "1"]))
    assert run(capsys, "mrpc", dev, preds) == pytest.approx({"f1": 2 / 3, "accuracy": 0.6, "mean": (2 / 3 + 0.6) / 2})
    # CoLA: tp 1, tn 2, fp 0, fn 1 -> MCC (1*2 - 0) / sqrt(1 * 2 * 3 * 2) = 2 / sqrt(12).
    dev, preds = files("cola", ["1", "1", "0", "0"], submission(["1", "0", "0", "0"]))
    assert run(capsys, "cola", dev, preds) == pytest.approx({"mcc": 2 / np.sqrt(12)})
    dev, preds = files("mnli", ["entailment", "neutral", "contradiction", "neutral"],
                       submission(["entailment", "neutral", "neutral", "contradiction"]))
    assert run(capsys, "MNLI", dev, preds) == {"accuracy": 0.5}


def test_sts_b_prints_pearson_and_spearman(files, capsys):
    stats = pytest.importorskip("scipy.stats")
    labels, predictions = [0.0, 1.2, 3.4, 5.0, 2.2, 2.2], [0.5, 1.0, 4.0, 4.5, 2.0, 3.0]
    dev, preds = files("sts-b", labels, submission(predictions))
    result = run(capsys, "sts-b", dev, preds)
    pearson, spearman = stats.pearsonr(predictions, labels)[0], stats.spearmanr(predictions, labels)[0]
    assert result == pytest.approx({"pearson": pearson, "spearman": spearman, "mean": (pearson + spearman) / 2},
                                   abs=1e-12)
    dev, preds = files("sts-b", labels, submission([2.5] * 6))  # constant: undefined correlations print null
    assert run(capsys, "stsb", dev, preds) == {"pearson": None, "spearman": None, "mean": None}


def test_what_write_submission_writes_scores_as_the_arrays_do(files, tmp_path, capsys):
    from keras_pretrain.tasks.classification.metrics import glue_metrics

    dev, _ = files("mnli", ["entailment", "neutral", "contradiction"], [])
    preds = str(tmp_path / "written.tsv")
    logits = np.array([[0.0, 2.0, 1.0], [0.0, 0.0, 3.0], [5.0, 0.0, 0.0]])  # ids 1, 2, 0 = the labels
    write_submission(preds, logits, "mnli")
    assert open(preds).read() == "index\tprediction\n0\tentailment\n1\tneutral\n2\tcontradiction\n"
    assert run(capsys, "mnli", dev, preds) == glue_metrics("mnli", [1, 2, 0], [1, 2, 0]) == {"accuracy": 1.0}


def test_submission_files_round_trip(tmp_path):
    path = str(tmp_path / "s.tsv")
    scores = np.array([[0.1], [3.3333333], [4.999]], dtype="float32")
    write_submission(path, scores, "sts-b")
    np.testing.assert_array_equal(read_submission(path, "sts-b"), scores[:, 0].astype("float64"))
    write_submission(path, [1, 0, 1], "mrpc")
    assert read_submission(path) == ["1", "0", "1"]
    assert list(read_submission(path, "mrpc")) == [1, 0, 1]
    with pytest.raises(ValueError, match=r"in \[0, 2\)"):
        write_submission(path, [0, 2], "rte")
    with pytest.raises(ValueError, match="class ids"):
        write_submission(path, [0.5, 1.0], "rte")


def test_read_submission_names_the_file_and_line(tmp_path):
    path = tmp_path / "s.tsv"
    path.write_text("index\tprediction\n0\tentailment\n2\tentailment\n")
    with pytest.raises(CorpusFormatError, match=rf"{path}, line 3: expected index 1, found '2'"):
        read_submission(str(path))


BAD_PREDICTIONS = {
    "missing file": (None, "no such file"),
    "bad header": (["id\tlabel", "0\t1", "1\t0", "2\t1"], "line 1: expected the header"),
    "empty file": ([], "line 1: expected the header"),
    "unknown label": (submission(["1", "yes", "0"]), "line 3: prediction 'yes' is not one of the mrpc labels"),
    "fewer rows": (submission(["1", "0"]), "line 4: the file ends after 2 predictions, but"),
    "more rows": (submission(["1", "0", "1", "1"]), "line 5: one prediction more than the 3 examples"),
    "three columns": (["index\tprediction", "0\t1\textra", "1\t0", "2\t1"], "line 2: expected 2 tab-separated"),
    "bad index": (submission(["1", "0", "1"])[:2] + ["7\t1"], "line 3: expected index 1, found '7'"),
}


@pytest.mark.parametrize("case", list(BAD_PREDICTIONS))
def test_bad_predictions_exit_2_naming_the_file_and_line(case, files, tmp_path, capsys):
    lines, message = BAD_PREDICTIONS[case]
    dev, preds = files("mrpc", ["1", "0", "1"], lines or [])
    if lines is None:
        os.remove(preds)
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["glue", "--task", "mrpc", "--data", dev, "--predictions", preds])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"error: --predictions: {preds}" in err and message in err, err
    assert len(err.strip().splitlines()[-1]) > 0 and "Traceback" not in err


def test_a_non_numeric_sts_b_prediction_exits_2(files, capsys):
    dev, preds = files("sts-b", [1.0, 2.0], submission(["1.5", "high"]))
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["glue", "--task", "sts-b", "--data", dev, "--predictions", preds])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"{preds}, line 3: prediction 'high' is not a number" in err


@pytest.mark.parametrize("argv, message", [
    (["--task", "mrpc", "--data", "MISSING"], "error: --data: MISSING: no such file"),
    (["--task", "squad"], "error: --task: Unknown GLUE task 'squad'"),
])
def test_bad_data_or_task_exit_2(argv, message, files, capsys):
    dev, preds = files("mrpc", ["1", "0"], submission(["1", "0"]))
    args = {"--task": "mrpc", "--data": dev, "--predictions": preds}
    args.update(dict(zip(argv[::2], argv[1::2])))
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["glue"] + [x for item in args.items() for x in item])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err, err


def test_a_dev_file_with_an_unknown_label_exits_2_naming_it(files, capsys):
    dev, preds = files("mrpc", ["1", "maybe"], submission(["1", "0"]))
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["glue", "--task", "mrpc", "--data", dev, "--predictions", preds])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"error: --data: {dev}, line 3: label 'maybe'" in err, err


def test_help_and_subcommands():
    parser = evaluate.build_parser()
    for argv in (["--help"], ["glue", "--help"], ["squad", "--help"]):
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(argv)
        assert exit_info.value.code == 0
    for argv in ([], ["superglue"], ["glue", "--task", "mrpc"], ["squad", "--data", "dev.json"]):
        # no benchmark, an unknown one, missing options
        with pytest.raises(SystemExit) as exit_info:
            parser.parse_args(argv)
        assert exit_info.value.code == 2


# === squad ===

def squad_dev(version_2):
    """A SQuAD dev file: v1.1 (q1..q3 answerable) or v2.0 (q3 unanswerable)."""
    def qa(qid, answers):
        item = {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in answers]}
        if version_2:
            item["is_impossible"] = not answers
        return item

    qas = [qa("q1", ["The Broncos", "Denver Broncos"]), qa("q2", ["in 1999"]), qa("q3", [] if version_2 else ["x"])]
    return {"version": "v2.0" if version_2 else "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": "c", "qas": qas}]}]}


@pytest.fixture
def squad_files(tmp_path):
    """`make(name=content, ...)` -> the paths of the JSON files written (a str content is written as is)."""

    def make(**contents):
        paths = {}
        for name, content in contents.items():
            path = tmp_path / f"{name}.json"
            path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
            paths[name] = str(path)
        return paths

    return make


def run_squad(capsys, *argv):
    assert evaluate.main(["squad", *argv]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("\n") == 1
    return json.loads(captured.out), captured.err


def test_squad_v1_prints_exact_match_and_f1(squad_files, capsys):
    files = squad_files(dev=squad_dev(False), preds={"q1": "broncos", "q2": "1999 season", "other": "x"})
    result, err = run_squad(capsys, "--data", files["dev"], "--predictions", files["preds"])
    # q1 exact; q2 "1999 season" vs "in 1999": precision = recall = 1/2, F1 1/2; q3 unanswered: 0.
    assert result == {"exact_match": 100.0 / 3, "f1": 100.0 * (1 + 1 / 2) / 3}
    assert "Unanswered question q3  will receive score 0." in err


def test_squad_v2_prints_the_v2_dict(squad_files, capsys):
    from keras_pretrain import squad_eval

    dataset = squad_dev(True)
    predictions, na_probs = {"q1": "Denver Broncos", "q2": "", "q3": "something"}, {"q1": 0.5, "q2": 2.0, "q3": 0.5}
    files = squad_files(dev=dataset, preds=predictions, na=na_probs)
    result, _ = run_squad(capsys, "--data", files["dev"], "--predictions", files["preds"])
    assert result == squad_eval.evaluate_v2(dataset["data"], predictions)
    assert result == {"exact": 100.0 / 3, "f1": 100.0 / 3, "total": 3, "HasAns_exact": 50.0, "HasAns_f1": 50.0,
                      "HasAns_total": 2, "NoAns_exact": 0.0, "NoAns_f1": 0.0, "NoAns_total": 1}
    result, _ = run_squad(capsys, "--data", files["dev"], "--predictions", files["preds"], "--na-probs", files["na"])
    assert result == squad_eval.evaluate_v2(dataset["data"], predictions, na_probs)
    # q2 (2.0 > 1.0) counts as "no answer", wrongly: unchanged. Best: answer q1 only (threshold 0.5): 2 of 3.
    assert result["exact"] == 100.0 / 3 and result["best_exact"] == result["best_f1"] == 200.0 / 3
    assert result["best_exact_thresh"] == result["best_f1_thresh"] == 0.5


def test_squad_writes_what_squad_predictions_writes(squad_files, tmp_path, capsys):
    import types

    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files, write_predictions

    example = types.SimpleNamespace(qas_id="q1", doc_tokens=["the", "Denver", "Broncos,"])
    feature = types.SimpleNamespace(unique_id=7, example_index=0, tokens=["[CLS]", "the", "denver", "broncos", ","],
                                    token_to_orig_map={1: 0, 2: 1, 3: 2, 4: 2},
                                    token_is_max_context={i: True for i in range(1, 5)})
    logits = types.SimpleNamespace(unique_id=7, start_logits=[0.0, 0.5, 3.0, 1.0, 0.0],
                                   end_logits=[0.0, 0.0, 1.0, 3.0, 0.5])
    write_prediction_files(str(tmp_path / "out"), *write_predictions([example], [feature], [logits]))
    assert json.load(open(tmp_path / "out" / "predictions.json")) == {"q1": "Denver Broncos"}
    files = squad_files(dev=squad_dev(False))
    result, _ = run_squad(capsys, "--data", files["dev"], "--predictions", str(tmp_path / "out" / "predictions.json"))
    assert result == {"exact_match": 100.0 / 3, "f1": 100.0 / 3}


BAD_SQUAD = {  # option -> (files, message)
    "--data": ({"dev": "{broken"}, "line 1: not valid JSON"),
    "--predictions": ({"preds": ["q1"]}, "expected a JSON object of question id -> answer text"),
    "--na-probs": ({"na": {"q1": "high"}}, "the value for question 'q1' is not a number"),
}


@pytest.mark.parametrize("option", list(BAD_SQUAD))
def test_squad_bad_files_exit_2_naming_the_file(option, squad_files, capsys):
    contents = {"dev": squad_dev(True), "preds": {"q1": "x"}, "na": {"q1": 0.0}}
    bad, message = BAD_SQUAD[option]
    files = squad_files(**{**contents, **bad})
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["squad", "--data", files["dev"], "--predictions", files["preds"], "--na-probs", files["na"]])
    err = capsys.readouterr().err
    name = {"--data": "dev", "--predictions": "preds", "--na-probs": "na"}[option]
    assert exit_info.value.code == 2
    assert f"error: {option}: {files[name]}" in err and message in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("case, message", [
    ("missing data", "error: --data: MISSING.json: no such file"),
    ("no prediction", "no prediction for any question of"),
    ("na-probs lack a question", "no no-answer probability for question 'q1'"),
    ("na-probs with v1.1", "is a SQuAD v1.1 file"),
])
def test_squad_bad_input_exits_2(case, message, squad_files, capsys):
    files = squad_files(dev=squad_dev(case != "na-probs with v1.1"), preds={"q1": "x", "q2": ""},
                        none={"other": "x"}, na={"q2": 0.5})
    argv = {"--data": files["dev"], "--predictions": files["preds"]}
    if case == "missing data":
        argv["--data"] = "MISSING.json"
    if case == "no prediction":
        argv["--predictions"] = files["none"]
    if case.startswith("na-probs"):
        argv["--na-probs"] = files["na"]
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["squad"] + [x for item in argv.items() for x in item])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err, err
