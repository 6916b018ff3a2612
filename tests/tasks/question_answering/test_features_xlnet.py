"""XLNet's SQuAD features against xlnet-tensorflow's `run_squad.py` (the PyPI release, test extra): its
`read_squad_examples`, `convert_examples_to_features` (with its `FLAGS.uncased` both ways) and `FeatureWriter`,
run once in ONE subprocess under `tf.compat.v1`, on the tricky SQuAD files of test_squad_sentencepiece (accents
composed and decomposed, CJK, ligatures and a paragraph that fails the alignment, digit-comma pieces, "``"
quotes, runs of whitespace, answers inside pieces, impossible questions, several windows). Its training reader
needs `is_impossible` on every question: training features come from the v2.0 file only."""

import json
import os
import subprocess
import sys

import pytest

from keras_pretrain.tasks.question_answering import features_xlnet as squad_xlnet
from keras_pretrain.tasks.question_answering.squad import read_squad_examples
from tests.tasks.question_answering.test_features_sentencepiece import write_spm
from tests.tasks.question_answering.test_features_sentencepiece import write_squad
from tests.originals import TF1_SUBPROCESS_STUBS

pytestmark = pytest.mark.tf_only

L, STRIDE, QLEN = 64, 16, 12
KEYS = [f"{name}/{training}/{uncased}" for name, training in (("v1", False), ("v2", False), ("v2", True))
        for uncased in (True, False)]

SCRIPT = r'''
import json, os, random, sys, types
spec = json.loads(sys.argv[1])
''' + TF1_SUBPROCESS_STUBS + r'''tf.compat.v1.logging.set_verbosity(tf.compat.v1.logging.ERROR)
from absl import flags
import sentencepiece as spm
from xlnet import run_squad
flags.DEFINE_bool("uncased", False, "")  # the PyPI copy reads FLAGS without defining them
flags.DEFINE_integer("start_n_top", 5, "")
flags.DEFINE_integer("end_n_top", 5, "")
flags.FLAGS(["run_squad"])
BEAM

sp = spm.SentencePieceProcessor()
sp.Load(spec["model"])

def dump(f):
    return {"unique_id": f.unique_id, "example_index": f.example_index, "doc_span_index": f.doc_span_index,
            "tok_start_to_orig_index": f.tok_start_to_orig_index, "tok_end_to_orig_index": f.tok_end_to_orig_index,
            "token_is_max_context": sorted(f.token_is_max_context.items()), "input_ids": f.input_ids,
            "input_mask": f.input_mask, "p_mask": f.p_mask, "segment_ids": f.segment_ids,
            "paragraph_len": f.paragraph_len, "cls_index": f.cls_index, "start_position": f.start_position,
            "end_position": f.end_position, "is_impossible": f.is_impossible}

result = {}
for key in spec["keys"]:
    name, training, uncased = key.split("/")
    training, uncased = training == "True", uncased == "True"
    flags.FLAGS.uncased = uncased
    examples = run_squad.read_squad_examples(spec["files"][name], training)
    features, objects = [], []
    writer = run_squad.FeatureWriter(os.path.join(spec["out"], key.replace("/", "-") + ".tfrecord"), training)
    def output(f):
        features.append(dump(f))
        objects.append(f)
        writer.process_feature(f)
    run_squad.convert_examples_to_features(examples, sp, spec["L"], spec["stride"], spec["qlen"], training, output)
    writer.close()
    result[key] = features
    if not training:  # write_predictions on a seeded beam (`beam`, the test's twin)
        results = [run_squad.RawResult(f.unique_id, *beam(f.unique_id, spec["L"], 5, 5)) for f in objects]
        for n_best, longest in ((20, 30), (3, 4)):
            stem = os.path.join(spec["out"], "%s-%s-%s" % (key.replace("/", "-"), n_best, longest))
            orig_data = json.load(open(spec["files"][name], encoding="utf-8"))["data"]
            run_squad.write_predictions(examples, objects, results, n_best, longest, stem + "-predictions.json",
                                        stem + "-nbest.json", stem + "-null_odds.json", orig_data)
with open(os.path.join(spec["out"], "result.json"), "w") as f:
    json.dump(result, f)
'''


def beam(unique_id, length, start_n_top, end_n_top):
    """A seeded stand-in of the beam head's outputs for one window: (start_top_log_probs, start_top_index,
    end_top_log_probs, end_top_index, cls_logits); ends near their start, log-probs with 1 decimal (ties)."""
    import random

    rng = random.Random(unique_id)
    starts = rng.sample(range(length), start_n_top)
    ends = [s + d for s in starts for d in rng.sample(range(-2, 9), end_n_top)]
    return ([round(rng.gauss(-2, 1), 1) for _ in starts], starts, [round(rng.gauss(-2, 1), 1) for _ in ends],
            ends, round(rng.gauss(0, 2), 3))


