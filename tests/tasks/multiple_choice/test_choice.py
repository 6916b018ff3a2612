"""Multiple-choice data (SWAG, RACE): readers, features, TFRecords, against the originals.

The XLNet RACE reference is xlnet-tensorflow's `run_race.py` (PyPI `xlnet-tensorflow`: `get_examples`,
`convert_single_example`, `file_based_convert_examples_to_features` and its `tokenize_fn`, i.e.
`prepro_utils.preprocess_text` + `encode_ids`), run unchanged in a subprocess (its absl flags would clash
with other authors' modules in one process) on a tiny RACE folder and a tiny SentencePiece model with
XLNet's special pieces at the ids `xlnet.data_utils` hard-codes (`<cls>` = 3, `<sep>` = 4). Two things
are supplied around it, neither inside the functions compared:

- `sys.modules["tensorflow"] = tf.compat.v1` before the import: the module is TF1 code and calls
  `tf.gfile.ListDirectory` / `tf.gfile.Open` / `tf.gfile.Exists`, `tf.python_io.TFRecordWriter` and
  `tf.logging`, which TF2 has only under `compat.v1` (the same functions, renamed); `tf.train.Example`
  and the feature protos are the same objects in both.
- the absl flags it reads (`max_seq_length`, `max_qa_length`, `high_only`, `middle_only`,
  `overwrite_data`): the PyPI copy has no `flags.DEFINE_*` calls (upstream defines them at module level),
  so the script defines them with upstream's types and parses an argv.

Our side tokenizes with our own `XLNetTokenizer` on the same model (held equal to the original's
`encode_ids(sp, preprocess_text(...))` by `tests/models/xlnet/test_xlnet_tokenizer_fuzz.py`).
"""

import csv
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from keras_pretrain.tasks.multiple_choice import data as choice
from keras_pretrain.data import packing
from keras_pretrain.errors import CorpusFormatError

pytestmark = pytest.mark.tf_only  # readers, features and tf.data: backend independent

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
T, QA = 40, 12  # max_seq_length, max_qa_length of the XLNet comparison
EVAL_BATCH = 8  # run_race.py pads its evaluation examples to a multiple of the batch size

LONG = ("Tom lived in a small town near the river. Every morning he walked to the old school with his sister "
        "Mary, and every evening they played in the park until the sun went down. One day a stranger came "
        "to the town and told the children a story about a café far away where the bread was always warm.")
SHORT = "Mary likes apples. Tom likes the river."
MEDIUM = "The teacher asked the children to write a story about the park near the school."

# (level, file name, article, [(question, [4 options], answer)]).
RACE_FILES = [
    ("high", "h3.txt", LONG, [
        ("Where did Tom walk every morning?", ["to the park", "to the old school with his sister", "to the river",
                                                "to a café far away where the bread was always warm"], "B"),
        ("The stranger told the children a story about _ .", ["a café", "the sun", "a river", "the school"], "A"),
        ("Tom and Mary played in the park until _", ["the sun went down", "morning", "the stranger came",
                                                    "the teacher asked"], "A"),
    ]),
    ("high", "h10.txt", SHORT, [
        ("What does Mary like?", ["apples", "the river", "the park", "bread"], "A"),
        ("Tom likes _ .", ["apples", "the river and the old school with his sister every morning", "bread",
                           "stories"], "B"),
    ]),
    ("high", "h1.txt", MEDIUM, [
        ("What did the teacher ask?", ["to play", "to write a story", "to walk", "to sleep"], "B"),
    ]),
    ("middle", "m2.txt", SHORT + " " + MEDIUM, [
        ("Who likes the river?", ["Tom", "Mary", "the teacher", "the stranger"], "A"),
        ("The children wrote a story about the _ near the school.", ["river", "park", "town", "café"], "B"),
        ("Tom saw the _ and Mary saw the _ too.", ["river", "park", "school", "town"], "C"),
    ]),
    ("middle", "m11.txt", LONG + " " + MEDIUM, [
        ("What was always warm?", ["the river", "the bread", "the sun", "the park"], "B"),
    ]),
]

