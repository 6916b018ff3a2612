"""ALBERT's SentencePiece SQuAD features against albert-tensorflow's `squad_utils`.

The reference is the PyPI copy (test extra) of google-research/albert `squad_utils.py`:
`read_squad_examples`, `convert_examples_to_features` (with its `FullTokenizer(spm_model_file=...)`) and
`FeatureWriter`, run once for the module in ONE subprocess under `tf.compat.v1` (the stubs of
`tests.originals.TF1_SUBPROCESS_STUBS`, as `test_glue.py`). Two variants of the original:

- "pypi": the installed copy as it is: it counts piece lengths in UTF-8 bytes, so on text that is not
  ASCII after `preprocess_text` its offsets drift or it fails (IndexError). It is run one example at a time
  and each example's features, or the name of the error it raised, are compared with ours with
  `legacy_byte_offsets=True`.
- "master": the same source with google-research/albert master's fix (`six.ensure_text(token)`, character
  lengths), compared with our default on whole files, both modes, lower-cased and not; its FeatureWriter
  files are compared with `write_features`' as parsed records.

A tiny unigram SentencePiece model (with `[CLS]`, `[SEP]` control pieces) is trained in the test on the
contexts; the SQuAD files have accents (composed and decomposed), CJK, an unknown character, ligatures
(NFKD "ﬁ" -> "fi"), a paragraph of ligatures only (their "MISMATCH DETECTED!": skipped), full-width and
ASCII punctuation, digit-comma pieces, runs of spaces, tabs and newlines, answers that start or end inside a
piece, answers at the ends of the context, impossible questions (v2.0) and long contexts that give several
windows (max_seq_length 64, doc_stride 16, max_query_length 12).
"""

import inspect
import io
import json
import os
import subprocess
import sys
import types

import pytest

from keras_pretrain.tasks.question_answering.features_sentencepiece import (
    FEATURE_NAMES,
    TRAINING_FEATURE_NAMES,
    align,
    convert_examples_to_features,
    sentencepiece_functions,
    write_features,
)
from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text as preprocess_text
from keras_pretrain.tasks.question_answering.squad import read_squad_examples
from keras_pretrain.errors import CorpusFormatError
from tests.originals import TF1_SUBPROCESS_STUBS

pytestmark = pytest.mark.tf_only

L, STRIDE, QLEN = 64, 16, 12

LONG = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, a region "
        "in France. They were descended from Norse raiders and pirates from Denmark, Iceland and Norway who, "
        "under their leader Rollo, agreed to swear fealty to King Charles III of West Francia. Through "
        "generations of assimilation and mixing with the native Frankish and Roman-Gaulish populations, "
        "their descendants would gradually merge with the Carolingian-based cultures of West Francia.")
ACCENTS = ("Café  naïve   RÉSUMÉ résumé, the cafe\u0301 near the Eglise\u0301 sold 1,000 croissants, 9, 10, "
           "and 2,500 baguettes in 2019; the chef's naïveté was famous.\tIt opened at 9:30\n\nand closed late.")
CJK = ("北京是中国的首都，有很多人。 Beijing (北京) is the capital of China; about 21,540,000 people live there. "
       "The ﬁrst ﬂoor of the museum shows the “Forbidden City” — a palace Ω built in 1420.")
PUNCT = ("  Football... is it?! Yes: football, basketball & baseball (the big three) -- all \"ball\" games; "
         "the word 'ball' ends each of them.   ")
LIGATURES = "ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ ﬁﬂ"


def _qa(qid, question, context, answer=None, nth=0, impossible=None):
    qa = {"id": qid, "question": question, "answers": []}
    if answer is not None:
        start = -1
        for _ in range(nth + 1):
            start = context.index(answer, start + 1)
        qa["answers"] = [{"text": answer, "answer_start": start}]
    if impossible is not None:
        qa["is_impossible"] = impossible
    return qa


