"""`recipes.finetune --task squad-v1.1 | squad-v2.0` (issue 41): run_squad.py's features written by
`--features-only`, the prediction files and the official evaluation of a short run, and the bad inputs."""

import json
import os

import pytest

from keras_pretrain import squad_eval
from keras_pretrain.data import squad
from recipes import finetune
from tests.recipes.test_finetune_recipe import run_folder  # noqa: F401 (the module's pretrained tiny ALBERT)

pytestmark = pytest.mark.tf_only

CONTEXTS = ["the whale was white and the sea was wide", "call me ishmael some years ago i went to sea",
            "the quick brown fox jumps over the lazy dog", "it was the best of times it was the worst of times"]


def write_squad(path, v2=False):
    paragraphs = []
    for i, context in enumerate(CONTEXTS):
        words = context.split()
        answer = words[2 + i % 3]
        start = context.index(" " + answer + " ") + 1
        qas = [{"id": f"q{i}", "question": f"what is word {i} ?",
                "answers": [{"text": answer, "answer_start": start}]}]
        if v2:
            qas[0]["is_impossible"] = False
            qas.append({"id": f"n{i}", "question": "where is the moon ?", "answers": [], "is_impossible": True,
                        "plausible_answers": [{"text": words[0], "answer_start": 0}]})
        paragraphs.append({"context": context, "qas": qas})
    data = {"version": "v2.0" if v2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def run(run_folder, tmp_path, *args):  # noqa: F811
    out = str(tmp_path / "out")
    return finetune.main(["--from", run_folder, "--out", out, "--epochs", "1", "--batch-size", "4",
                          "--seq-length", "24", "--doc-stride", "4", "--max-query-length", "8", "--verbose", "0",
                          *args]), out


def test_features_only_writes_run_squads_records(run_folder, tmp_path):  # noqa: F811
    data = write_squad(tmp_path / "train.json")
    summary, out = run(run_folder, tmp_path, "--task", "squad-v1.1", "--train-file", data, "--predict-file", data,
                       "--features-only")
    assert sorted(os.listdir(out)) == ["eval.tf_record", "summary.json", "train.tf_record"]
    family, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), run_folder, None)
    examples = squad.read_squad(data, "v1.1", is_training=True)
    special = {"cls": tokenizer.token_to_id("[CLS]"), "sep": tokenizer.token_to_id("[SEP]"),
               "pad": tokenizer.token_to_id("[PAD]")}
    expected = squad.convert_examples_to_features(examples, squad.word_tokenizer(tokenizer, examples), 24, 4, 8,
                                                  is_training=True, special=special)
    assert len(expected) > len(examples)  # contexts longer than one window
    import tensorflow as tf

    records = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(os.path.join(out, "train.tf_record"))]
    assert len(records) == summary["features"]["train"] == len(expected)
    for record, feature in zip(records, expected):
        values = {k: list(v.int64_list.value) for k, v in record.features.feature.items()}
        assert values == squad.feature_record(feature, True)


@pytest.mark.parametrize("version", ["v1.1", "v2.0"])
def test_a_run_writes_the_predictions_and_the_official_scores(run_folder, tmp_path, version):  # noqa: F811
    data = write_squad(tmp_path / "squad.json", v2=version == "v2.0")
    summary, out = run(run_folder, tmp_path, "--task", f"squad-{version}", "--train-file", data,
                       "--predict-file", data)
    files = set(os.listdir(out))
    assert {"predictions.json", "nbest_predictions.json", "raw_results.jsonl", "eval_results.json",
            "qa.keras", "summary.json"} <= files
    assert ("null_odds.json" in files) == (version == "v2.0")
    predictions = json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8"))
    assert sorted(predictions) == sorted(q["id"] for q in squad_eval.questions(squad_eval.read_dataset(data)))
    rows = [json.loads(line) for line in open(os.path.join(out, "raw_results.jsonl"), encoding="utf-8")]
    assert len(rows) == summary["predict_windows"] and len(rows[0]["start_logits"]) == 24
    scores = json.load(open(os.path.join(out, "eval_results.json")))
    na = os.path.join(out, "null_odds.json") if version == "v2.0" else None
    assert scores == squad_eval.evaluate(squad_eval.read_dataset(data), predictions,
                                         squad_eval.read_na_probs(na) if na else None)
    assert ("exact_match" in scores) == (version == "v1.1") and ("HasAns_exact" in scores) == (version == "v2.0")
    # The serving SavedModel answers the dev questions as predictions.json (windows of 24, stride 4, in-graph).
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    assert summary["serving"]["inputs"] == ["question", "context"]
    serve = tf.saved_model.load(os.path.join(out, "qa", "1")).signatures["serving_default"]
    questions = [(q["id"], q["question"], p["context"]) for a in json.load(open(data))["data"]
                 for p in a["paragraphs"] for q in p["qas"]]
    result = serve(question=tf.constant([q for _, q, _ in questions]), context=tf.constant([c for _, _, c in questions]))
    assert sorted(result) == sorted(summary["serving"]["outputs"])
    served = [a.decode() for a in result["answer"].numpy()]
    assert served == [("" if predictions[i] == "empty" else predictions[i]) for i, _, _ in questions]
    for (_, _, context), answer, start, end in zip(questions, served, result["start"].numpy(), result["end"].numpy()):
        assert (context[start:end] if answer else "") == answer