ORIGINAL = r'''
import json, sys
import tensorflow as tf
sys.modules["tensorflow"] = tf.compat.v1  # run_race.py is TF1 code: tf.gfile, tf.python_io, tf.logging
from absl import flags
# The PyPI copy of run_race.py defines no flags (upstream does, at module level): the ones it reads.
flags.DEFINE_integer("max_seq_length", 512, "")
flags.DEFINE_integer("max_qa_length", 128, "")
flags.DEFINE_bool("high_only", False, "")
flags.DEFINE_bool("middle_only", False, "")
flags.DEFINE_bool("overwrite_data", False, "")
data_dir, model_file, record_file, out, seq, qa, batch = sys.argv[1:]
flags.FLAGS(["run_race", "--max_seq_length=" + seq, "--max_qa_length=" + qa])
import sentencepiece as spm
from xlnet import run_race, data_utils
from xlnet.prepro_utils import preprocess_text, encode_ids

sp = spm.SentencePieceProcessor()
sp.Load(model_file)
def tokenize_fn(text):  # run_race.main's, with --uncased=False
    return encode_ids(sp, preprocess_text(text, lower=False))

examples = run_race.get_examples(data_dir, "dev")
result = {"cls": data_utils.CLS_ID, "sep": data_utils.SEP_ID,
          "examples": [[e.context, e.qa_list, e.label, e.level] for e in examples]}
flags.FLAGS.high_only = True
result["high_only"] = [[e.context, e.qa_list, e.label, e.level] for e in run_race.get_examples(data_dir, "dev")]
while len(examples) % int(batch):
    examples.append(run_race.PaddingInputExample())
features = [run_race.convert_single_example(e, tokenize_fn) for e in examples]
result["features"] = [[f.input_ids, f.input_mask, f.segment_ids, f.label_id, int(f.is_real_example)]
                      for f in features]
run_race.file_based_convert_examples_to_features(examples, tokenize_fn, record_file)
with open(out, "w") as f:
    json.dump(result, f)
'''


def _write_race(root):
    for level, name, article, qas in RACE_FILES:
        folder = root / "RACE" / "dev" / level
        folder.mkdir(parents=True, exist_ok=True)
        record = {"answers": [a for _, _, a in qas], "options": [o for _, o, _ in qas],
                  "questions": [q for q, _, _ in qas], "article": article, "id": name}
        (folder / name).write_text(json.dumps(record), encoding="utf-8")
    return root / "RACE"


@pytest.fixture(scope="module")
def xlnet_setup(tmp_path_factory):
    """The RACE folder, the SentencePiece model, and what run_race.py made of them."""
    spm = pytest.importorskip("sentencepiece")
    if importlib.util.find_spec("xlnet") is None:  # imported in the subprocess only (TF1 code)
        pytest.skip("xlnet-tensorflow is not installed")
    root = tmp_path_factory.mktemp("race")
    race = _write_race(root)
    texts = []
    for _, _, article, qas in RACE_FILES:
        texts.append(article)
        for question, options, _ in qas:
            texts += [question] + options
    model = root / "spiece.model"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts * 5), model_prefix=str(root / "spiece"), vocab_size=120,
        model_type="unigram", unk_id=0, bos_id=1, eos_id=2, pad_id=-1, hard_vocab_limit=False,
        control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"], character_coverage=1.0,
        num_threads=1, minloglevel=2)
    out, records = root / "original.json", root / "original.tfrecord"
    result = subprocess.run(
        [sys.executable, "-c", ORIGINAL, str(race), str(model), str(records), str(out), str(T), str(QA),
         str(EVAL_BATCH)], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out) as f:
        original = json.load(f)
    return race, str(model), original, str(records)