def _paragraphs(v2):
    flag = False if v2 else None
    paragraphs = [
        (LONG, [_qa("long-1", "In what country is Normandy located?", LONG, "France", impossible=flag),
                _qa("long-2", "Who was the Norse leader?", LONG, "Rollo", impossible=flag),
                _qa("long-3", "What did their descendants merge with, in the end of the long paragraph?",
                    LONG, "Carolingian-based cultures of West Francia", impossible=flag),
                _qa("long-4", "The", LONG, "The Normans", impossible=flag)]),
        (ACCENTS, [_qa("acc-1", "What did the café sell?", ACCENTS, "1,000 croissants", impossible=flag),
                   _qa("acc-2", "Whose naïveté?", ACCENTS, "chef", impossible=flag),
                   _qa("acc-3", "Which church?", ACCENTS, "Eglise\u0301", impossible=flag),
                   _qa("acc-4", "When did it open?", ACCENTS, "9:30", impossible=flag),
                   _qa("acc-5", "Half a word?", ACCENTS, "sumé", impossible=flag),
                   _qa("acc-6", "Last words", ACCENTS, "closed late.", impossible=flag)]),
        (CJK, [_qa("cjk-1", "首都是哪里？", CJK, "北京", impossible=flag),
               _qa("cjk-2", "How many people live in Beijing?", CJK, "21,540,000", impossible=flag),
               _qa("cjk-3", "Which floor?", CJK, "ﬁrst ﬂoor", impossible=flag),
               _qa("cjk-4", "What city?", CJK, "“Forbidden City”", impossible=flag)]),
        (PUNCT, [_qa("p-1", "Which ball?", PUNCT, "ball", nth=1, impossible=flag),
                 _qa("p-2", "basket?", PUNCT, "basket", impossible=flag),
                 _qa("p-3", "What games?", PUNCT, "\"ball\" games", impossible=flag),
                 _qa("p-4", "Inside a piece", PUNCT, "otb", impossible=flag)]),
        (LIGATURES, [_qa("lig-1", "ligatures?", LIGATURES, "ﬁﬂ", impossible=flag)]),
    ]
    if v2:
        paragraphs[0][1].append(_qa("long-x", "What is the capital of Normandy?", LONG, impossible=True))
        paragraphs[2][1].append(_qa("cjk-x", "上海？", CJK, impossible=True))
        paragraphs[3][1].append(_qa("p-x", "Who won?", PUNCT, impossible=True))
    return [{"context": c, "qas": q} for c, q in paragraphs]


def write_squad(path, v2):
    data = {"version": "v2.0" if v2 else "1.1",
            "data": [{"title": "t", "paragraphs": _paragraphs(v2)[:3]},
                     {"title": "u", "paragraphs": _paragraphs(v2)[3:]}]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    return str(path)


def write_spm(path):
    import sentencepiece as spm

    lines = [preprocess_text(t, lower=lower) for t in (LONG, ACCENTS, CJK, PUNCT) for lower in (True, False)]
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines * 10), model_writer=buffer, vocab_size=200,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2,
                                   pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>",
                                   unk_piece="<unk>", control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    path.write_bytes(buffer.getvalue())
    return str(path)


# === The originals, in a subprocess ===

# What the tests compare of each feature (with `tokens` here, `cls_index` in test_features_xlnet).
FEATURE_FIELDS = ("unique_id", "example_index", "doc_span_index", "tok_start_to_orig_index",
                  "tok_end_to_orig_index", "token_is_max_context", "input_ids", "input_mask", "segment_ids",
                  "paragraph_len", "p_mask", "start_position", "end_position", "is_impossible")
BEAM_NAMES = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
PREDICTION_FILES = (("predictions.json", "-predictions.json"), ("nbest_predictions.json", "-nbest.json"),
                    ("null_odds.json", "-null_odds.json"))  # ours, the originals' suffix