def bad(run_folder, tmp_path, capsys, *args):  # noqa: F811
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", run_folder, "--out", str(out), "--seq-length", "24", "--verbose", "0", *args])
    assert info.value.code == 2
    assert not out.exists() or not os.listdir(out)
    return capsys.readouterr().err


def test_bad_inputs_exit_2(run_folder, tmp_path, capsys):  # noqa: F811
    good, v2 = write_squad(tmp_path / "good.json"), write_squad(tmp_path / "v2.json", v2=True)
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    files = ["--train-file", good, "--predict-file", good]
    err = bad(run_folder, tmp_path, capsys, "--task", "squad-v1.1", "--train-file", str(broken), "--predict-file", good)
    assert "broken.json" in err
    err = bad(run_folder, tmp_path, capsys, "--task", "squad-v1.1", "--train-file", v2, "--predict-file", good)
    assert "v2.json" in err
    err = bad(run_folder, tmp_path, capsys, "--task", "squad-v1.1", *files, "--doc-stride", "20",
              "--max-query-length", "8")
    assert "--doc-stride 20" in err
    err = bad(run_folder, tmp_path, capsys, "--task", "squad-v1.1", *files, "--max-query-length", "30")
    assert "no room" in err
    err = bad(run_folder, tmp_path, capsys, "--task", "squad-v1.1", "--train-file", good)
    assert "--predict-file" in err
    err = bad(run_folder, tmp_path, capsys, "--task", "classify", *files)
    assert "SQuAD's" in err


@pytest.fixture(scope="module")
def albert_release(tmp_path_factory):
    """A tiny published-style ALBERT v2 tarball (SentencePiece model with [CLS] / [SEP])."""
    from tests.models.albert.fixtures import build_albert_archive

    tarball, _ = build_albert_archive(str(tmp_path_factory.mktemp("albert_sp")))
    return tarball


def test_albert_runs_albert_squad_utils_pipeline(albert_release, tmp_path):
    """ALBERT's SentencePiece release: albert's features (--features-only records) and its
    write_predictions_v1 answers on the run's own logits."""
    import types

    from keras_pretrain.data import squad_sentencepiece
    from keras_pretrain.squad_predictions_sentencepiece import write_predictions
    from recipes import finetune_squad_albert

    data = write_squad(tmp_path / "squad.json")
    summary, out = run(albert_release, tmp_path, "--task", "squad-v1.1", "--train-file", data, "--predict-file", data)
    assert summary["family"] == "albert" and summary["serving"] is None
    _, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), albert_release, None)
    options = types.SimpleNamespace(doc_stride=4, max_query_length=8, n_best_size=20, max_answer_length=30)
    examples = squad_sentencepiece.read_squad_examples(data, is_training=False)
    features = finetune_squad_albert.features(examples, tokenizer, options, 24, False)
    assert len(features) == summary["predict_windows"] > len(examples)
    rows = [json.loads(line) for line in open(os.path.join(out, "raw_results.jsonl"), encoding="utf-8")]
    assert [r["unique_id"] for r in rows] == [f.unique_id for f in features]
    results = [types.SimpleNamespace(**r) for r in rows]
    predictions, nbest = write_predictions(examples, features, results, 20, 30)
    assert json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")) == predictions
    assert json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8")) == nbest
    assert "exact_match" in json.load(open(os.path.join(out, "eval_results.json")))

    _, features_out = run(albert_release, tmp_path / "f", "--task", "squad-v1.1", "--train-file", data,
                          "--predict-file", data, "--features-only")
    expected = str(tmp_path / "expected.tf_record")
    squad_sentencepiece.write_features(features, expected, False)
    with open(expected, "rb") as a, open(os.path.join(features_out, "eval.tf_record"), "rb") as b:
        assert a.read() == b.read()



