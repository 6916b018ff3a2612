"""XLNet's SQuAD features against xlnet-tensorflow's `run_squad.py` (the PyPI release, test extra): its
`read_squad_examples`, `convert_examples_to_features` (with its `FLAGS.uncased` both ways) and `FeatureWriter`,
run once in ONE subprocess under `tf.compat.v1`, on the tricky SQuAD files of test_squad_sentencepiece (accents
composed and decomposed, CJK, ligatures and a paragraph that fails the alignment, digit-comma pieces, "``"
quotes, runs of whitespace, answers inside pieces, impossible questions, several windows). Its training reader
needs `is_impossible` on every question: training features come from the v2.0 file only."""

import os

import pytest

from keras_pretrain.tasks.question_answering import features_xlnet as squad_xlnet
from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text
from keras_pretrain.tasks.question_answering.squad import read_squad_examples
from tests.tasks.question_answering.test_features_sentencepiece import FEATURE_FIELDS
from tests.tasks.question_answering.test_features_sentencepiece import L
from tests.tasks.question_answering.test_features_sentencepiece import PREDICTION_FILES
from tests.tasks.question_answering.test_features_sentencepiece import QLEN
from tests.tasks.question_answering.test_features_sentencepiece import STRIDE
from tests.tasks.question_answering.test_features_sentencepiece import assert_same_files
from tests.tasks.question_answering.test_features_sentencepiece import beam_results
from tests.tasks.question_answering.test_features_sentencepiece import dump
from tests.tasks.question_answering.test_features_sentencepiece import records
from tests.tasks.question_answering.test_features_sentencepiece import run_originals
from tests.originals import TF1_SUBPROCESS_STUBS

pytestmark = pytest.mark.tf_only

FIELDS = FEATURE_FIELDS + ("cls_index",)
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
HELPERS

sp = spm.SentencePieceProcessor()
sp.Load(spec["model"])

result = {}
for key in spec["keys"]:
    name, training, uncased = key.split("/")
    training, uncased = training == "True", uncased == "True"
    flags.FLAGS.uncased = uncased
    examples = run_squad.read_squad_examples(spec["files"][name], training)
    writer = run_squad.FeatureWriter(os.path.join(spec["out"], key.replace("/", "-") + ".tfrecord"), training)
    features, objects, output = collect(writer, spec["fields"])
    run_squad.convert_examples_to_features(examples, sp, spec["L"], spec["stride"], spec["qlen"], training, output)
    writer.close()
    result[key] = features
    if not training:  # write_predictions on a seeded beam (`beam`, the tests')
        results = [run_squad.RawResult(f.unique_id, *beam(f.unique_id, spec["L"], 5, 5)) for f in objects]
        for n_best, longest in ((20, 30), (3, 4)):
            stem = os.path.join(spec["out"], "%s-%s-%s" % (key.replace("/", "-"), n_best, longest))
            orig_data = json.load(open(spec["files"][name], encoding="utf-8"))["data"]
            run_squad.write_predictions(examples, objects, results, n_best, longest, stem + "-predictions.json",
                                        stem + "-nbest.json", stem + "-null_odds.json", orig_data)
with open(os.path.join(spec["out"], "result.json"), "w") as f:
    json.dump(result, f)
'''


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    pytest.importorskip("sentencepiece")
    files, model, out, features = run_originals(tmp_path_factory.mktemp("squad_xlnet"), SCRIPT, "spiece.model",
                                                keys=KEYS, fields=FIELDS)
    return dict(files=files, model=model, out=out, features=features)


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
        assert dump(ours, FIELDS) == original, ours.unique_id
    if training:  # windows without the answer point at <cls>, as impossible ones
        assert {f.start_position == f.cls_index for f in features} == {True, False}
        assert any(f.is_impossible for f in features)
    path = str(tmp_path / "ours.tfrecord")
    assert squad_xlnet.write_features(features, path, training) == len(features)
    ours, original = records(path), records(os.path.join(originals["out"], key.replace("/", "-") + ".tfrecord"))
    assert ours == original
    assert set(ours[0]) == set(squad_xlnet.TRAINING_FEATURE_NAMES if training else squad_xlnet.FEATURE_NAMES)


def test_preprocess_text_and_the_digit_comma_split(originals):
    import sentencepiece as spm

    assert normalize_sentencepiece_text("  ``Quoted''  Café ", xlnet_quotes=True) == '"Quoted" Cafe'
    encode_pieces, _ = squad_xlnet.sentencepiece_functions(spm.SentencePieceProcessor(model_file=originals["model"]))
    pieces = encode_pieces(normalize_sentencepiece_text("sold 1,000 croissants, 9, 10,", xlnet_quotes=True))
    assert "," in pieces and not any(p[-1] == "," and len(p) > 1 and p[-2].isdigit() for p in pieces)


@pytest.mark.parametrize("key", [k for k in KEYS if "/False/" in k])
@pytest.mark.parametrize("n_best, longest", [(20, 30), (3, 4)])
def test_predictions_equal_xlnet_write_predictions(originals, key, n_best, longest, tmp_path):
    """run_squad.write_predictions' three files, byte for byte, on a seeded beam."""
    import sentencepiece as spm

    from keras_pretrain.tasks.question_answering.predictions import write_prediction_files
    from keras_pretrain.tasks.question_answering.predictions import write_predictions_beam as write_predictions

    name, _, uncased = key.split("/")
    encode_pieces, piece_to_id = squad_xlnet.sentencepiece_functions(spm.SentencePieceProcessor(
        model_file=originals["model"]))
    examples = read_squad_examples(originals["files"][name], is_training=False)
    features = squad_xlnet.convert_examples_to_features(examples, encode_pieces, piece_to_id, L, STRIDE, QLEN,
                                                        False, uncased == "True")
    predictions, nbest, null_odds = write_predictions(examples, features, beam_results(features), n_best, longest,
                                                      5, 5, "xlnet")
    write_prediction_files(str(tmp_path), predictions, nbest, null_odds)
    assert_same_files(tmp_path, os.path.join(originals["out"], f"{key.replace('/', '-')}-{n_best}-{longest}"),
                      PREDICTION_FILES)
    assert any(predictions.values()) and "" in predictions.values()  # spans found, and a question without one