def dump(feature, fields):
    """A feature's `fields` as JSON gives them back (tuples as lists, `token_is_max_context` as sorted pairs);
    the subprocesses run this same function (`HELPERS`) on the originals' features."""
    import json

    return json.loads(json.dumps({name: sorted(getattr(feature, name).items()) if name == "token_is_max_context"
                                  else getattr(feature, name) for name in fields}))


def collect(writer, fields):
    """`(dumps, features, output_fn)`, the `output_fn` of the originals' `convert_examples_to_features` (in the
    subprocesses): each feature kept, its `dump` too, and written by the original `FeatureWriter` `writer`."""
    dumps, features = [], []

    def output_fn(feature):
        dumps.append(dump(feature, fields))
        features.append(feature)
        writer.process_feature(feature)

    return dumps, features, output_fn


def beam(unique_id, length, start_n_top, end_n_top):
    """A seeded stand-in of the beam head's outputs for one window: (start_top_log_probs, start_top_index,
    end_top_log_probs, end_top_index, cls_logits); ends near their start, log-probs with 1 decimal (ties)."""
    import random

    rng = random.Random(unique_id)
    starts = rng.sample(range(length), start_n_top)
    ends = [s + d for s in starts for d in rng.sample(range(-2, 9), end_n_top)]
    return ([round(rng.gauss(-2, 1), 1) for _ in starts], starts, [round(rng.gauss(-2, 1), 1) for _ in ends],
            ends, round(rng.gauss(0, 2), 3))


def logits(unique_id, side, length):
    """Seeded stand-in start (`side` 0) or end (1) logits of one window."""
    import random

    rng = random.Random(unique_id * 2 + side)
    return [round(rng.gauss(0, 1), 2) for _ in range(length)]  # 2 decimals: ties happen


# The subprocesses' copies of the helpers they share with the tests.
HELPERS = "\n".join(inspect.getsource(function) for function in (dump, collect, beam, logits))


def run_originals(root, script, model_name, **spec):
    """Writes the SQuAD files (`v1`, `v2`) and a SentencePiece model under `root` and runs the originals'
    `script` on them in ONE subprocess (`HELPERS` in it; `spec`, with the files, the model, the output folder
    and the lengths, its argument). Returns `(files, model, out, the object of its result.json)`."""
    files = {"v1": write_squad(root / "v1.json", False), "v2": write_squad(root / "v2.json", True)}
    model = write_spm(root / model_name)
    out = root / "originals"
    out.mkdir()
    spec = dict(spec, files=files, model=model, out=str(out), L=L, stride=STRIDE, qlen=QLEN)
    result = subprocess.run([sys.executable, "-c", script.replace("HELPERS", HELPERS), json.dumps(spec)],
                            capture_output=True, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "result.json", encoding="utf-8") as f:
        return files, model, str(out), json.load(f)


def records(path):
    """The records of a TFRecord file: dicts feature name -> list of numbers (int64 or float)."""
    import tensorflow as tf

    found = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        found.append({k: list(v.int64_list.value) or list(v.float_list.value)
                      for k, v in example.features.feature.items()})
    return found


def beam_results(features):
    """`beam`'s stand-in beam of each feature, as the results `write_predictions_beam` reads."""
    return [types.SimpleNamespace(unique_id=f.unique_id, **dict(zip(BEAM_NAMES, beam(f.unique_id, L, 5, 5))))
            for f in features]


def assert_same_files(folder, stem, pairs):
    """Each of our prediction files in `folder` equals the original's `stem + suffix`, byte for byte."""
    for ours, theirs in pairs:
        with open(os.path.join(folder, ours), "rb") as a, open(stem + theirs, "rb") as b:
            assert a.read() == b.read(), ours


