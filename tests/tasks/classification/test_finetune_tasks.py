"""`recipes.finetune` for every task kind (issue 40): regression, multi-label, GLUE (the authors' features,
eval_results.json, the submission file), multiple choice (SWAG), the saved `.keras` predicting from strings,
the serving SavedModels' outputs, and the bad inputs that must stop the run."""

import csv
import json
import os

import keras
import numpy as np
import pytest

from recipes import finetune
from tests.tasks.classification.test_glue import write_glue
from tests.recipes.test_finetune_recipe import run_folder  # noqa: F401 (the module's pretrained tiny ALBERT)
from tests.recipes.test_finetune_recipe import write_table

pytestmark = pytest.mark.tf_only  # end-to-end recipe: one backend is enough (the tasks learn on all: tests/tasks)

TEXTS = ["the whale was white", "call me ishmael", "the quick brown fox", "it was the best of times",
         "some years ago i went to sea", "the lazy dog", "it was the worst of times", "床前明月光"]


def run(run_folder, tmp_path, *args):
    out = str(tmp_path / "out")
    summary = finetune.main(["--from", run_folder, "--out", out, "--epochs", "1", "--batch-size", "4",
                             "--seq-length", "16", "--verbose", "0", *args])
    return summary, out


def serving(out):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the tokenizer's ops)

    return tf.saved_model.load(os.path.join(out, "classifier", "1")).signatures["serving_default"]


def numpy(outputs):
    return {k: v.numpy() for k, v in outputs.items()}


def test_regression_scores_and_serves(run_folder, tmp_path):  # noqa: F811
    rows = [(f"{len(t) / 10:.2f}", t) for t in TEXTS] * 3
    summary, out = run(run_folder, tmp_path, "--task", "regression", "--data",
                       write_table(tmp_path / "r.tsv", ["label", "text"], rows))
    assert summary["problem_type"] == "regression" and summary["metric"] == "pearson"
    results = json.load(open(os.path.join(out, "eval_results.json")))
    assert set(results) == {"pearson", "spearman", "mse"}
    got = numpy(serving(out)(text=np.array(TEXTS[:3])))
    assert set(got) == {"logits", "scores"} and got["scores"].shape == (3,)
    model = keras.saving.load_model(os.path.join(out, "classifier.keras"))  # with its preprocessor
    ours = np.asarray(model.predict(np.array(TEXTS[:3]), verbose=0))
    np.testing.assert_allclose(ours[:, 0], got["scores"], atol=1e-5)


def test_multi_label_thresholds_and_serves(run_folder, tmp_path):  # noqa: F811
    labels = ["sea,whale", "", "fox", "times", "sea", "dog,fox", "times", "poem"]
    summary, out = run(run_folder, tmp_path, "--task", "multi-label", "--threshold", "0.4", "--data",
                       write_table(tmp_path / "m.tsv", ["labels", "text"], list(zip(labels, TEXTS)) * 3))
    assert summary["labels"] == ["dog", "fox", "poem", "sea", "times", "whale"]
    assert set(json.load(open(os.path.join(out, "eval_results.json")))) == {"f1", "exact_match", "accuracy"}
    assert summary["serving"]["threshold"] == 0.4
    got = numpy(serving(out)(text=np.array(TEXTS[:4])))
    np.testing.assert_array_equal(got["label_mask"], (got["probabilities"] >= 0.4).astype("int32"))
    names = np.array(summary["labels"])
    assert [x.decode() for x in got["labels"]] == [",".join(names[m > 0]) for m in got["label_mask"]]


def read_records(path):
    import tensorflow as tf

    return [bytes(r.numpy()) for r in tf.data.TFRecordDataset(path)]


def test_glue_features_only_writes_the_authors_records(run_folder, tmp_path):  # noqa: F811
    """The records equal `glue_features` (itself tested against bert/albert/xlnet's scripts) on the task's
    examples, in order; nothing is trained."""
    from keras_pretrain.tasks.classification import glue
    from keras_pretrain.tasks.classification import features as glue_features

    write_glue(str(tmp_path / "glue"))
    data_dir = str(tmp_path / "glue" / "MRPC")
    summary, out = run(run_folder, tmp_path, "--task", "mrpc", "--data-dir", data_dir, "--features-only")
    assert sorted(os.listdir(out)) == ["eval.tf_record", "summary.json", "train.tf_record"]
    family, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), run_folder, None)
    data = finetune.finetune_data.TaskData("mrpc", "single_label_classification", list(glue.TASKS["mrpc"].labels),
                                           glue.read_split(glue.TASKS["mrpc"], data_dir, "train"), [])
    expected = str(tmp_path / "expected.tf_record")
    glue_features.write_features(finetune.glue_features(family, tokenizer, data, data.train, 16), expected)
    assert read_records(os.path.join(out, "train.tf_record")) == read_records(expected)
    assert len(read_records(expected)) == summary["features"]["train"] == 8


