"""`keras_pretrain.squad_eval` against the official SQuAD v1.1 / v2.0 evaluation code: floats equal.

The reference is the copy of both official scripts in albert-tensorflow's `squad_utils.py` (`test` extra):
v1.1's `normalize_answer_v1`, `f1_score`, `exact_match_score`, `evaluate_v1`; v2.0's
`make_qid_to_has_ans`, `get_raw_scores`, `apply_no_ans_threshold`, `make_eval_dict`, `merge_eval`,
`find_all_best_thresh`, combined as `evaluate-v2.0.py`'s `main` does. It is TF1 code and imports its
model code at module level: it runs in ONE subprocess, with `tensorflow` seen as `tensorflow.compat.v1`
and `tensorflow.contrib.*` as empty stand-ins (as `tests/tasks/classification/test_glue.py`). The copy calls
`print(..., file=sys.stderr)` for an unanswered v1.1 question without importing `sys`; the subprocess
gives the module its `sys` (the official script imports it).
"""

import io
import json
import os
import subprocess
import sys

import pytest

from keras_pretrain.tasks.question_answering import evaluation as squad_eval
from keras_pretrain.errors import CorpusFormatError
from tests.originals import TF1_SUBPROCESS_STUBS

pytestmark = pytest.mark.one_backend  # pure Python: nothing computed with Keras ops

ANSWER_PAIRS = [  # (prediction, gold)
    ("eiffel Tower!", "The Eiffel Tower"), ("the Denver Broncos, a team", "Denver Broncos"),
    ("café   naïve.", "Café naïve"), ("1000 people", "1,000 people"), ("Apple day", "an apple a day"),
    ("中国人", "中国"), ("the theory", "Theory"), ("x x z", "x y x"), ("", " "), ("", ""), ("a", "the"),
    ("An", "an"), ("ÉCOLE normale", "école Normale"), ("«quoted» text", "quoted text"),
    ("ΟΔΟΣ", "οδος"), ("end.", "end"), ("an-apple", "apple"), ("thea", "the a"), ("x\ty\nz", "x y z"),
    ("Steve Smith's", "Steve Smith"), ("1", "one"), ("some words here", ""), ("", "some words"),
]


def qa(qid, answers, impossible=None):
    item = {"id": qid, "question": f"question {qid}?", "answers": [{"text": t, "answer_start": 0} for t in answers]}
    if impossible is not None:
        item["is_impossible"] = impossible
    return item


V1_DATA = [
    {"title": "A", "paragraphs": [
        {"context": "c", "qas": [qa("q1", ["The Eiffel Tower", "Eiffel tower"]), qa("q2", ["Denver Broncos"]),
                                 qa("q3", ["Café naïve"]), qa("q4", ["1,000 people", "one thousand"])]},
        {"context": "c", "qas": [qa("q5", ["an apple a day"]), qa("q6", ["中国"]), qa("q7", ["unanswered"])]}]},
    {"title": "B", "paragraphs": [
        {"context": "c", "qas": [qa("q8", ["Theory", "a theory of everything"]), qa("q9", ["x y x", "z"]),
                                 qa("q10", [" "]), qa("q11", ["Steve Smith", "Smith"])]}]},
]
V1_PREDICTIONS = {"q1": "eiffel Tower!", "q2": "the Denver Broncos, a team", "q3": "café   naïve.",
                  "q4": "1000 people", "q5": "Apple day", "q6": "中国人", "q8": "the theory of", "q9": "x x z",
                  "q10": "", "q11": "Steve Smith's", "unknown": "ignored"}

V2_DATA = [
    {"title": "A", "paragraphs": [
        {"context": "c", "qas": [qa("a1", ["The Eiffel Tower", "Eiffel tower"], False),
                                 qa("a2", ["Denver Broncos"], False), qa("n1", [], True), qa("n2", [], True),
                                 qa("a3", ["Café naïve", "naïve"], False), qa("a4", ["the"], False)]},
        {"context": "c", "qas": [qa("n3", [], True), qa("a5", ["x y x"], False), qa("n4", [], True),
                                 qa("a6", ["中国"], False), qa("a7", ["one two three four"], False)]}]},
]
V2_PREDICTIONS = {"a1": "eiffel Tower!", "a2": "", "n1": "", "n2": "some answer", "a3": "naive", "a4": "",
                  "n3": "the", "a5": "x x z", "n4": "", "a6": "中国", "a7": "two three", "extra": "ignored"}
# Ties (0.3, 0.5, 2.0), probabilities above the 1.0 threshold, negative null odds, an id not in the data.
V2_NA_PROBS = {"a1": 0.5, "a2": 2.0, "n1": -1.25, "n2": 0.3, "a3": 0.3, "a4": 1.0, "n3": 0.5, "a5": 2.0,
               "n4": 1.5, "a6": 0.0, "a7": 0.3, "extra": 0.1}