@pytest.fixture(scope="module")
def ours(xlnet_setup):
    """Our examples (listing order, as run_race.py), our tokenizer and its special ids."""
    from keras_pretrain.models.xlnet import XLNetTokenizer

    race, model, original, _ = xlnet_setup
    examples = choice.read_race(race, "dev", sort_files=False)
    tokenizer = XLNetTokenizer(proto=model)
    texts = sorted({e.context for e in examples} | {c for e in examples for c in e.choices})
    ids = tokenizer(texts)
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    table = {text: [int(i) for i in row] for text, row in zip(texts, ids)}
    special = {"cls": tokenizer.token_to_id("<cls>"), "sep": tokenizer.token_to_id("<sep>")}
    return examples, table.__getitem__, special


def _as_original(example):
    return [example.context, example.choices, example.label, example.guid.split("-")[1]]


def test_race_reader_equals_run_race(xlnet_setup, ours):
    race, _, original, _ = xlnet_setup
    examples = ours[0]
    assert len(original["examples"]) == len(examples) == sum(len(qas) for *_, qas in RACE_FILES) == 10
    assert [_as_original(e) for e in examples] == original["examples"]
    # Both kinds of question, and the labels of the files.
    assert sum("_" in e.question for e in examples) == 5
    assert any(c == "Tom saw the park and Mary saw the park too." for e in examples for c in e.choices)  # every _
    assert all("_" not in c for e in examples for c in e.choices)
    assert examples[0].guid.startswith("dev-middle-")  # run_race.py reads "middle" first
    # --high_only is levels=("high",).
    high = choice.read_race(race, "dev", levels=("high",), sort_files=False)
    assert [_as_original(e) for e in high] == original["high_only"] and len(high) == 6
    # Sorted (the default): the same examples, file by file in name order.
    ordered = choice.read_race(race, "dev")
    assert sorted(map(repr, map(_as_original, ordered))) == sorted(map(repr, original["examples"]))
    names = [e.guid.rsplit("-", 1)[0] for e in ordered]
    files = list(dict.fromkeys(names))
    assert files == ["dev-middle-m11", "dev-middle-m2", "dev-high-h1", "dev-high-h10", "dev-high-h3"]


def test_xlnet_features_equal_run_race_record_for_record(xlnet_setup, ours):
    _, _, original, _ = xlnet_setup
    examples, tokenize, special = ours
    assert special == {"cls": original["cls"], "sep": original["sep"]} == {"cls": 3, "sep": 4}
    features = choice.convert_choice_examples(examples, T, tokenize, "xlnet", special, max_qa_length=QA,
                                              pad_to_multiple_of=EVAL_BATCH, xlnet_context_aliasing=True)
    assert len(features) == len(original["features"]) == 16  # 10 real, 6 padding records
    for i, (mine, theirs) in enumerate(zip(features, original["features"])):
        got = [mine.input_ids, mine.input_mask, mine.segment_ids, mine.label_id, mine.is_real_example]
        assert got == theirs, f"record {i}"
    assert sum(f.is_real_example for f in features) == 10
    # The fixture exercises every branch: question+option cut to its last QA tokens, articles cut,
    # short articles not cut (where run_race.py's context grows: the records differ without aliasing).
    assert any(len(tokenize(c)) > QA for e in examples for c in e.choices)
    rows = np.asarray([f.input_mask for f in features[:10]]).reshape(-1, T)
    assert (rows[:, 0] == 0).sum() >= 4 and (rows[:, 0] == 1).sum() >= 4  # full rows and padded rows


