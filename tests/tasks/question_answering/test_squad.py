"""SQuAD examples and features against bert-tensorflow's `run_squad.py` (`read_squad_examples`,
`convert_examples_to_features`, `FeatureWriter`).

The original is TF1 code; it runs, once for the module, in ONE subprocess (as tests/tasks/classification/test_glue.py
explains): `tests.originals.bert_run_squad` imports it with `tensorflow` seen as `tensorflow.compat.v1` and
an empty `tensorflow.contrib`, its absl flags marked parsed and `--version_2_with_negative` set for v2.0
data. It reads tiny v1.1 / v2.0 files written here, in training and evaluation mode, with its
`FullTokenizer` on a tiny vocab.txt, and writes its features as JSON and its `FeatureWriter` files.

Our side runs twice: with the original's `FullTokenizer` as `tokenize` (string sub-tokens, `to_ids` its
`convert_tokens_to_ids`: the `tokens` must be the original's strings) and with our in-graph
`BertTokenizer` through `word_tokenizer` (ids).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_pretrain.tasks.question_answering.features_wordpiece import (
    convert_examples_to_features,
    to_arrays,
    word_tokenizer,
    write_features,
)
from keras_pretrain.tasks.question_answering.squad import (
    FIRST_UNIQUE_ID,
    SquadExample,
    read_squad,
    token_char_spans,
)
from keras_pretrain.errors import CorpusFormatError

pytestmark = pytest.mark.tf_only

# (max_seq_length, doc_stride, max_query_length)
CONFIGS = [(64, 16, 12), (40, 7, 9)]

SMITH = "The leader was John Smith (1895-1943). He lived\u202fin Zürich\tand  Café\r\nnaïve résumé, at 10\u00a0km."
CJK = "中国人说你好，再见。 The 北京 city\u3000is big, isn't it?"
LONG = " ".join(
    f"{w}{p}" for w, p in zip(
        ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma "
         "tau upsilon phi chi psi omega river mountain valley forest ocean desert island harbor bridge "
         "tower castle garden meadow village city market temple palace library museum school station "
         "airport highway tunnel canal lake stream spring summer autumn winter morning evening night "
         "sunrise sunset").split(),
        ["", ",", "", ".", "", "", "(1)", "", ";", ""] * 8))
LONG_QUESTION = "Which of the many words that appear in this rather long paragraph is the name of the " \
                "river or the mountain or the valley?"


def _qa(qid, question, context, answer, nth=0, **extra):
    start = -1
    for _ in range(nth + 1):
        start = context.index(answer, start + 1)
    return dict({"id": qid, "question": question, "answers": [{"text": answer, "answer_start": start}]}, **extra)


def squad_data(v2):
    paragraphs = [
        {"context": SMITH, "qas": [
            _qa("smith-born", "When was John Smith born?", SMITH, "1895"),
            _qa("smith-died", "When did he die?", SMITH, "1943"),
            _qa("smith-city", "Where did he live?", SMITH, "Zürich"),
            _qa("smith-cafe", "What is naïve?", SMITH, "Café\r\nnaïve"),
            # "10\u00a0km" is one doc token, the cleaned answer "10 km" is not in it: skipped.
            _qa("smith-km", "How far?", SMITH, "10\u00a0km"),
            _qa("smith-sub", "A part of a word?", SMITH, "lead"),
            # Not found: the text differs from the context at its offset.
            {"id": "smith-lost", "question": "Lost?", "answers": [{"text": "Smyth", "answer_start": 20}]},
        ]},
        {"context": CJK, "qas": [
            _qa("cjk-city", "哪个城市?", CJK, "北京"),
            _qa("cjk-hello", "What is said?", CJK, "你好"),
            _qa("cjk-end", "Is it?", CJK, "it?"),
        ]},
        {"context": "  leading\t\tspaces\u202f\u202fand trailing  \n", "qas": [
            _qa("spaces", "Which spaces?", "  leading\t\tspaces\u202f\u202fand trailing  \n", "spaces")]},
        {"context": LONG, "qas": [
            _qa("long-first", LONG_QUESTION, LONG, "alpha"),
            _qa("long-middle", "Where is the castle garden?", LONG, "castle garden"),
            _qa("long-paren", "Which number?", LONG, "1", nth=2),
            _qa("long-span", "What spans windows?", LONG, LONG[LONG.index("tower"):LONG.index("museum") + 6]),
            _qa("long-last", "What comes last?", LONG, "sunset"),
        ]},
    ]
    if v2:
        impossible = {"id": "smith-none", "question": "When was Smith's wife born?", "answers": [],
                      "plausible_answers": [{"text": "1943", "answer_start": SMITH.index("1943")}],
                      "is_impossible": True}
        paragraphs[0]["qas"].insert(1, impossible)
        paragraphs[3]["qas"].append({"id": "long-none", "question": LONG_QUESTION + " Or none?", "answers": [],
                                     "is_impossible": True})
        for paragraph in paragraphs:
            for qa in paragraph["qas"]:
                qa.setdefault("is_impossible", False)
    return {"version": "v2.0" if v2 else "1.1",
            "data": [{"title": "one", "paragraphs": paragraphs[:2]}, {"title": "two", "paragraphs": paragraphs[2:]}]}


def write_vocab(path):
    import re
    import unicodedata

    text = unicodedata.normalize("NFD", " ".join([SMITH, CJK, LONG, LONG_QUESTION]).lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words = sorted(set(re.findall(r"[a-z]+", text)))[::2]  # half the words: the others split into pieces
    chars = sorted({c for c in text if not c.isspace()} - set("城"))  # one [UNK]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + words
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return str(path)


SCRIPT = r'''
import json, os, sys
from absl import flags
from tests.originals import bert_run_squad
spec = json.loads(sys.argv[1])
rs = bert_run_squad()
from bert import tokenization
tokenizer = tokenization.FullTokenizer(spec["vocab"], do_lower_case=True)
result = {}
for version, path in spec["files"].items():
    flags.FLAGS.version_2_with_negative = version == "v2.0"
    for mode in ("train", "eval"):
        examples = rs.read_squad_examples(path, is_training=mode == "train")
        result[version + "/" + mode + "/examples"] = [
            [e.qas_id, e.question_text, e.doc_tokens, e.orig_answer_text, e.start_position, e.end_position,
             e.is_impossible] for e in examples]
        for L, stride, query in spec["configs"]:
            key = "%s/%s/%d-%d-%d" % (version, mode, L, stride, query)
            writer = rs.FeatureWriter(os.path.join(spec["out"], key.replace("/", "_") + ".tfrecord"), mode == "train")
            features = []
            def output(f):
                writer.process_feature(f)
                features.append([f.unique_id, f.example_index, f.doc_span_index, f.tokens,
                                 sorted(f.token_to_orig_map.items()), sorted(f.token_is_max_context.items()),
                                 f.input_ids, f.input_mask, f.segment_ids, f.start_position, f.end_position,
                                 f.is_impossible])
            rs.convert_examples_to_features(examples, tokenizer, L, stride, query, mode == "train", output)
            writer.close()
            result[key] = features
with open(os.path.join(spec["out"], "result.json"), "w") as f:
    json.dump(result, f)
'''


@pytest.fixture(scope="module")
def squad(tmp_path_factory):
    pytest.importorskip("bert.tokenization")
    root = tmp_path_factory.mktemp("squad")
    files = {}
    for version in ("v1.1", "v2.0"):
        path = root / f"train-{version}.json"
        path.write_text(json.dumps(squad_data(version == "v2.0"), ensure_ascii=False), encoding="utf-8")
        files[version] = str(path)
    out = root / "originals"
    out.mkdir()
    spec = {"files": files, "vocab": write_vocab(root / "vocab.txt"), "out": str(out), "configs": CONFIGS}
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                            cwd=repo, timeout=300,
                            env={**os.environ, "PYTHONPATH": repo, "CUDA_VISIBLE_DEVICES": "",
                                 "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "result.json", encoding="utf-8") as f:
        original = json.load(f)
    return dict(spec, root=root, original=original, log=result.stderr)


def _dump_examples(examples):
    return [[e.qas_id, e.question_text, list(e.doc_tokens), e.orig_answer_text, e.start_position,
             e.end_position, e.is_impossible] for e in examples]


def _dump_features(features, id_tokens=None):
    return [[f.unique_id, f.example_index, f.doc_span_index, list(f.tokens) if id_tokens is None else id_tokens(f),
             [list(p) for p in sorted(f.token_to_orig_map.items())],
             [list(p) for p in sorted(f.token_is_max_context.items())],
             list(f.input_ids), list(f.input_mask), list(f.segment_ids), f.start_position, f.end_position,
             f.is_impossible] for f in features]


def _records(path):
    """The records of a file, each re-serialized deterministically (the original's feature map order is
    the protobuf runtime's)."""
    import tensorflow as tf

    return [tf.train.Example.FromString(r.numpy()).SerializeToString(deterministic=True)
            for r in tf.data.TFRecordDataset(path)]


def _modes():
    return [(version, mode) for version in ("v1.1", "v2.0") for mode in ("train", "eval")]


# === Examples ===

def test_examples_equal_read_squad_examples(squad):
    count = 0
    for version, mode in _modes():
        for asked in (version, None):
            examples = read_squad(squad["files"][version], asked, is_training=mode == "train")
            assert all(isinstance(e, SquadExample) for e in examples)
            assert _dump_examples(examples) == squad["original"][f"{version}/{mode}/examples"], (version, mode)
            count += len(examples)
    assert count > 60
    train = read_squad(squad["files"]["v1.1"], "v1.1", is_training=True)
    ids = [e.qas_id for e in train]
    assert "smith-lost" not in ids and "smith-km" not in ids and "smith-born" in ids  # skipped, as theirs
    born = train[ids.index("smith-born")]
    assert born.doc_tokens[born.start_position] == "(1895-1943)."
    v2 = read_squad(squad["files"]["v2.0"], is_training=True)
    assert [e.qas_id for e in v2 if e.is_impossible] == ["smith-none", "long-none"]
    assert all(e.start_position == -1 and e.orig_answer_text == "" for e in v2 if e.is_impossible)
    assert "Could not find answer" in squad["log"]


def test_skipped_answers_are_printed(squad, capsys):
    read_squad(squad["files"]["v1.1"], is_training=True)
    printed = capsys.readouterr().out
    assert "Could not find answer" in printed and "'smith-lost'" in printed and "'smith-km'" in printed


def test_token_char_spans_give_the_words_back(squad):
    examples = read_squad(squad["files"]["v2.0"], is_training=False)
    contexts = [p["context"] for a in squad_data(True)["data"] for p in a["paragraphs"] for _ in p["qas"]]
    assert len(contexts) == len(examples)
    for context, example in zip(contexts, examples):
        spans = token_char_spans(context)
        assert [context[s:e] for s, e in spans] == list(example.doc_tokens)
        assert all(context[e:e + 1] in ("", " ", "\t", "\r", "\n", "\u202f") for _, e in spans)


# === Features ===

def _compare(squad, tokenize, special, to_ids=None, id_tokens=None):
    count = 0
    for version, mode in _modes():
        examples = read_squad(squad["files"][version], version, is_training=mode == "train")
        for length, stride, query in CONFIGS:
            key = f"{version}/{mode}/{length}-{stride}-{query}"
            features = convert_examples_to_features(examples, tokenize(examples), length, stride, query,
                                                    mode == "train", special, to_ids)
            expected = squad["original"][key]
            got = _dump_features(features, id_tokens)
            assert len(got) == len(expected), key
            for i, (a, b) in enumerate(zip(got, expected)):
                assert a == b, (key, i)
            count += len(got)
    return count


def test_features_with_the_original_wordpiece_equal_the_originals(squad):
    from tests.originals import bert_reference

    tokenization = pytest.importorskip("bert.tokenization")
    bert_reference(squad["vocab"], True)
    tokenizer = tokenization.FullTokenizer(squad["vocab"], do_lower_case=True)
    count = _compare(squad, lambda examples: tokenizer.tokenize, {"cls": "[CLS]", "sep": "[SEP]", "pad": 0},
                     tokenizer.convert_tokens_to_ids)
    assert count > 150


def test_features_with_our_bert_tokenizer_equal_the_originals(squad):
    from keras_pretrain.models.bert import BertTokenizer
    from tests.originals import bert_reference

    tokenization = pytest.importorskip("bert.tokenization")
    bert_reference(squad["vocab"], True)
    theirs = tokenization.FullTokenizer(squad["vocab"], do_lower_case=True)
    tokenizer = BertTokenizer(vocabulary=squad["vocab"], lowercase=True)
    special = {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id, "pad": tokenizer.pad_token_id}
    count = _compare(squad, lambda examples: word_tokenizer(tokenizer, examples), special,
                     id_tokens=lambda f: theirs.convert_ids_to_tokens(list(f.tokens)))
    assert count > 150
    # The cases are there: several windows, a cut question, positions inside / outside windows.
    features = squad["original"]["v2.0/train/40-7-9"]
    assert max(f[2] for f in features) >= 4
    assert any(f[9] == 0 and not f[11] for f in features) and any(f[9] > 0 for f in features)
    assert any(f[11] for f in features) and all(f[9] == 0 for f in features if f[11])
    assert any(not value for f in features for _, value in f[5])  # tokens outside their max context


def test_tfrecords_equal_the_feature_writers(squad, tmp_path):
    import tensorflow as tf

    from keras_pretrain.models.bert import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=squad["vocab"], lowercase=True)
    special = {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id}
    count = 0
    for version, mode in _modes():
        examples = read_squad(squad["files"][version], version, is_training=mode == "train")
        for length, stride, query in CONFIGS:
            key = f"{version}_{mode}_{length}-{stride}-{query}"
            features = convert_examples_to_features(examples, word_tokenizer(tokenizer, examples), length,
                                                    stride, query, mode == "train", special)
            path = str(tmp_path / f"{key}.tfrecord")
            assert write_features(features, path) == len(features)
            expected = _records(os.path.join(squad["out"], f"{key}.tfrecord"))
            got = _records(path)
            assert got == [r.numpy() for r in tf.data.TFRecordDataset(path)]  # written deterministically
            assert len(got) == len(expected) == len(features) and got == expected, key
            names = set(tf.train.Example.FromString(got[0]).features.feature)
            assert names == ({"unique_ids", "input_ids", "input_mask", "segment_ids"} |
                             ({"start_positions", "end_positions", "is_impossible"} if mode == "train" else set()))
            count += len(got)
    assert count > 150