V2_MISSING = {k: v for k, v in V2_PREDICTIONS.items() if k not in ("n3", "a7")}

SCRIPT = r'''
import json, sys, types
spec = json.loads(sys.argv[1])
''' + TF1_SUBPROCESS_STUBS + r'''from albert import squad_utils as su
su.sys = sys  # the copy prints to sys.stderr without importing sys

def v2_main(dataset, preds, na_probs, thresh=1.0):
    """evaluate-v2.0.py's main, on its functions."""
    with_probs = na_probs is not None
    if not with_probs:
        na_probs = {k: 0.0 for k in preds}
    qid_to_has_ans = su.make_qid_to_has_ans(dataset)
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    exact_raw, f1_raw = su.get_raw_scores(dataset, preds)
    exact_thresh = su.apply_no_ans_threshold(exact_raw, na_probs, qid_to_has_ans, thresh)
    f1_thresh = su.apply_no_ans_threshold(f1_raw, na_probs, qid_to_has_ans, thresh)
    out_eval = su.make_eval_dict(exact_thresh, f1_thresh)
    try:
        if has_ans_qids:
            su.merge_eval(out_eval, su.make_eval_dict(exact_thresh, f1_thresh, qid_list=has_ans_qids), "HasAns")
        if no_ans_qids:
            su.merge_eval(out_eval, su.make_eval_dict(exact_thresh, f1_thresh, qid_list=no_ans_qids), "NoAns")
    except KeyError as e:  # a question without a prediction: the script fails here
        out_eval["failed"] = str(e)
    if with_probs:
        su.find_all_best_thresh(out_eval, preds, exact_raw, f1_raw, na_probs, qid_to_has_ans)
    return dict(out_eval)

result = {
    "normalize": [su.normalize_answer_v1(p) for p, g in spec["pairs"]]
                 + [su.normalize_answer_v2(g) for p, g in spec["pairs"]],
    "v1_pairs": [[su.exact_match_score(p, g), su.f1_score(p, g)] for p, g in spec["pairs"]],
    "v2_pairs": [[su.compute_exact(g, p), su.compute_f1(g, p)] for p, g in spec["pairs"]],
    "v1": su.evaluate_v1(spec["v1_data"], spec["v1_predictions"]),
    "v1_all": su.evaluate_v1(spec["v1_data"], dict(spec["v1_predictions"], q7="unanswered")),
    "v2": v2_main(spec["v2_data"], spec["v2_predictions"], None),
    "v2_probs": v2_main(spec["v2_data"], spec["v2_predictions"], spec["v2_na_probs"]),
    "v2_probs_0.4": v2_main(spec["v2_data"], spec["v2_predictions"], spec["v2_na_probs"], 0.4),
    "v2_missing": v2_main(spec["v2_data"], spec["v2_missing"], spec["v2_na_probs"]),
    "v1_as_v2": v2_main(spec["v1_data"], dict(spec["v1_predictions"], q7="unanswered"), None),
}
with open(spec["out"], "w") as f:
    json.dump(result, f)
'''


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """What the official evaluation code computes on the synthetic data (JSON: bools and ints as such)."""
    pytest.importorskip("albert")
    out = str(tmp_path_factory.mktemp("squad_eval") / "original.json")
    spec = {"pairs": ANSWER_PAIRS, "v1_data": V1_DATA, "v1_predictions": V1_PREDICTIONS, "v2_data": V2_DATA,
            "v2_predictions": V2_PREDICTIONS, "v2_na_probs": V2_NA_PROBS, "v2_missing": V2_MISSING, "out": out}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                            cwd=root, env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out, encoding="utf-8") as f:
        return json.load(f), result.stdout, result.stderr


def same(ours, theirs):
    """Equal values and types (through JSON, as the original's were)."""
    ours = json.loads(json.dumps(ours))
    assert ours == theirs
    assert [type(v) for v in ours.values()] == [type(v) for v in theirs.values()]


def test_answer_scores_equal_the_originals(original):
    theirs = original[0]
    assert [squad_eval.normalize_answer(p) for p, _ in ANSWER_PAIRS] + [
        squad_eval.normalize_answer(g) for _, g in ANSWER_PAIRS] == theirs["normalize"]
    ours_v1 = [[squad_eval.exact_match_score(p, g), squad_eval.f1_score(p, g)] for p, g in ANSWER_PAIRS]
    ours_v2 = [[squad_eval.compute_exact(g, p), squad_eval.compute_f1(g, p)] for p, g in ANSWER_PAIRS]
    assert json.loads(json.dumps(ours_v1)) == theirs["v1_pairs"]
    assert json.loads(json.dumps(ours_v2)) == theirs["v2_pairs"]
    assert 0 < sum(f1 for _, f1 in ours_v1) < len(ANSWER_PAIRS)  # partial overlaps among the pairs