def test_xlnet_features_without_aliasing(xlnet_setup, ours):
    """The default packs every choice with the article alone. Where the article is cut for every choice,
    run_race.py's context never grows and the records are equal; elsewhere some differ."""
    _, _, original, _ = xlnet_setup
    examples, tokenize, special = ours
    features = choice.convert_choice_examples(examples, T, tokenize, "xlnet", special, max_qa_length=QA)
    assert len(features) == 10
    same = differ = 0
    for example, mine, theirs in zip(examples, features, original["features"]):
        context = tokenize(example.context)
        equal = [mine.input_ids, mine.input_mask, mine.segment_ids, mine.label_id] == theirs[:4]
        same, differ = same + equal, differ + (not equal)
        if all(len(context) + min(len(tokenize(c)), QA) > T - 3 for c in example.choices):
            assert equal, example.guid
        # Independently: each row is pad* + context head + <sep> + qa tail + <sep> <cls>.
        for j, text in enumerate(example.choices):
            row = mine.input_ids[j * T:(j + 1) * T]
            mask = mine.input_mask[j * T:(j + 1) * T]
            segments = mine.segment_ids[j * T:(j + 1) * T]
            qa = tokenize(text)[-QA:]
            n_ctx = min(len(context), T - 3 - len(qa))
            n = n_ctx + len(qa) + 3
            assert row == [0] * (T - n) + context[:n_ctx] + [4] + qa + [4, 3]
            assert mask == [1.0] * (T - n) + [0.0] * n
            assert segments == [4] * (T - n) + [0] * (n_ctx + 1) + [1] * (len(qa) + 1) + [2]
    assert same >= 3 and differ >= 2, (same, differ)


def test_tfrecords_equal_run_race_file(xlnet_setup, ours, tmp_path):
    import tensorflow as tf

    _, _, _, their_file = xlnet_setup
    examples, tokenize, special = ours
    features = choice.convert_choice_examples(examples, T, tokenize, "xlnet", special, max_qa_length=QA,
                                              pad_to_multiple_of=EVAL_BATCH, xlnet_context_aliasing=True)
    our_file = str(tmp_path / "ours.tfrecord")
    assert choice.write_choice_features(features, our_file) == 16

    def parsed(path):  # every feature of every record, names and value kinds as written
        out = []
        for record in tf.data.TFRecordDataset(path).as_numpy_iterator():
            example = tf.train.Example.FromString(record)
            out.append({name: (feature.WhichOneof("kind"), list(getattr(feature, feature.WhichOneof("kind")).value))
                        for name, feature in example.features.feature.items()})
        return out

    theirs = parsed(their_file)
    assert len(theirs) == 16 and parsed(our_file) == theirs
    assert set(theirs[0]) == set(choice.FEATURE_NAMES) and theirs[0]["input_mask"][0] == "float_list"
    # Our dataset reads their file: the model inputs of `to_arrays`, [C, T] per example.
    arrays = choice.to_arrays(features)
    assert arrays["token_ids"].shape == (16, 4, T)
    rows = list(choice.choice_feature_dataset(their_file, 4, T, "xlnet").as_numpy_iterator())
    assert len(rows) == 16
    for name in ("token_ids", "segment_ids", "padding_mask"):
        got = np.stack([x[name] for x, _ in rows])
        assert got.dtype == np.int32 and np.array_equal(got, arrays[name]), name
    assert np.array_equal([y for _, y in rows], arrays["label_ids"])
    assert np.array_equal(arrays["padding_mask"][:10], 1 - np.asarray(
        [f.input_mask for f in features[:10]]).reshape(10, 4, T))
    raw = next(iter(choice.choice_feature_dataset(our_file, 4, T, "xlnet", raw=True)))
    assert raw["input_mask"].dtype == tf.float32 and raw["input_ids"].shape == (4 * T,)


# --- BERT-style features ----------------------------------------------------------------------------


class _Words:
    """Whitespace tokenizer giving each new word the next id from 10 (cls 1, sep 2, pad 0)."""

    def __init__(self):
        self.ids = {}

    def __call__(self, text):
        return [self.ids.setdefault(w, 10 + len(self.ids)) for w in text.split()]


def _expected_lengths(la, lb, budget):
    """Longest-first lengths in closed form: cut the longer down to the other, then alternately,
    the second segment first on a tie."""
    excess = max(0, la + lb - budget)
    first = min(excess, abs(la - lb))
    rest = excess - first
    if la > lb:
        la -= first
    else:
        lb -= first
    return la - rest // 2, lb - (rest + 1) // 2


