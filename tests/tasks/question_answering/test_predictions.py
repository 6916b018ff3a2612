"""`keras_pretrain.squad_predictions` against bert-tensorflow's `run_squad.py` `write_predictions`.

In ONE subprocess (TF1 code: `tests.originals.bert_run_squad`), the original reads a synthetic SQuAD file
(`read_squad_examples`), makes its features with its own `convert_examples_to_features` and a `FullTokenizer`
on a tiny vocabulary (words split into WordPieces, some words missing: "[UNK]"), draws random logits (some
tied) for every window and writes its three files, for v1.1 and v2.0, lower-cased and cased, several
n-best sizes, answer lengths and null thresholds. The examples, features and logits come back as JSON; our
`write_predictions` on the same data must return the same predictions, n-best lists (text, probability,
start and end logits) and null odds, and `write_prediction_files` the same bytes.
"""

import json
import os
import subprocess
import sys
import types

import pytest

from keras_pretrain.tasks.question_answering.predictions import (
    _compute_softmax,
    _get_best_indexes,
    basic_tokenize,
    get_final_text,
    write_prediction_files,
    write_predictions,
)

pytestmark = pytest.mark.one_backend  # pure Python: nothing computed with Keras ops

CONTEXTS = [
    "Steve Smith's team won the 2015 championship in Denver, Colorado, beating the Carolina Panthers 24–10.",
    "The Café naïve in İstanbul serves ΟΔΟΣ coffee; its owner (Dr. Müller) opened it in 1999!",
    "中国人说你好 and the hel\u200blo world of zero\u00a0width spaces, tabs\tand more words to make windows.",
    "A long paragraph: " + " ".join(f"word{i % 7} Thing{i % 5}" for i in range(30)) + " the end.",
]
QUESTIONS = ["Who won the championship?", "Where is the café?", "What does the world say?", "What is the end?"]
# (name, version_2, do_lower_case, n_best_size, max_answer_length, null_score_diff_threshold)
CONFIGS = [
    ("v1-lower", False, True, 20, 30, 0.0),
    ("v1-cased", False, False, 20, 30, 0.0),
    ("v1-small", False, True, 3, 2, 0.0),
    ("v2-lower", True, True, 20, 30, 0.0),
    ("v2-cased", True, False, 20, 30, 0.0),
    ("v2-threshold", True, True, 5, 4, -1.5),
]

SCRIPT = r'''
import collections, json, os, random, sys
spec = json.loads(sys.argv[1])
from tests.originals import bert_run_squad
rs = bert_run_squad()
from bert import tokenization
FLAGS = rs.FLAGS

# The vocabulary: each cased and lower-cased word of the contexts, long words as two WordPieces, words
# with a "9" left out ([UNK]).
words = set()
for text in spec["contexts"] + spec["questions"]:
    for lower in (True, False):
        words.update(tokenization.BasicTokenizer(do_lower_case=lower).tokenize(text))
vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
for word in sorted(words):
    if "9" in word:
        continue
    vocab += [word[:3], "##" + word[3:]] if len(word) > 5 else [word]
vocab_file = os.path.join(spec["out"], "vocab.txt")
with open(vocab_file, "w", encoding="utf-8") as f:
    f.write("\n".join(dict.fromkeys(vocab)) + "\n")

result = {}
for name, version_2, lower, n_best, max_length, threshold in spec["configs"]:
    examples = rs.read_squad_examples(spec["data_v2" if version_2 else "data_v1"], is_training=False)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=lower)
    features = []
    rs.convert_examples_to_features(examples, tokenizer, max_seq_length=24, doc_stride=6, max_query_length=6,
                                    is_training=False, output_fn=features.append)
    rng = random.Random(name)
    RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
    draw = lambda: [round(rng.uniform(-4, 4), 1) for _ in range(24)]  # one decimal: ties
    results = [RawResult(f.unique_id, draw(), draw()) for f in features]
    for r, f in zip(results, features):  # a strong [CLS] in the windows of q1: "no answer" in v2.0
        if f.example_index == 1:
            r.start_logits[0] = r.end_logits[0] = 4.5
    FLAGS.version_2_with_negative, FLAGS.null_score_diff_threshold = version_2, threshold
    folder = os.path.join(spec["out"], name)
    os.makedirs(folder)
    paths = [os.path.join(folder, n) for n in ("predictions.json", "nbest_predictions.json", "null_odds.json")]
    rs.write_predictions(examples, features, results, n_best, max_length, lower, *paths)
    result[name] = {
        "examples": [{"qas_id": e.qas_id, "doc_tokens": e.doc_tokens} for e in examples],
        "features": [{"unique_id": f.unique_id, "example_index": f.example_index, "tokens": f.tokens,
                      "token_to_orig_map": sorted(f.token_to_orig_map.items()),
                      "token_is_max_context": sorted(f.token_is_max_context.items())} for f in features],
        "results": [r._asdict() for r in results],
        "files": {os.path.basename(p): open(p, encoding="utf-8").read() for p in paths if os.path.exists(p)},
        "final_texts": [[p, o, l, rs.get_final_text(p, o, l)] for p, o in spec["final_texts"] for l in (True, False)],
    }
result["basic"] = [[text, lower, tokenization.BasicTokenizer(do_lower_case=lower).tokenize(text)]
                   for text in spec["basic_texts"] for lower in (True, False)]
with open(os.path.join(spec["out"], "original.json"), "w") as f:
    json.dump(result, f)
'''