SCRIPT = r'''
import json, os, random, sys, types
spec = json.loads(sys.argv[1])
''' + TF1_SUBPROCESS_STUBS + r'''tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
import importlib.util
from albert import squad_utils as pypi, tokenization
OLD = """new_token = six.ensure_binary(token).replace(
          tokenization.SPIECE_UNDERLINE, b" ")"""
NEW = """new_token = six.ensure_text(token).replace(
          tokenization.SPIECE_UNDERLINE.decode("utf-8"), " ")"""
source = open(pypi.__file__, encoding="utf-8").read()
assert source.count(OLD) == 1
master = types.ModuleType("squad_utils_master")
master.__file__ = pypi.__file__
exec(compile(source.replace(OLD, NEW), "squad_utils_master", "exec"), master.__dict__)

def example(e):
    return [e.qas_id, e.question_text, e.paragraph_text, e.orig_answer_text, e.start_position,
            e.end_position, e.is_impossible]

HELPERS

result = {}
for lower in (True, False):
    tokenizer = tokenization.FullTokenizer(None, do_lower_case=lower, spm_model_file=spec["model"])
    for name, path in spec["files"].items():
        for training in (True, False):
            key = "%s/%s/%s" % (name, training, lower)
            examples = pypi.read_squad_examples(path, training)
            result["examples/" + key] = [example(e) for e in examples]
            writer = pypi.FeatureWriter(os.path.join(spec["out"], key.replace("/", "-") + ".tfrecord"), training)
            features, objects, output = collect(writer, spec["fields"])
            master.convert_examples_to_features(examples, tokenizer, spec["L"], spec["stride"], spec["qlen"],
                                                training, output, lower)
            writer.close()
            result["master/" + key] = features
            if not training:  # write_predictions_v1 on seeded logits (`logits`, the test's)
                results = [pypi.RawResult(unique_id=f.unique_id, start_log_prob=logits(f.unique_id, 0, spec["L"]),
                                          end_log_prob=logits(f.unique_id, 1, spec["L"])) for f in objects]
                for n_best, longest in ((20, 30), (3, 4)):
                    stem = os.path.join(spec["out"], "%s-%s-%s-%s" % (name, lower, n_best, longest))
                    result_dict = {}
                    pypi.accumulate_predictions_v1(result_dict, examples, objects, results, n_best, longest)
                    pypi.write_predictions_v1(result_dict, examples, objects, results, n_best, longest,
                                              stem + "-predictions.json", stem + "-nbest.json")
                    # the v2 model's post-processing on a seeded beam (`beam`, the tests')
                    beams = [pypi.RawResultV2(f.unique_id, *beam(f.unique_id, spec["L"], 5, 5)) for f in objects]
                    result_dict, cls_dict = {}, {}
                    pypi.accumulate_predictions_v2(result_dict, cls_dict, examples, objects, beams, n_best, longest,
                                                   5, 5)
                    pypi.write_predictions_v2(result_dict, cls_dict, examples, objects, beams, n_best, longest,
                                              stem + "-v2-predictions.json", stem + "-v2-nbest.json",
                                              stem + "-v2-null_odds.json", 0.0)
            each = []
            for e in examples:
                features = []
                try:
                    pypi.convert_examples_to_features([e], tokenizer, spec["L"], spec["stride"], spec["qlen"],
                                                      training, lambda f: features.append(dump(f, spec["fields"])),
                                                      lower)
                    each.append(features)
                except Exception as error:
                    each.append(type(error).__name__)
            result["pypi/" + key] = each
with open(os.path.join(spec["out"], "result.json"), "w") as f:
    json.dump(result, f)
'''


FIELDS = FEATURE_FIELDS + ("tokens",)


@pytest.fixture(scope="module")
def squad(tmp_path_factory):
    pytest.importorskip("albert.tokenization")  # squad_utils imports tf.contrib: only in the subprocess
    pytest.importorskip("sentencepiece")
    files, model, out, originals = run_originals(tmp_path_factory.mktemp("squad_spm"), SCRIPT, "albert.model",
                                                 fields=FIELDS)
    return dict(files=files, model=model, out=out, originals=originals)


def _functions(squad):
    import sentencepiece as spm

    return sentencepiece_functions(spm.SentencePieceProcessor(model_file=squad["model"]))


KEYS = [f"{name}/{training}/{lower}" for name in ("v1", "v2") for training in (True, False)
        for lower in (True, False)]