def test_bert_features_hand_computed():
    words = _Words()
    example = choice.ChoiceExample("g", "a b c d e", "q", ["x", "y y y y y y"], label=1)
    # max_seq_length 8: 5 tokens for the pair. Choice 0 (5 + 2): the context loses 2. Choice 1 (5 + 7):
    # the choice down to 5, then one each, the choice first on the tie: (3, 2).
    (f,) = choice.convert_choice_examples([example], 8, words, "bert", {"cls": 1, "sep": 2, "pad": 0})
    a, b, c, q, x, y = (words.ids[w] for w in "a b c q x y".split())
    assert f.input_ids == [1, a, b, c, 2, q, x, 2] + [1, a, b, c, 2, q, y, 2]
    assert f.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1] * 2
    assert f.input_mask == [1] * 16 and f.label_id == 1 and f.is_real_example == 1
    (long,) = choice.convert_choice_examples([example], 12, words, "bert", {"cls": 1, "sep": 2})
    d, e = words.ids["d"], words.ids["e"]
    assert long.input_ids[:12] == [1, a, b, c, d, e, 2, q, x, 2, 0, 0]
    assert long.input_mask[:12] == [1] * 10 + [0] * 2 and long.segment_ids[:12] == [0] * 7 + [1] * 3 + [0] * 2
    assert long.input_ids[12:] == [1, a, b, c, d, e, 2, q, y, y, y, 2]  # (5, 7) -> (5, 5) -> (5, 4)
    # RoBERTa's packing: <s> A </s></s> B </s> (4 special tokens).
    (rob,) = choice.convert_choice_examples([example], 9, words, "bert", {"cls": 5, "sep": 6, "pad": 7},
                                            packing=packing.ROBERTA)
    assert rob.input_ids == [5, a, b, c, 6, 6, q, x, 6] + [5, a, b, c, 6, 6, q, y, 6]
    assert rob.segment_ids == [0, 0, 0, 0, 0, 1, 1, 1, 1] * 2


def test_bert_truncation_is_longest_first():
    rng = np.random.default_rng(0)
    words = _Words()
    examples = []
    for i in range(40):
        context = " ".join(f"c{i}_{k}" for k in range(rng.integers(1, 30)))
        endings = [" ".join(f"e{i}_{j}_{k}" for k in range(rng.integers(1, 30))) for j in range(3)]
        examples.append(choice.ChoiceExample(str(i), context, "", endings, label=int(rng.integers(3)),
                                             choices=endings))
    seq = 24
    features = choice.convert_choice_examples(examples, seq, words, "bert", {"cls": 1, "sep": 2, "pad": 0})
    cut = 0
    for example, f in zip(examples, features):
        context = words(example.context)
        for j, text in enumerate(example.choices):
            ending = words(text)
            la, lb = _expected_lengths(len(context), len(ending), seq - 3)
            cut += (la, lb) != (len(context), len(ending))
            row = [1] + context[:la] + [2] + ending[:lb] + [2]
            assert f.input_ids[j * seq:(j + 1) * seq] == row + [0] * (seq - len(row))
            assert f.input_mask[j * seq:(j + 1) * seq] == [1] * len(row) + [0] * (seq - len(row))
    assert cut > 40
    arrays = choice.to_arrays(features)
    assert arrays["token_ids"].shape == (40, 3, seq) and arrays["padding_mask"].sum() == sum(
        sum(f.input_mask) for f in features)
    assert choice.truncate_longest_first([1, 2], [3, 4], 3) == ([1, 2], [3])


def test_bert_tfrecords_round_trip(tmp_path):
    words = _Words()
    examples = [choice.ChoiceExample(str(i), f"the context {i}", "it", [f"goes {i}", "stops", "turns"],
                                     label=i % 3) for i in range(5)]
    features = choice.convert_choice_examples(examples, 10, words, "bert", {"cls": 1, "sep": 2},
                                              pad_to_multiple_of=4)
    assert len(features) == 8 and [f.is_real_example for f in features] == [1] * 5 + [0] * 3
    path = str(tmp_path / "swag.tfrecord")
    assert choice.write_choice_features(features, path) == 8
    rows = list(choice.choice_feature_dataset(path, 3, 10, "bert").as_numpy_iterator())
    arrays = choice.to_arrays(features)
    for name in ("token_ids", "segment_ids", "padding_mask"):
        assert np.array_equal(np.stack([x[name] for x, _ in rows]), arrays[name])
    assert [int(y) for _, y in rows] == [0, 1, 2, 0, 1, 0, 0, 0]
    assert arrays["padding_mask"][5:].sum() == 0 and arrays["padding_mask"][0, 0].sum() == 9  # [CLS] 3 [SEP] 3 [SEP]


