"""`recipes.finetune --task ner` (issue 42, items 3 and 6): CoNLL files in, `predictions.txt` (conlleval's
input), `eval_results.json` equal to `recipes.evaluate conll` on it, the saved tagger's own predictions; bad
inputs exit 2 with one line and leave `--out` untouched."""

import json
import os

import numpy as np
import pytest

from keras_pretrain.tasks.token_classification import conll as tagging
from keras_pretrain.tasks.token_classification.metrics import entity_scores
from recipes import evaluate
from recipes import finetune
from tests.recipes.test_finetune_recipe import run_folder  # noqa: F401 (the module's pretrained tiny ALBERT)

pytestmark = pytest.mark.tf_only

# CoNLL-2003's layout (token POS chunk NER, -DOCSTART-, IOB1: entities start with I- unless one precedes).
CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O
to TO B-VP O
boycott VB I-VP O
British JJ B-NP I-MISC
lamb NN I-NP O
. . O O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER

BRUSSELS NNP B-NP I-LOC
1996-08-22 CD I-NP O
the DT B-NP O
whale NN I-NP O
was VBD B-VP O
white JJ B-ADJP O
and CC O O
the DT B-NP O
sea NN I-NP O
was VBD B-VP O
wide JJ B-ADJP O
in IN B-PP O
Paris NNP B-NP I-LOC
"""


def run(run_folder, tmp_path, *args, data=None):  # noqa: F811
    path = tmp_path / "train.txt"
    path.write_text(CONLL if data is None else data, encoding="utf-8")
    out = str(tmp_path / "out")
    return finetune.main(["--from", run_folder, "--out", out, "--task", "ner", "--train-file", str(path),
                          "--predict-file", str(path), "--epochs", "1", "--batch-size", "4", "--seq-length", "12",
                          "--verbose", "0", *args]), out


def test_a_run_writes_conlleval_predictions_and_their_scores(run_folder, tmp_path, capsys):  # noqa: F811
    import keras

    summary, out = run(run_folder, tmp_path, "--window-overlap", "2")
    assert "IOB1" in capsys.readouterr().out  # the scheme found is said
    assert summary["labels"] == ["O", "B-LOC", "B-MISC", "B-ORG", "B-PER", "I-PER"]
    assert summary["predict_windows"] > 3  # the long sentence took several windows of 12
    assert {"predictions.txt", "eval_results.json", "tagger.keras", "labels.json", "summary.json"} <= set(
        os.listdir(out))
    tokens, gold, predicted = tagging.read_predictions(os.path.join(out, "predictions.txt"))
    sentences = tagging.as_iob2(tagging.read_conll(str(tmp_path / "train.txt")))[0]
    assert [list(t) for t in tokens] == [list(s.tokens) for s in sentences]
    assert [list(g) for g in gold] == [list(s.tags) for s in sentences]  # IOB2 now
    scores = json.load(open(os.path.join(out, "eval_results.json")))
    assert scores == entity_scores(gold, predicted)
    assert evaluate.run_conll(evaluate.build_parser(), evaluate.build_parser().parse_args(
        ["conll", "--predictions", os.path.join(out, "predictions.txt")])) == scores
    # The saved tagger gives the predicted tags again (the same windows, merged the same way).
    from recipes import finetune_ner

    model = keras.models.load_model(os.path.join(out, "tagger.keras"))
    parser = finetune.build_parser()
    _, _, tokenizer = finetune.load_pretrained(parser, run_folder, None)
    text = finetune.preprocessor(summary["family"], tokenizer)
    windows, x, _, words = finetune_ner.features(sentences, text, 12, summary["labels"], 2)
    logits = np.asarray(model.predict({n: x[n] for n in model.input}, verbose=0), "float32")
    from keras_pretrain.tasks.token_classification.features import word_predictions

    again, _ = word_predictions(windows, logits, words, [len(s.tokens) for s in sentences])
    assert [[summary["labels"][i] for i in row] for row in again] == [list(p) for p in predicted]
    # The serving SavedModel tags the sentences' text as predictions.txt does.
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    assert summary["serving"]["inputs"] == ["text"]
    serve = tf.saved_model.load(os.path.join(out, "ner", "1")).signatures["serving_default"]
    result = serve(text=tf.constant([" ".join(s.tokens) for s in sentences]))
    served = [[t.decode() for t in row[:len(s.tokens)]] for row, s in zip(result["tags"].numpy(), sentences)]
    assert served == [list(p) for p in predicted]


def bad(run_folder, tmp_path, capsys, data, *args):  # noqa: F811
    with pytest.raises(SystemExit) as info:
        run(run_folder, tmp_path, *args, data=data)
    assert info.value.code == 2
    assert not (tmp_path / "out").exists()
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("data,args,expected", [
    ("a B-X\nb\n", (), "line 2"),  # a row with another column count
    ("", (), "no sentence"),
    ("a O\n", (), "every word is tagged O"),
    ("a B-PER\nb Q-X\n", (), "line 2"),  # not an IOB tag
    (CONLL, ("--window-overlap", "-1"), "--window-overlap"),
])
def test_bad_inputs_exit_2_with_one_line(run_folder, tmp_path, capsys, data, args, expected):  # noqa: F811
    line = bad(run_folder, tmp_path, capsys, data, *args)
    assert expected in line, line


def test_a_tag_the_training_file_never_uses(run_folder, tmp_path, capsys):  # noqa: F811
    train = tmp_path / "t.txt"
    train.write_text("a B-PER\nb O\n", encoding="utf-8")
    dev = tmp_path / "d.txt"
    dev.write_text("a B-PER\n\nc B-LOC\n", encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", run_folder, "--out", str(tmp_path / "o"), "--task", "ner", "--train-file",
                       str(train), "--predict-file", str(dev), "--verbose", "0"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "'B-LOC'" in err and "line 3" in err and str(dev) in err
    assert not (tmp_path / "o").exists()


def test_non_utf8_is_named(run_folder, tmp_path, capsys):  # noqa: F811
    path = tmp_path / "t.txt"
    path.write_bytes("caf\xe9 B-LOC\n".encode("latin-1"))
    with pytest.raises(SystemExit) as info:
        finetune.main(["--from", run_folder, "--out", str(tmp_path / "o"), "--task", "ner", "--train-file",
                       str(path), "--predict-file", str(path), "--verbose", "0"])
    assert info.value.code == 2 and str(path) in capsys.readouterr().err


def test_elmo_trains_its_bilstm_crf_tagger_on_whole_words(tmp_path):
    """ELMo (a bilm-tf release): `ElmoTagger` on words between <S> and </S>, its Viterbi tags in predictions.txt,
    and the serving SavedModel tagging the text the same way."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from tests.models.elmo import make_bilm_release

    release = make_bilm_release.build(str(tmp_path / "elmo"))
    summary, out = run(release["options"], tmp_path, "--window-overlap", "2")
    assert summary["family"] == "elmo" and summary["predict_windows"] > 3
    tokens, gold, predicted = tagging.read_predictions(os.path.join(out, "predictions.txt"))
    assert json.load(open(os.path.join(out, "eval_results.json"))) == entity_scores(gold, predicted)
    serve = tf.saved_model.load(os.path.join(out, "ner", "1")).signatures["serving_default"]
    result = serve(text=tf.constant([" ".join(t) for t in tokens]))
    served = [[t.decode() for t in row[:len(s)]] for row, s in zip(result["tags"].numpy(), tokens)]
    assert served == [list(p) for p in predicted]


def test_gpt_trains_on_its_bpe_pieces(tmp_path):
    """GPT-1 (OpenAI's release): `TokenClassifier` on each word's BPE pieces, no special tokens; no SavedModel
    (its BPE runs in Python), said so."""
    from tests.models.gpt import make_openai_release

    make_openai_release.build(str(tmp_path / "gpt"), d=24)
    summary, out = run(str(tmp_path / "gpt" / "model"), tmp_path)
    assert summary["family"] == "gpt" and summary["serving"] is None
    tokens, gold, predicted = tagging.read_predictions(os.path.join(out, "predictions.txt"))
    assert len(tokens) == 3 and json.load(open(os.path.join(out, "eval_results.json"))) == entity_scores(
        gold, predicted)