@pytest.mark.parametrize("key", KEYS)
def test_examples_equal_the_original(squad, key):
    name, training, _ = key.split("/")
    ours = read_squad_examples(squad["files"][name], is_training=training == "True")
    theirs = squad["originals"]["examples/" + key]
    assert [[e.qas_id, e.question_text, e.paragraph_text, e.orig_answer_text, e.start_position,
             e.end_position, e.is_impossible] for e in ours] == theirs


@pytest.mark.parametrize("key", KEYS)
def test_features_equal_masters(squad, key, tmp_path):
    name, training, lower = key.split("/")
    training, lower = training == "True", lower == "True"
    encode_pieces, piece_to_id, id_to_piece = _functions(squad)
    examples = read_squad_examples(squad["files"][name], is_training=training)
    features = convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN, training,
                                            lower, id_to_piece)
    theirs = squad["originals"]["master/" + key]
    assert len(features) == len(theirs) > len(examples)  # several windows
    for ours, original in zip(features, theirs):
        assert dump(ours, FIELDS) == original, ours.unique_id
    if training:  # windows without the answer are impossible
        assert any(f.is_impossible for f in features) and any(not f.is_impossible for f in features)
    path = str(tmp_path / "ours.tfrecord")
    assert write_features(features, path, training) == len(features)
    ours, original = records(path), records(os.path.join(squad["out"], key.replace("/", "-") + ".tfrecord"))
    assert ours == original
    assert set(ours[0]) == set(TRAINING_FEATURE_NAMES if training else FEATURE_NAMES)


@pytest.mark.parametrize("key", KEYS)
def test_legacy_byte_offsets_equal_the_pypi_copy(squad, key):
    """Example by example: the same features, or the same error, as the installed copy."""
    name, training, lower = key.split("/")
    training, lower = training == "True", lower == "True"
    encode_pieces, piece_to_id, id_to_piece = _functions(squad)
    examples = read_squad_examples(squad["files"][name], is_training=training)
    theirs = squad["originals"]["pypi/" + key]
    assert len(theirs) == len(examples)
    outcomes = set()
    for example, original in zip(examples, theirs):
        try:
            ours = [dump(f, FIELDS) for f in convert_examples_to_features(
                [example], encode_pieces, piece_to_id, L, STRIDE, QLEN, training, lower, id_to_piece,
                legacy_byte_offsets=True)]
        except Exception as error:  # noqa: BLE001 - the original's error, by name
            ours = type(error).__name__
        assert ours == original, example.qas_id
        outcomes.add(type(ours).__name__ if not isinstance(ours, str) else "error")
    assert outcomes == {"list", "error"}  # both happen on this data


def test_mismatch_is_skipped_without_a_unique_id(squad):
    encode_pieces, piece_to_id, _ = _functions(squad)
    assert align(LIGATURES, encode_pieces(preprocess_text(LIGATURES, lower=True))) is None
    examples = read_squad_examples(squad["files"]["v1"], is_training=False)
    assert examples[-1].paragraph_text == LIGATURES
    features = convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN)
    assert {f.example_index for f in features} == set(range(len(examples) - 1))
    assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))


def test_digit_comma_pieces(squad):
    encode_pieces, _, _ = _functions(squad)
    pieces = encode_pieces(preprocess_text("they sold 9, 10, and 1,000", lower=True))
    assert "," in pieces and not any(len(p) > 1 and p[-1] == "," and p[-2].isdigit() for p in pieces)


def test_bad_files(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "a b", "qas": [
        {"id": "1", "question": "q", "answers": []}]}]}]}), encoding="utf-8")
    assert len(read_squad_examples(str(path), is_training=False)) == 1
    with pytest.raises(CorpusFormatError, match="exactly 1 answer"):
        read_squad_examples(str(path), is_training=True)
    path.write_text("not json", encoding="utf-8")
    with pytest.raises(CorpusFormatError):
        read_squad_examples(str(path))