FINAL_TEXTS = [("steve smith", "Steve Smith's"), ("cafe", "Café"), ("Café", "Café"), ("hello", "hel\u200blo"),
               ("denver", "Denver,"), ("colorado", "(Colorado)."), ("not there", "Steve Smith's"),
               ("istanbul", "İstanbul"), ("οδοσ", "ΟΔΟΣ"), ("1999", "1999!"), ("24", "24–10.")]

BASIC_TEXTS = CONTEXTS + QUESTIONS + [orig for _, orig in FINAL_TEXTS] + [
    "\x00a\ufffdb\tc\u3000d\u2028e", "", "   ", "Cafe\u0301 ÉCOLE ǅ ﬁ", "a--b...c\u00bfd\u3001e"]


def squad_file(version_2):
    """A SQuAD file with one question per context (v2.0: the second and the fourth unanswerable)."""
    paragraphs = []
    for i, (context, question) in enumerate(zip(CONTEXTS, QUESTIONS)):
        item = {"id": f"q{i}", "question": question, "answers": []}
        if version_2:
            item["is_impossible"] = i % 2 == 1
        paragraphs.append({"context": context, "qas": [item]})
    return {"version": "v2.0" if version_2 else "1.1", "data": [{"title": "t", "paragraphs": paragraphs}]}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    pytest.importorskip("bert.tokenization")
    root = tmp_path_factory.mktemp("squad_predictions")
    data = {}
    for version_2 in (False, True):
        path = root / f"dev-{'v2' if version_2 else 'v1'}.json"
        path.write_text(json.dumps(squad_file(version_2)), encoding="utf-8")
        data["data_v2" if version_2 else "data_v1"] = str(path)
    spec = dict(data, out=str(root), configs=CONFIGS, contexts=CONTEXTS, questions=QUESTIONS,
                final_texts=FINAL_TEXTS, basic_texts=BASIC_TEXTS)
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                            cwd=repo, timeout=300, env={**os.environ, "PYTHONPATH": repo, "CUDA_VISIBLE_DEVICES": "",
                                                        "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    with open(root / "original.json", encoding="utf-8") as f:
        return json.load(f)


def inputs(case):
    """(examples, features, results) as attribute objects, from the original's JSON dump."""
    examples = [types.SimpleNamespace(**e) for e in case["examples"]]
    features = [types.SimpleNamespace(unique_id=f["unique_id"], example_index=f["example_index"], tokens=f["tokens"],
                                      token_to_orig_map=dict(f["token_to_orig_map"]),
                                      token_is_max_context=dict(f["token_is_max_context"]))
                for f in case["features"]]
    results = [types.SimpleNamespace(**r) for r in case["results"]]
    return examples, features, results


@pytest.mark.parametrize("config", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_write_predictions_equals_the_original(config, original, tmp_path):
    name, version_2, lower, n_best, max_length, threshold = config
    case = original[name]
    assert len(case["features"]) > len(case["examples"])  # long contexts make several windows
    predictions, nbest, null_odds = write_predictions(*inputs(case), n_best_size=n_best,
                                                      max_answer_length=max_length, do_lower_case=lower,
                                                      version_2_with_negative=version_2,
                                                      null_score_diff_threshold=threshold)
    files = case["files"]
    assert predictions == json.loads(files["predictions.json"])
    assert nbest == json.loads(files["nbest_predictions.json"])
    assert null_odds == (json.loads(files["null_odds.json"]) if version_2 else {})
    written = write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    assert sorted(os.path.basename(p) for p in written) == sorted(files)
    for path in written:
        assert open(path, encoding="utf-8").read() == files[os.path.basename(path)]
    if version_2:
        assert "" in predictions.values() and any(predictions.values())


def test_the_cases_cover_fallbacks_and_mapped_texts(original):
    """Some n-best texts are the original words unchanged (mapping failed), some a part of them."""
    texts = [a["text"] for name, *_ in CONFIGS for answers in json.loads(
        original[name]["files"]["nbest_predictions.json"]).values() for a in answers]
    assert "hel\u200blo" in " ".join(texts)  # a fallback: the words, with the zero-width space
    assert any("Smith" in t and "'s" not in t for t in texts)  # "Steve Smith's" cut to what was predicted


def test_get_final_text_equals_the_original(original):
    for pred, orig, lower, theirs in original["v1-lower"]["final_texts"]:
        assert get_final_text(pred, orig, lower) == theirs, (pred, orig, lower)
    assert get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert get_final_text("not there", "Steve Smith's", True) == "Steve Smith's"


def test_helpers():
    assert _get_best_indexes([1.0, 3.0, 3.0, 2.0, 0.5], 3) == [1, 2, 3]  # ties: the lower index first
    assert _get_best_indexes([1.0], 20) == [0]
    assert _compute_softmax([]) == []
    probs = _compute_softmax([1.0, 2.0, 3.0])
    assert abs(sum(probs) - 1.0) < 1e-12 and probs[2] > probs[1] > probs[0]
    assert basic_tokenize("Café (Dr. Müller) 中国\u200b!", True) == ["cafe", "(", "dr", ".", "muller", ")", "中",
                                                                    "国", "!"]
    assert basic_tokenize("Café  naïve", False) == ["Café", "naïve"]


def test_basic_tokenize_equals_bert(original):
    assert len(original["basic"]) == 2 * len(BASIC_TEXTS)
    for text, lower, theirs in original["basic"]:
        assert basic_tokenize(text, lower) == theirs, (text, lower)


def test_v2_without_any_valid_span_gets_transformers_placeholder():
    example = types.SimpleNamespace(qas_id="q", doc_tokens=["a", "b"])
    feature = types.SimpleNamespace(unique_id=1, example_index=0, tokens=["[CLS]", "a", "b"],
                                    token_to_orig_map={1: 0, 2: 1}, token_is_max_context={1: True, 2: True})
    result = types.SimpleNamespace(unique_id=1, start_logits=[0.0, 1.0, 2.0], end_logits=[0.0, 1.0, 2.0])
    predictions, nbest, _ = write_predictions([example], [feature], [result], max_answer_length=1)
    assert predictions == {"q": "b"} and [a["text"] for a in nbest["q"]] == ["b", "a"]
    # v2.0, no valid span (the original raises AttributeError): "empty" with logits 0 joins the null answer.
    predictions, nbest, null_odds = write_predictions([example], [feature], [result], max_answer_length=0,
                                                      version_2_with_negative=True)
    assert [a["text"] for a in nbest["q"]] == ["empty", ""] and null_odds == {"q": 0.0}  # null score 0 + 0
    assert predictions == {"q": "empty"}  # null odds 0 is not above the threshold 0: transformers' answer too
    predictions, _, _ = write_predictions([example], [feature], [result], max_answer_length=0,
                                          version_2_with_negative=True, null_score_diff_threshold=-1.0)
    assert predictions == {"q": ""}
    predictions, nbest, _ = write_predictions([example], [feature], [result], max_answer_length=0)
    assert predictions == {"q": "empty"}