def test_glue_run_writes_eval_results_and_the_submission(run_folder, tmp_path):  # noqa: F811
    write_glue(str(tmp_path / "glue"))
    summary, out = run(run_folder, tmp_path, "--task", "mrpc", "--data-dir", str(tmp_path / "glue" / "MRPC"),
                       "--no-export")
    assert set(json.load(open(os.path.join(out, "eval_results.json")))) == {"f1", "accuracy", "mean"}  # as `recipes.evaluate glue` prints
    with open(os.path.join(out, "MRPC.tsv"), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    assert rows[0] == ["index", "prediction"] and len(rows) == 9
    assert {r[1] for r in rows[1:]} <= {"0", "1"}
    assert summary["submission"] == os.path.join(out, "MRPC.tsv")


def write_swag(folder, count=12):
    os.makedirs(folder, exist_ok=True)
    header = ["video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
              "ending0", "ending1", "ending2", "ending3", "label"]
    for name in ("train.csv", "val.csv"):
        with open(os.path.join(folder, name), "w", encoding="utf-8", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            for i in range(count):
                endings = [TEXTS[(i + k) % len(TEXTS)] for k in range(4)]
                writer.writerow([f"v{i}", str(i), "", TEXTS[i % len(TEXTS)], "then", "gold", *endings, str(i % 4)])


def test_swag_trains_and_serves_context_and_endings(run_folder, tmp_path):  # noqa: F811
    write_swag(str(tmp_path / "swag"))
    summary, out = run(run_folder, tmp_path, "--task", "swag", "--data-dir", str(tmp_path / "swag"))
    assert summary["problem_type"] == "multiple_choice" and summary["metric"] == "accuracy"
    assert summary["serving"]["inputs"] == ["context", "endings"]
    endings = np.array([["then " + t for t in TEXTS[:4]], ["then " + t for t in TEXTS[4:]]])
    got = numpy(serving(out)(context=np.array(TEXTS[:2]), endings=endings))
    assert got["logits"].shape == (2, 4) and got["choice"].shape == (2,)
    np.testing.assert_allclose(got["probabilities"].sum(-1), 1.0, atol=1e-5)
    # The SavedModel packs as training does: its logits equal the .keras model on `encode_choices`.
    from keras_pretrain import families

    family, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), run_folder, None)
    text = families.get(family).preprocessor_class(families.get(family), tokenizer)
    model = keras.saving.load_model(os.path.join(out, "classifier.keras"))
    x = text.encode_choices(TEXTS[:2], endings.tolist(), 16)
    logits = np.asarray(model.predict({n: x[n] for n in model.input}, verbose=0))
    np.testing.assert_allclose(logits, got["logits"], atol=1e-5)


# === bad inputs: exit 2, one line naming the file, line and problem; --out untouched ===

def bad(run_folder, tmp_path, capsys, table, *args):  # noqa: F811
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", run_folder, "--out", str(out), "--epochs", "1", "--verbose", "0",
                       "--data", write_table(tmp_path / "bad.tsv", *table), *args])
    assert info.value.code == 2
    assert not out.exists() or not os.listdir(out)
    return capsys.readouterr().err


def test_float_labels_under_classify_name_the_regression_task(run_folder, tmp_path, capsys):  # noqa: F811
    err = bad(run_folder, tmp_path, capsys, (["label", "text"], [("0.5", "a"), ("1.25", "b"), ("3", "c")] * 3))
    assert "--task regression" in err and "bad.tsv" in err


@pytest.mark.parametrize("rows, message", [
    ([("en", "a", "extra"), ("zh", "b")], "line 2"),  # a ragged row
    ([], "no rows"),  # a header, no rows
    ([("en", "a")] * 6, "two labels or more"),
])
def test_bad_tables_exit_2(run_folder, tmp_path, capsys, rows, message):  # noqa: F811
    err = bad(run_folder, tmp_path, capsys, (["label", "text"], rows))
    assert message in err and "bad.tsv" in err


def test_a_validation_label_train_never_had(run_folder, tmp_path, capsys):  # noqa: F811
    valid = write_table(tmp_path / "valid.tsv", ["label", "text"], [("en", "a"), ("fr", "b")])
    err = bad(run_folder, tmp_path, capsys, (["label", "text"], [("en", "a"), ("zh", "b")] * 4),
              "--validation-data", valid)
    assert "'fr'" in err and "never occur" in err


def test_a_missing_column_and_a_length_beyond_the_positions(run_folder, tmp_path, capsys):  # noqa: F811
    err = bad(run_folder, tmp_path, capsys, (["label", "sentence"], [("en", "a"), ("zh", "b")]))
    assert "lacks column" in err
    err = bad(run_folder, tmp_path, capsys, (["label", "text"], [("en", "a"), ("zh", "b")] * 4),
              "--seq-length", "100000")
    assert "exceeds" in err and "positions" in err


def test_out_holding_files_is_never_overwritten(run_folder, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", run_folder, "--out", str(out), "--data",
                       write_table(tmp_path / "c.tsv", ["label", "text"], [("en", "a"), ("zh", "b")] * 4)])
    assert info.value.code == 2 and "nothing is overwritten" in capsys.readouterr().err
    assert os.listdir(out) == ["mine.txt"] and (out / "mine.txt").read_text(encoding="utf-8") == "keep"


@pytest.mark.large
def test_demo_pretrains_finetunes_and_answers_a_query(tmp_path, monkeypatch):
    """`make demo` (`recipes.demo`), with a short pretraining: the fine-tuned model answers through serving."""
    from recipes import demo

    monkeypatch.chdir(tmp_path)
    summary = demo.main(["--steps", "4", "--steps-per-epoch", "2", "--verbose", "0"])
    assert summary["labels"] == ["computers", "poetry", "sayings", "science"]
    (run,) = os.listdir(tmp_path / "runs")
    label, probability = demo.ask(str(tmp_path / "runs" / run / "finetune" / "classifier" / "1"), demo.QUERY)
    assert label in summary["labels"] and 0.25 <= probability <= 1.0