def test_v1_equals_the_original_and_reports_unanswered_questions(original):
    theirs, _, stderr = original
    log = io.StringIO()
    same(squad_eval.evaluate_v1(V1_DATA, V1_PREDICTIONS, log=log), theirs["v1"])
    assert log.getvalue() == "Unanswered question q7  will receive score 0.\n"
    assert "Unanswered question q7  will receive score 0." in stderr
    same(squad_eval.evaluate_v1(V1_DATA, dict(V1_PREDICTIONS, q7="unanswered")), theirs["v1_all"])
    assert 0 < theirs["v1"]["f1"] < 100 and theirs["v1"]["exact_match"] < theirs["v1"]["f1"]


def test_v2_equals_the_original(original):
    theirs = original[0]
    same(squad_eval.evaluate_v2(V2_DATA, V2_PREDICTIONS), theirs["v2"])
    ours = squad_eval.evaluate_v2(V2_DATA, V2_PREDICTIONS, V2_NA_PROBS)
    same(ours, theirs["v2_probs"])
    assert list(ours) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
                          "NoAns_f1", "NoAns_total", "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]
    assert ours != squad_eval.evaluate_v2(V2_DATA, V2_PREDICTIONS)  # the probabilities above 1.0 count
    same(squad_eval.evaluate_v2(V2_DATA, V2_PREDICTIONS, V2_NA_PROBS, na_prob_thresh=0.4), theirs["v2_probs_0.4"])
    # A v1.1 file through the v2.0 code: every question answerable.
    same(squad_eval.evaluate_v2(V1_DATA, dict(V1_PREDICTIONS, q7="unanswered")), theirs["v1_as_v2"])


def test_v2_skips_missing_predictions(original):
    theirs, stdout, _ = original
    log = io.StringIO()
    ours = squad_eval.evaluate_v2(V2_DATA, V2_MISSING, V2_NA_PROBS, log=log)
    assert log.getvalue() == "Missing prediction for n3\nMissing prediction for a7\n"
    assert "Missing prediction for n3" in stdout
    # The script fails on the HasAns / NoAns subsets (KeyError); the overall and best_* numbers agree.
    assert "failed" in theirs["v2_missing"]
    expected = {k: v for k, v in theirs["v2_missing"].items() if k != "failed"}
    same({k: ours[k] for k in expected}, expected)
    assert ours["total"] == ours["HasAns_total"] + ours["NoAns_total"] == 9


def test_evaluate_picks_the_version():
    assert squad_eval.is_v2(V2_DATA) and not squad_eval.is_v2(V1_DATA)
    assert set(squad_eval.evaluate(V1_DATA, V1_PREDICTIONS, log=io.StringIO())) == {"exact_match", "f1"}
    assert "HasAns_exact" in squad_eval.evaluate(V2_DATA, V2_PREDICTIONS, V2_NA_PROBS)
    with pytest.raises(ValueError, match="no no-answer probability for question 'a1'"):
        squad_eval.evaluate_v2(V2_DATA, V2_PREDICTIONS, {"n1": 0.5})


def write(path, content):
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


def test_readers(tmp_path):
    data = write(tmp_path / "dev.json", {"version": "v2.0", "data": V2_DATA})
    assert squad_eval.read_dataset(data) == V2_DATA
    assert squad_eval.read_predictions(write(tmp_path / "p.json", V2_PREDICTIONS)) == V2_PREDICTIONS
    assert squad_eval.read_na_probs(write(tmp_path / "n.json", V2_NA_PROBS)) == V2_NA_PROBS


@pytest.mark.parametrize("reader, content, message", [
    ("read_dataset", None, "no such file"),
    ("read_dataset", "{not json", "line 1: not valid JSON"),
    ("read_dataset", [1, 2], 'an object with a "data" list'),
    ("read_dataset", {"data": [{"title": "x"}]}, 'article 0 has no "paragraphs" list'),
    ("read_dataset", {"data": [{"paragraphs": [{"qas": [{"question": "?"}]}]}]}, 'has no string "id"'),
    ("read_dataset", {"data": [{"paragraphs": [{"qas": [{"id": "q", "answers": ["a"]}]}]}]},
     "question 'q' has no \"answers\" list"),
    ("read_predictions", ["a"], "expected a JSON object"),
    ("read_predictions", {"q": 1}, "the prediction for question 'q' is not a string"),
    ("read_na_probs", {"q": "high"}, "the value for question 'q' is not a number"),
])
def test_bad_files_name_the_file(reader, content, message, tmp_path):
    path = str(tmp_path / "missing.json") if content is None else write(tmp_path / "f.json", content)
    with pytest.raises(CorpusFormatError) as info:
        getattr(squad_eval, reader)(path)
    assert str(info.value).startswith(path) and message in str(info.value), str(info.value)