def test_albert_tokenizer_feeds_the_pieces(squad):
    """Our in-graph `AlbertTokenizer` gives the ids of `encode_pieces` + `piece_to_id`; its ids read back
    as pieces (`id_to_token`) feed `convert_examples_to_features` with the same features as the original
    where no piece is unknown (all of this data). An unknown character reads back as "<unk>", not as its
    surface piece, which the alignment needs: use a `SentencePieceProcessor` of the same model there."""
    from keras_pretrain.models.albert import AlbertTokenizer

    tokenizer = AlbertTokenizer(squad["model"], lowercase=True)
    examples = read_squad_examples(squad["files"]["v2"], is_training=True)
    texts = sorted({preprocess_text(t, lower=True) for e in examples for t in (e.question_text, e.paragraph_text)}
                   | {"a snowman \u2603 here"})
    ids = tokenizer(texts)
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    table = {text: [tokenizer.id_to_token(int(i)) for i in row] for text, row in zip(texts, ids)}
    encode_pieces, piece_to_id, id_to_piece = _functions(squad)
    for text in texts:
        assert [piece_to_id(p) for p in table[text]] == [piece_to_id(p) for p in encode_pieces(text)]
    assert "<unk>" in table["a snowman \u2603 here"] and "\u2603" in encode_pieces("a snowman \u2603 here")
    features = convert_examples_to_features(examples, table.__getitem__, tokenizer.token_to_id, L, STRIDE, QLEN,
                                            True, True, tokenizer.id_to_token)
    assert [dump(f, FIELDS) for f in features] == squad["originals"]["master/v2/True/True"]


def _evaluation_features(squad, name, lower):
    """(examples, features) of the `name` file in evaluation mode, lower-cased or not."""
    encode_pieces, piece_to_id, id_to_piece = _functions(squad)
    examples = read_squad_examples(squad["files"][name], is_training=False)
    return examples, convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN, False,
                                                  lower, id_to_piece)


@pytest.mark.parametrize("name", ["v1", "v2"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n_best, longest", [(20, 30), (3, 4)])
def test_predictions_equal_write_predictions_v1(squad, name, lower, n_best, longest, tmp_path):
    """albert's `accumulate_predictions_v1` + `write_predictions_v1` files, byte for byte, on seeded logits."""
    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_sentencepiece as write_predictions

    examples, features = _evaluation_features(squad, name, lower)
    results = [types.SimpleNamespace(unique_id=f.unique_id, start_logits=logits(f.unique_id, 0, L),
                                     end_logits=logits(f.unique_id, 1, L)) for f in features]
    predictions, nbest = write_predictions(examples, features, results, n_best, longest)
    write_prediction_files(str(tmp_path), predictions, nbest)
    assert_same_files(tmp_path, os.path.join(squad["out"], f"{name}-{lower}-{n_best}-{longest}"),
                      PREDICTION_FILES[:2])
    assert any(p for p in predictions.values())
    assert n_best < 20 or len({len(v) for v in nbest.values()}) > 1  # distinct texts dropped, some lists short


@pytest.mark.parametrize("name", ["v1", "v2"])
@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("n_best, longest", [(20, 30), (3, 4)])
def test_beam_predictions_equal_write_predictions_v2(squad, name, lower, n_best, longest, tmp_path):
    """albert's `accumulate_predictions_v2` + `write_predictions_v2` (threshold 0) files, byte for byte, on a
    seeded beam of the answer-class head."""
    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_beam as write_predictions

    examples, features = _evaluation_features(squad, name, lower)
    predictions, nbest, null_odds = write_predictions(examples, features, beam_results(features), n_best, longest,
                                                      5, 5, "albert", 0.0)
    write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    assert_same_files(tmp_path, os.path.join(squad["out"], f"{name}-{lower}-{n_best}-{longest}-v2"),
                      PREDICTION_FILES)
    assert any(predictions.values()) and "" in predictions.values()
