"""`recipes.finetune --task squad-v1.1 | squad-v2.0` (issue 41): run_squad.py's features written by
`--features-only`, the prediction files and the official evaluation of a short run, and the bad inputs."""

import json
import os

import numpy as np
import pytest

from keras_pretrain.tasks.question_answering import evaluation as squad_eval
from keras_pretrain.tasks.question_answering import features_wordpiece
from keras_pretrain.tasks.question_answering import squad
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
    expected = features_wordpiece.convert_examples_to_features(examples, features_wordpiece.word_tokenizer(tokenizer, examples), 24, 4, 8,
                                                  is_training=True, special=special)
    assert len(expected) > len(examples)  # contexts longer than one window
    import tensorflow as tf

    records = [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(os.path.join(out, "train.tf_record"))]
    assert len(records) == summary["features"]["train"] == len(expected)
    for record, feature in zip(records, expected):
        values = {k: list(v.int64_list.value) for k, v in record.features.feature.items()}
        assert values == features_wordpiece.feature_record(feature, True)


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
    check_serving(summary, out, data, predictions)


def check_serving(summary, out, data, predictions):
    """The serving SavedModel answers the dev questions as predictions.json (windows of 24, stride 4, in-graph)."""
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

    from keras_pretrain.tasks.question_answering import features_sentencepiece
    from keras_pretrain.tasks.question_answering import squad as squad_sentencepiece
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_sentencepiece as write_predictions
    from recipes import finetune_squad_albert

    data = write_squad(tmp_path / "squad.json")
    summary, out = run(albert_release, tmp_path, "--task", "squad-v1.1", "--train-file", data, "--predict-file", data)
    assert summary["family"] == "albert"
    check_serving(summary, out, data, json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")))
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
    check_features_only(albert_release, tmp_path, "squad-v1.1", data, features_sentencepiece.write_features, features)


def check_features_only(release, tmp_path, task, data, write_features, features):
    """`--features-only` writes the evaluation records `write_features` writes for `features`, byte for byte."""
    _, features_out = run(release, tmp_path / "f", "--task", task, "--train-file", data, "--predict-file", data,
                          "--features-only")
    expected = str(tmp_path / "expected.tf_record")
    write_features(features, expected, False)
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

    from keras_pretrain.tasks.question_answering.predictions import write_predictions_beam as write_predictions

    assert summary["family"] == family and summary["head"] == "answer_class"
    assert summary["serving"] is not None  # ALBERT v2.0 and XLNet are served (issue 41 item 5)
    assert len(features) == summary["predict_windows"] > len(examples)
    rows = [json.loads(line) for line in open(os.path.join(out, "raw_results.jsonl"), encoding="utf-8")]
    assert [r["unique_id"] for r in rows] == [f.unique_id for f in features]
    assert len(rows[0]["end_top_index"]) == 25 and len(rows[0]["start_top_index"]) == 5
    results = [types.SimpleNamespace(**r) for r in rows]
    predictions, nbest, null_odds = write_predictions(examples, features, results, 20, 30, 5, 5, layout=family,
                                                      null_score_diff_threshold=0.0)
    assert json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")) == predictions
    assert json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8")) == nbest
    if summary["serving"]:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401

        assert summary["serving"]["outputs"] == ["answer", "start", "end", "score", "no_answer_score"]
        serve = tf.saved_model.load(os.path.join(out, "qa", "1")).signatures["serving_default"]
        served = serve(question=tf.constant([e.question_text for e in examples]),
                       context=tf.constant([e.paragraph_text for e in examples]))
        assert [a.decode() for a in served["answer"].numpy()] == [predictions[e.qas_id] for e in examples]
        for e, answer, start, end in zip(examples, served["answer"].numpy(), served["start"].numpy(),
                                         served["end"].numpy()):
            assert (e.paragraph_text[start:end] if answer else "") == answer.decode()
        np.testing.assert_allclose(served["no_answer_score"].numpy(), [null_odds[e.qas_id] for e in examples],
                                   rtol=1e-5, atol=1e-5)
    assert json.load(open(os.path.join(out, "null_odds.json"), encoding="utf-8")) == null_odds
    scores = json.load(open(os.path.join(out, "eval_results.json")))
    assert "best_f1" in scores and "HasAns_exact" in scores


def run_beam_model(release, tmp_path, family, build_features):
    """A squad-v2.0 run of `release` (the answer-class model), checked by `check_beam_run` against the
    evaluation features `build_features(examples, tokenizer, options, 24, False)` of the recipe; returns
    `(data file, features)`."""
    import types

    data = write_squad(tmp_path / "squad.json", v2=True)
    summary, out = run(release, tmp_path, "--task", "squad-v2.0", "--train-file", data, "--predict-file", data)
    _, _, tokenizer = finetune.load_pretrained(finetune.build_parser(), release, None)
    options = types.SimpleNamespace(doc_stride=4, max_query_length=8)
    examples = squad.read_squad_examples(data, is_training=False)
    features = build_features(examples, tokenizer, options, 24, False)
    check_beam_run(out, summary, family, examples, features)
    return data, features


def test_xlnet_runs_xlnet_run_squad_pipeline(xlnet_release, tmp_path):
    """XLNet: run_squad.py's features (--features-only records), the answer-class head, its write_predictions."""
    import functools

    from keras_pretrain.tasks.question_answering import features_xlnet as squad_xlnet
    from recipes import finetune_squad_beam

    data, features = run_beam_model(xlnet_release, tmp_path, "xlnet",
                                    functools.partial(finetune_squad_beam.features, "xlnet"))
    check_features_only(xlnet_release, tmp_path, "squad-v2.0", data, squad_xlnet.write_features, features)


def test_albert_v2_runs_the_answer_class_model(albert_release, tmp_path):
    from recipes import finetune_squad_albert

    run_beam_model(albert_release, tmp_path, "albert", finetune_squad_albert.features)


@pytest.fixture(scope="module")
def roberta_folder(tmp_path_factory):
    """A tiny Hugging Face RoBERTa folder with a byte-level BPE vocabulary (vocab.json, merges.txt)."""
    transformers = pytest.importorskip("transformers")
    from tests.models.roberta.fixtures import write_bpe_files

    folder = tmp_path_factory.mktemp("roberta_sq")
    vocab, _ = write_bpe_files(folder)
    size = len(json.load(open(vocab, encoding="utf-8")))
    config = transformers.RobertaConfig(vocab_size=size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=32, max_position_embeddings=40, type_vocab_size=1,
                                        pad_token_id=1)
    transformers.RobertaModel(config).save_pretrained(str(folder))
    return str(folder)


def test_roberta_runs_on_byte_level_bpe(roberta_folder, tmp_path):
    """RoBERTa: `<s> Q </s></s> D </s>` windows, words after a space (the training answers' pieces decode to
    the answer), and `write_predictions` on the byte-decoded spans of the run's own logits."""
    import types

    from keras_pretrain.tasks.question_answering import predictions as squad_predictions
    from recipes import finetune_squad

    data = write_squad(tmp_path / "squad.json", v2=True)
    summary, out = run(roberta_folder, tmp_path, "--task", "squad-v2.0", "--train-file", data,
                       "--predict-file", data)
    assert summary["family"] == "roberta"
    check_serving(summary, out, data, json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")))
    parser = finetune.build_parser()
    _, _, tokenizer = finetune.load_pretrained(parser, roberta_folder, None)
    args = types.SimpleNamespace(doc_stride=4, max_query_length=8, task="squad-v2.0")
    special = finetune_squad.special_ids(parser, args, "roberta", tokenizer)
    assert (special["separators"], special["doc_segment"]) == (2, 0)
    train = squad.read_squad(data, "v2.0", is_training=True)
    train_features = finetune_squad.features(train, tokenizer, args, 24, special, True)
    answered = [f for f in train_features if f.start_position > 0]
    assert answered
    for f in answered:
        assert f.tokens[0] == "<s>" and f.tokens.count("</s>") == 3 and set(f.segment_ids) == {0}
        text = squad_predictions.byte_level_text(f.tokens[f.start_position:f.end_position + 1]).strip()
        assert text in {t for e in train if e.orig_answer_text for t in [e.orig_answer_text]}, text
    examples = squad.read_squad(data, "v2.0", is_training=False)
    features = finetune_squad.features(examples, tokenizer, args, 24, special, False)
    rows = [json.loads(line) for line in open(os.path.join(out, "raw_results.jsonl"), encoding="utf-8")]
    assert [r["unique_id"] for r in rows] == [f.unique_id for f in features]
    results = [types.SimpleNamespace(**r) for r in rows]
    predictions, nbest, null_odds = squad_predictions.write_predictions(
        examples, features, results, 20, 30, False, True, 0.0, squad_predictions.byte_level_text)
    assert json.load(open(os.path.join(out, "predictions.json"), encoding="utf-8")) == predictions
    assert json.load(open(os.path.join(out, "nbest_predictions.json"), encoding="utf-8")) == nbest
    contexts = " ".join(CONTEXTS)
    assert all(a["text"] in contexts or a["text"] in ("", "empty") for n in nbest.values() for a in n)


def test_byte_level_text_decodes_what_the_bpe_tokenizer_encodes(tmp_path):
    from keras_pretrain.models.roberta import RobertaTokenizer
    from keras_pretrain.tasks.question_answering.predictions import byte_level_text
    from tests.models.roberta.fixtures import write_bpe_files
    from tests.originals import TRICKY_TEXTS

    tokenizer = RobertaTokenizer(*write_bpe_files(tmp_path))
    from recipes.finetune_squad import id_tokens

    vocabulary = id_tokens(tokenizer)
    for _, text in TRICKY_TEXTS:
        if "\x00" in text or not text:
            continue  # the in-graph NUL cut (issue 43)
        ids = [int(i) for i in np.asarray(tokenizer(" " + text))]
        assert byte_level_text([vocabulary[i] for i in ids]) == " " + text, text