def test_to_arrays():
    examples = [SquadExample("a", "who", ("x", "y", "z"), "y", 1, 1),
                SquadExample("b", "none", ("x",), "", -1, -1, True)]
    table = {"who": [5], "none": [6], "x": [7], "y": [8, 9], "z": [10]}
    features = convert_examples_to_features(examples, table.__getitem__, 10, 2, 4, True, {"cls": 2, "sep": 3})
    inputs, targets = to_arrays(features)
    np.testing.assert_array_equal(inputs["token_ids"], [[2, 5, 3, 7, 8, 9, 10, 3, 0, 0],
                                                        [2, 6, 3, 7, 3, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(inputs["segment_ids"][0], [0, 0, 0, 1, 1, 1, 1, 1, 0, 0])
    np.testing.assert_array_equal(inputs["padding_mask"][1], [1, 1, 1, 1, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(inputs["unique_ids"], [FIRST_UNIQUE_ID, FIRST_UNIQUE_ID + 1])
    np.testing.assert_array_equal(targets["start_positions"], [4, 0])
    np.testing.assert_array_equal(targets["end_positions"], [5, 0])
    np.testing.assert_array_equal(targets["is_impossible"], [0, 1])
    eval_inputs, eval_targets = to_arrays(convert_examples_to_features(examples, table.__getitem__, 10, 2, 4,
                                                                       False, {"cls": 2, "sep": 3}))
    assert eval_targets is None
    np.testing.assert_array_equal(eval_inputs["token_ids"], inputs["token_ids"])
    with pytest.raises(ValueError, match="`cls` and `sep`"):
        convert_examples_to_features(examples, table.__getitem__, 10, 2, 4, True, {"cls": 2})
    with pytest.raises(ValueError, match="no room"):
        convert_examples_to_features(examples, table.__getitem__, 4, 2, 4, True, {"cls": 2, "sep": 3})


# === Bad input ===

def _paragraph(context="a b c", qas=None):
    return {"context": context, "qas": qas if qas is not None else [
        {"id": "q1", "question": "?", "answers": [{"text": "b", "answer_start": 2}]}]}


def _file(tmp_path, content):
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("content, version, words", [
    ("{not json", None, ["not a JSON file"]),
    ('{"data": [{"paragraphs": [{"context": "caf\xe9", "qas": []}]}]}'.encode("latin-1"), None, ["not UTF-8"]),
    ({"version": "1.1"}, None, ["`data`"]),
    ([1, 2], None, ["`data`"]),
    ({"data": [{"title": "t"}]}, None, ["article 0", "`paragraphs`"]),
    ({"data": [{"paragraphs": [{"context": "a b"}]}]}, None, ["paragraph 0", "`qas`"]),
    ({"data": [{"paragraphs": [_paragraph(), {"qas": []}]}]}, None, ["paragraph 1", "`context`"]),
    ({"data": [{"paragraphs": [_paragraph(" \t\u202f\n")]}]}, None, ["empty context"]),
    ({"data": [{"paragraphs": [_paragraph("a b", [{"id": "q9", "question": "?",
                                                   "answers": [{"text": "b", "answer_start": 7}]}])]}]},
     None, ["'q9'", "answer_start=7", "outside"]),
    ({"data": [{"paragraphs": [_paragraph("a b", [{"id": "q8", "question": "?", "answers": [
        {"text": "a", "answer_start": 0}, {"text": "b", "answer_start": 2}]}])]}]}, None, ["'q8'", "exactly 1"]),
    ({"data": [{"paragraphs": [_paragraph("a b", [{"id": "q7", "question": "?",
                                                   "answers": [{"text": "b"}]}])]}]}, None, ["'q7'", "answer_start"]),
    ({"data": [{"paragraphs": [_paragraph("a b", [{"id": "q6", "question": "?", "answers": [],
                                                   "is_impossible": True}])]}]}, "v1.1", ["v2.0", "v1.1"]),
])
def test_bad_files_name_the_file(tmp_path, content, version, words):
    path = _file(tmp_path, content)
    with pytest.raises(CorpusFormatError) as info:
        read_squad(path, version, is_training=True)
    message = str(info.value)
    assert path in message, message
    for word in words:
        assert word in message, message


def test_versions_and_missing_files(tmp_path):
    with pytest.raises(CorpusFormatError, match="no such SQuAD file"):
        read_squad(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="version='v3'"):
        read_squad(_file(tmp_path, {"data": []}), "v3")
    v2 = {"version": "v2.0", "data": [{"paragraphs": [_paragraph("a b", [
        {"id": "q", "question": "?", "answers": [], "is_impossible": True}])]}]}
    with pytest.raises(CorpusFormatError, match="v2.0"):
        read_squad(_file(tmp_path, v2), "v1.1", is_training=False)  # refused in evaluation mode too
    assert read_squad(_file(tmp_path, v2), is_training=True)[0].is_impossible
    # v1.1 data read as v2.0: every question answerable.
    assert not read_squad(_file(tmp_path, {"data": [{"paragraphs": [_paragraph()]}]}), "v2.0", True)[0].is_impossible