# --- SWAG --------------------------------------------------------------------------------------------

SWAG_HEADER = ["", "video-id", "fold-ind", "startphrase", "sent1", "sent2", "gold-source",
               "ending0", "ending1", "ending2", "ending3", "label"]
SWAG_ROWS = [
    ["0", "anetv_1", "5", "Members of the team wait. They", "Members of the team wait.", "They", "gold",
     "run off the field.", "sit down, quietly.", "say \"hello\" to the crowd.", "jump.", "2"],
    ["1", "lsmdc_2", "18", "Someone opens the door. He", "Someone opens the door.", "He", "gen",
     "walks in.", "closes it.", "looks around, then leaves.", "smiles.", "0"],
    ["2", "lsmdc_3", "7", "A man plays the piano. The crowd", "A man plays the piano.", "The crowd", "gold",
     "cheers.", "sleeps.", "sings along.", "leaves the hall.", "3"],
]


def _write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([header] + rows)
    return str(path)


def test_swag_reader_column_rule(tmp_path):
    train = choice.read_swag(_write_csv(tmp_path / "train.csv", SWAG_HEADER, SWAG_ROWS))
    assert len(train) == 3
    for example, row in zip(train, SWAG_ROWS):
        assert example.context == row[4] and example.question == row[5]
        assert example.endings == row[7:11]
        assert example.choices == [row[5] + " " + ending for ending in row[7:11]]
        assert example.label == int(row[11]) and example.guid == f"train-{row[2]}"
    assert train[0].endings[2] == 'say "hello" to the crowd.'  # CSV quoting
    # The test file has no label column; a file without the leading index column reads the same.
    test = choice.read_swag(_write_csv(tmp_path / "test.csv", SWAG_HEADER[1:-1], [r[1:-1] for r in SWAG_ROWS]))
    assert [e.label for e in test] == [None] * 3
    assert [e.choices for e in test] == [e.choices for e in train]
    features = choice.convert_choice_examples(test, 16, _Words(), "bert", {"cls": 1, "sep": 2})
    assert [f.label_id for f in features] == [0, 0, 0]


@pytest.mark.parametrize("case, expected", [
    ("missing column", "missing column(s) ending3"),
    ("label out of range", "line 3: label 4 is outside 0..3"),
    ("label not an integer", "line 2: label '1.0' is not an integer"),
    ("empty label", "line 4: label '' is not an integer"),
    ("short row", "line 3: 11 fields, the header has 12"),
    ("not utf-8", "line 3: not UTF-8"),
    ("no rows", "no example after the header"),
])
def test_swag_bad_inputs_name_the_file(tmp_path, case, expected):
    header, rows = list(SWAG_HEADER), [list(r) for r in SWAG_ROWS]
    if case == "missing column":
        header, rows = header[:10] + header[11:], [r[:10] + r[11:] for r in rows]
    elif case == "label out of range":
        rows[1][-1] = "4"
    elif case == "label not an integer":
        rows[0][-1] = "1.0"
    elif case == "empty label":
        rows[2][-1] = ""
    elif case == "short row":
        rows[1] = rows[1][:-1]
    elif case == "no rows":
        rows = []
    path = _write_csv(tmp_path / "val.csv", header, rows)
    if case == "not utf-8":
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
        lines[2] = lines[2].replace(b"walks", b"w\xe9lks")
        with open(path, "wb") as f:
            f.write(b"\n".join(lines))
    with pytest.raises(CorpusFormatError) as info:
        choice.read_swag(path)
    assert path in str(info.value) and expected in str(info.value), str(info.value)