SCRIPT = SCRIPT.replace("BEAM", __import__("inspect").getsource(beam))


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    pytest.importorskip("sentencepiece")
    root = tmp_path_factory.mktemp("squad_xlnet")
    files = {"v1": write_squad(root / "v1.json", False), "v2": write_squad(root / "v2.json", True)}
    model = write_spm(root / "spiece.model")
    out = root / "originals"
    out.mkdir()
    spec = dict(files=files, model=model, out=str(out), L=L, stride=STRIDE, qlen=QLEN, keys=KEYS)
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "result.json", encoding="utf-8") as f:
        return dict(files=files, model=model, out=str(out), features=json.load(f))


def _dump(f):
    return {"unique_id": f.unique_id, "example_index": f.example_index, "doc_span_index": f.doc_span_index,
            "tok_start_to_orig_index": list(f.tok_start_to_orig_index),
            "tok_end_to_orig_index": list(f.tok_end_to_orig_index),
            "token_is_max_context": [list(kv) for kv in sorted(f.token_is_max_context.items())],
            "input_ids": list(f.input_ids), "input_mask": list(f.input_mask), "p_mask": list(f.p_mask),
            "segment_ids": list(f.segment_ids), "paragraph_len": f.paragraph_len, "cls_index": f.cls_index,
            "start_position": f.start_position, "end_position": f.end_position, "is_impossible": f.is_impossible}


def _records(path):
    import tensorflow as tf

    records = []
    for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
        example = tf.train.Example.FromString(raw)
        records.append({k: list(v.int64_list.value) or list(v.float_list.value)
                        for k, v in example.features.feature.items()})
    return records


@pytest.mark.parametrize("key", KEYS)
def test_features_equal_xlnet_run_squad(originals, key, tmp_path):
    import sentencepiece as spm

    name, training, uncased = key.split("/")
    training, uncased = training == "True", uncased == "True"
    encode_pieces, piece_to_id = squad_xlnet.sentencepiece_functions(spm.SentencePieceProcessor(
        model_file=originals["model"]))
    examples = read_squad_examples(originals["files"][name], is_training=training)
    features = squad_xlnet.convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN,
                                                        training, uncased)
    theirs = originals["features"][key]
    assert len(features) == len(theirs) > len(examples)  # several windows
    for ours, original in zip(features, theirs):
        assert _dump(ours) == original, ours.unique_id
    if training:  # windows without the answer point at <cls>, as impossible ones
        assert {f.start_position == f.cls_index for f in features} == {True, False}
        assert any(f.is_impossible for f in features)
    path = str(tmp_path / "ours.tfrecord")
    assert squad_xlnet.write_features(features, path, training) == len(features)
    ours, original = _records(path), _records(os.path.join(originals["out"], key.replace("/", "-") + ".tfrecord"))
    assert ours == original
    assert set(ours[0]) == set(squad_xlnet.TRAINING_FEATURE_NAMES if training else squad_xlnet.FEATURE_NAMES)


def test_preprocess_text_and_the_digit_comma_split(originals):
    import sentencepiece as spm

    assert squad_xlnet.preprocess_text("  ``Quoted''  Café ") == '"Quoted" Cafe'
    encode_pieces, _ = squad_xlnet.sentencepiece_functions(spm.SentencePieceProcessor(model_file=originals["model"]))
    pieces = encode_pieces(squad_xlnet.preprocess_text("sold 1,000 croissants, 9, 10,"))
    assert "," in pieces and not any(p[-1] == "," and len(p) > 1 and p[-2].isdigit() for p in pieces)


@pytest.mark.parametrize("key", [k for k in KEYS if "/False/" in k])
@pytest.mark.parametrize("n_best, longest", [(20, 30), (3, 4)])
def test_predictions_equal_xlnet_write_predictions(originals, key, n_best, longest, tmp_path):
    """run_squad.write_predictions' three files, byte for byte, on a seeded beam."""
    import types

    import sentencepiece as spm

    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_beam as write_predictions

    name, _, uncased = key.split("/")
    encode_pieces, piece_to_id = squad_xlnet.sentencepiece_functions(spm.SentencePieceProcessor(
        model_file=originals["model"]))
    examples = read_squad_examples(originals["files"][name], is_training=False)
    features = squad_xlnet.convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN,
                                                        False, uncased == "True")
    names = ("start_top_log_probs", "start_top_index", "end_top_log_probs", "end_top_index", "cls_logits")
    results = [types.SimpleNamespace(unique_id=f.unique_id, **dict(zip(names, beam(f.unique_id, L, 5, 5))))
               for f in features]
    predictions, nbest, null_odds = write_predictions(examples, features, results, n_best, longest, 5, 5, "xlnet")
    write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    stem = os.path.join(originals["out"], f"{key.replace('/', '-')}-{n_best}-{longest}")
    for ours, theirs in (("predictions.json", "-predictions.json"), ("nbest_predictions.json", "-nbest.json"),
                         ("null_odds.json", "-null_odds.json")):
        with open(tmp_path / ours, "rb") as a, open(stem + theirs, "rb") as b:
            assert a.read() == b.read(), ours
    assert any(predictions.values()) and "" in predictions.values()  # spans found, and a question without one