@pytest.fixture(scope="module")
def xlnet_release(tmp_path_factory):
    """A tiny original XLNet release folder (xlnet_model.ckpt, xlnet_config.json, spiece.model)."""
    from tests.models.xlnet import make_tf1_release

    return make_tf1_release.build(str(tmp_path_factory.mktemp("xlnet_sq")), seed=4).folder


def check_beam_run(out, summary, family, examples, features):
    """The run's files are the authors' write_predictions on the run's own beam (raw_results.jsonl)."""
    import types

    from keras_pretrain.squad_predictions_beam import write_predictions

    assert summary["family"] == family and summary["serving"] is None and summary["head"] == "answer_class"
    assert len(features) == summary["predict_windows"] > len(examples)
    rows = [json.loads(line) for line in open(os.path.join(out, "raw_results.jsonl"), encoding="utf-8")]
    assert [r["unique_id"] for r in rows] == [f.unique_id for f in features]
    assert len(rows[0]["end_top_index"]) == 25 and len(rows[0]["start_top_index"]) == 5
    results = [types.SimpleNamespace(**r) for r in rows]
    predictions, nbest, null_odds = write_predictions(examples, features, results, 20, 30, 5, 5, layout=family,
                                                      null_score_diff_threshold=0.0)
    assert json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")) == predictions
    assert json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8")) == nbest
    assert json.load(open(os.path.join(out, "null_odds.json"), encoding="utf-8")) == null_odds
    scores = json.load(open(os.path.join(out, "eval_results.json")))
    assert "best_f1" in scores and "HasAns_exact" in scores


def test_xlnet_runs_xlnet_run_squad_pipeline(xlnet_release, tmp_path):
    """XLNet: run_squad.py's features (--features-only records), the answer-class head, its write_predictions."""
    import types

    from keras_pretrain.data import squad_sentencepiece
    from keras_pretrain.data import squad_xlnet
    from recipes import finetune_squad_beam

    data = write_squad(tmp_path / "squad.json", v2=True)
    summary, out = run(xlnet_release, tmp_path, "--task", "squad-v2.0", "--train-file", data, "--predict-file", data)
    _, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), xlnet_release, None)
    options = types.SimpleNamespace(doc_stride=4, max_query_length=8)
    examples = squad_sentencepiece.read_squad_examples(data, is_training=False)
    features = finetune_squad_beam.features("xlnet", examples, tokenizer, options, 24, False)
    check_beam_run(out, summary, "xlnet", examples, features)

    _, features_out = run(xlnet_release, tmp_path / "f", "--task", "squad-v2.0", "--train-file", data,
                          "--predict-file", data, "--features-only")
    expected = str(tmp_path / "expected.tf_record")
    squad_xlnet.write_features(features, expected, False)
    with open(expected, "rb") as a, open(os.path.join(features_out, "eval.tf_record"), "rb") as b:
        assert a.read() == b.read()


def test_albert_v2_runs_the_answer_class_model(albert_release, tmp_path):
    import types

    from keras_pretrain.data import squad_sentencepiece
    from recipes import finetune_squad_albert

    data = write_squad(tmp_path / "squad.json", v2=True)
    summary, out = run(albert_release, tmp_path, "--task", "squad-v2.0", "--train-file", data, "--predict-file", data)
    _, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), albert_release, None)
    options = types.SimpleNamespace(doc_stride=4, max_query_length=8)
    examples = squad_sentencepiece.read_squad_examples(data, is_training=False)
    features = finetune_squad_albert.features(examples, tokenizer, options, 24, False)
    check_beam_run(out, summary, "albert", examples, features)