# --- RACE errors ---------------------------------------------------------------------------------------


def _race_record(**changes):
    record = {"article": SHORT, "questions": ["What does Mary like?", "Tom likes _ ."],
              "options": [["apples", "pears", "bread", "rice"], ["apples", "the river", "bread", "fish"]],
              "answers": ["A", "B"], "id": "high1.txt"}
    record.update(changes)
    return json.dumps(record).encode()


@pytest.mark.parametrize("case, content, expected", [
    ("answer letter", _race_record(answers=["A", "E"]), "question 1: answer 'E' is not one of A, B, C, D"),
    ("lower-case answer", _race_record(answers=["a", "B"]), "question 0: answer 'a' is not one of"),
    ("three options", _race_record(options=[["a", "b", "c", "d"], ["a", "b", "c"]]),
     "question 1: 3 options, expected 4"),
    ("count mismatch", _race_record(answers=["A"]), "2 questions, 2 option lists and 1 answers"),
    ("missing key", b'{"article": "x", "questions": [], "options": []}', "no 'answers' key"),
    ("not an object", b'["x"]', "expected a JSON object, found list"),
    ("not json", b'{"article": "x",\n "questions": [', "line 2: not JSON"),
    ("not utf-8", b'{"article": "caf\xe9"}', "line 1: not UTF-8"),
])
def test_race_bad_files_name_the_file(tmp_path, case, content, expected):
    folder = tmp_path / "RACE" / "train" / "high"
    folder.mkdir(parents=True)
    (tmp_path / "RACE" / "train" / "middle").mkdir()
    (folder / "1.txt").write_bytes(_race_record())
    (folder / "2.txt").write_bytes(content)
    with pytest.raises(CorpusFormatError) as info:
        choice.read_race(tmp_path / "RACE", "train")
    message = str(info.value)
    assert str(folder / "2.txt") in message and expected in message, message


def test_race_missing_folder_and_empty_split(tmp_path):
    (tmp_path / "RACE" / "dev" / "high").mkdir(parents=True)
    (tmp_path / "RACE" / "dev" / "high" / "1.txt").write_bytes(_race_record())
    with pytest.raises(CorpusFormatError, match="RACE folder not found") as info:
        choice.read_race(tmp_path / "RACE", "dev")
    assert str(tmp_path / "RACE" / "dev" / "middle") in str(info.value)
    assert len(choice.read_race(tmp_path / "RACE", "dev", levels=("high",))) == 2
    (tmp_path / "RACE" / "test" / "high").mkdir(parents=True)
    (tmp_path / "RACE" / "test" / "middle").mkdir(parents=True)
    with pytest.raises(CorpusFormatError, match="empty split") as info:
        choice.read_race(tmp_path / "RACE", "test")
    assert str(tmp_path / "RACE" / "test") in str(info.value)


def test_the_finetune_recipe_gives_xlnet_on_race_run_races_features(xlnet_setup, ours):
    """`recipes.finetune --task race` on XLNet trains on these features (run_race.py's packing, the
    question+option kept to a quarter of the length), not on the generic pair packing."""
    from keras_pretrain import families
    from keras_pretrain.models.xlnet import XLNetTokenizer
    from recipes import finetune_data
    from recipes import finetune_tasks

    race, model, _, _ = xlnet_setup
    examples, tokenize, special = ours
    family = families.get("xlnet")
    text = family.preprocessor_class(family, XLNetTokenizer(proto=model))
    data = finetune_data.TaskData("race", finetune_data.CHOICE, None, examples, [])
    got = finetune_tasks.encode(text, data, examples, T, None)
    expected = choice.to_arrays(choice.convert_choice_examples(examples, T, tokenize, "xlnet", special,
                                                               max_qa_length=T // 4))
    for name in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(got[name], expected[name], err_msg=name)
    generic = text.encode_choices([e.context for e in examples], [e.choices for e in examples], T)
    assert not np.array_equal(generic["token_ids"], got["token_ids"])  # the truncation differs
