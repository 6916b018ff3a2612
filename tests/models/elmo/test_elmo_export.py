"""ELMo to bilm-tf's release format (`export_bilm`) and back (`convert.load`).

Both directions use one name table (`elmo_convert.weight_table`): a tiny
release in the published layout (make_bilm_release.py) read and written
again gives the same hdf5 datasets; our random models written and read
again give the same weights and embeddings; bilm-tf itself reads what we
write and gives our embeddings.
"""

import json
import os
import re
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import ExportError
from keras_pretrain.models.elmo import ElmoBackbone
from keras_pretrain.models.elmo import ElmoBiLM
from keras_pretrain.models.elmo import ElmoClassifier
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo import export_bilm
from keras_pretrain.models.elmo import lm_targets
from keras_pretrain.models.elmo.elmo_convert import options_config
from keras_pretrain.models.elmo.elmo_pretrainer import NEG_INF
from keras_pretrain.text import SPECIAL_TOKENS
from tests.models.elmo import make_bilm_release
from tests.testing import TOLERANCE
from tests.testing import to_numpy

SENTENCES = [["Gold", ",", "surely", "!"], ["The", "rain", "had", "über", "東京", "."], ["a"]]
WORDS = SPECIAL_TOKENS + ["the", ",", ".", "Gold", "surely", "!", "rain"]
# A projection (D < C) with clips, CNN_proj (F != D), two highway layers,
# skip connections; sizes other than the fixture's.
TINY = dict(
    num_layers=2, hidden_dim=6, lstm_dim=10, filters=[[1, 3], [2, 5]], num_highway=2, char_embedding_dim=3,
    activation="relu", cell_clip=2.0, proj_clip=1.5, use_residual=True,
)
# What bilm's options would turn into the backbone (options_config's keys).
OPTION_KEYS = (
    "num_layers", "hidden_dim", "lstm_dim", "filters", "num_highway", "char_embedding_dim", "num_characters",
    "max_characters", "activation", "cell_clip", "proj_clip", "use_residual",
)


def _report(what, diff, tolerance=TOLERANCE):
    print(f"[{keras.config.backend()}] {what}: max abs diff {diff:.3g}")
    assert diff <= tolerance, (what, diff)


def _datasets(path):
    """{name: array} of every dataset of an hdf5 file."""
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, item: out.__setitem__(name, item[...]) if isinstance(item, h5py.Dataset) else None)
    return out


def _randomize(model, seed):
    """Random values in every weight (biases too), so that a misplaced one shows."""
    rng = np.random.default_rng(seed)
    for variable in model.trainable_weights:
        variable.assign((rng.normal(size=variable.shape) * 0.4).astype(variable.dtype))


def _weights(model):
    return {v.path: to_numpy(v) for v in model.weights}


def _layers(backbone, ids):
    return np.stack(backbone.predict({"char_ids": ids}, verbose=0)["encoder_outputs"])


def _real(ids):
    return (np.asarray(ids) != 0).any(-1)


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("releases")
    return {
        "projection": make_bilm_release.build(
            str(root / "projection"), "projection", training_keys=True, softmax=True
        ),
        "no_projection": make_bilm_release.build(str(root / "no_projection"), "no_projection"),
    }


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """Our random tiny backbone, its export (with a vocabulary) and the model read back."""
    backbone = ElmoBackbone(**TINY)
    _randomize(backbone, seed=1)
    folder = str(tmp_path_factory.mktemp("tiny") / "release")
    paths = export_bilm(backbone, folder, vocabulary=WORDS)
    restored, vocabulary = convert.load(folder)
    return {"backbone": backbone, "paths": paths, "restored": restored, "vocabulary": vocabulary}


@pytest.mark.one_backend
@pytest.mark.parametrize("config", ["projection", "no_projection"])
def test_release_round_trip(releases, config, tmp_path):
    """bilm release -> convert.load -> export_bilm: the same datasets and options."""
    release = releases[config]
    backbone, _ = convert.load(os.path.dirname(release["options"]))
    paths = export_bilm(backbone, str(tmp_path / "out"))
    assert sorted(os.listdir(tmp_path / "out")) == ["options.json", "weights.hdf5"]
    original, exported = _datasets(release["weights"]), _datasets(paths["weights"])
    assert sorted(exported) == sorted(original)
    for name, array in original.items():
        assert exported[name].shape == array.shape and exported[name].dtype == np.float32, name
        np.testing.assert_array_equal(exported[name], array, err_msg=name)
    _report(f"{config}: hdf5 datasets vs the release's", max(np.abs(exported[n] - original[n]).max() for n in original), 0.0)
    with open(release["options"]) as f:
        options = json.load(f)
    with open(paths["options"]) as f:
        written = json.load(f)
    assert sorted(written) == ["char_cnn", "lstm"]  # bilm's sections; the training keys are not written
    assert options_config(written, "exported") == options_config(options, "original")
    expected = {section: dict(options[section]) for section in ("lstm", "char_cnn")}
    if config == "no_projection":  # bilm ignores proj_clip without a projection: not written
        del expected["lstm"]["proj_clip"]
    assert written == expected
    # Read back once more: the same backbone.
    again, _ = convert.load(str(tmp_path / "out"))
    before, after = _weights(backbone), _weights(again)
    assert sorted(after) == sorted(before)
    for path, value in before.items():
        np.testing.assert_array_equal(after[path], value, err_msg=path)


@pytest.mark.one_backend
def test_release_softmax_round_trip(releases, tmp_path):
    """bilm's softmax (training checkpoint + vocabulary, its own word order) -> ElmoBiLM -> export:
    every word keeps its row."""
    release = releases["projection"]
    lm, vocabulary = convert.load(
        os.path.dirname(release["options"]), softmax=release["softmax"], vocabulary=release["vocabulary"]
    )
    paths = export_bilm(lm, str(tmp_path / "out"), vocabulary)
    assert sorted(os.listdir(tmp_path / "out")) == ["options.json", "softmax", "vocab.txt", "weights.hdf5"]
    with open(paths["vocabulary"], encoding="utf-8") as f:
        words = f.read().split("\n")
    assert words[-1] == "" and words[:3] == ["<S>", "</S>", "<UNK>"]
    words = words[:-1]
    assert sorted(words) == sorted(make_bilm_release.VOCABULARY)
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(paths["softmax"], "model.ckpt"))
    assert sorted(reader.get_variable_to_shape_map()) == ["lm/softmax/W", "lm/softmax/b"]
    original = release["softmax_arrays"]
    index = {w: i for i, w in enumerate(make_bilm_release.VOCABULARY)}
    order = [index[w] for w in words]
    np.testing.assert_array_equal(reader.get_tensor("lm/softmax/W"), original["lm/softmax/W"][order])
    np.testing.assert_array_equal(reader.get_tensor("lm/softmax/b"), original["lm/softmax/b"][order])
    np.testing.assert_array_equal(_datasets(paths["weights"])["CNN/W_cnn_2"], _datasets(release["weights"])["CNN/W_cnn_2"])


def test_backbone_round_trip(tiny):
    """Our random backbone -> export_bilm -> convert.load: the same weights and embeddings."""
    backbone, restored = tiny["backbone"], tiny["restored"]
    assert isinstance(restored, ElmoBackbone) and tiny["vocabulary"] is None
    config, back = backbone.get_config(), restored.get_config()
    assert {k: back[k] for k in OPTION_KEYS} == {k: config[k] for k in OPTION_KEYS}
    ours, theirs = _weights(backbone), _weights(restored)
    assert sorted(theirs) == sorted(ours)
    table = "char_encoder/char_embedding/embeddings"
    assert table in ours
    for path, value in ours.items():
        if path == table:  # row 0 (the padding token, never read) is not in bilm's table: zeros on import
            np.testing.assert_array_equal(theirs[path][1:], value[1:])
            np.testing.assert_array_equal(theirs[path][0], 0)
            assert np.abs(value[0]).max() > 0
        else:
            np.testing.assert_array_equal(theirs[path], value, err_msg=path)
    diff = max(np.abs(theirs[p] - v)[1 if p == table else 0 :].max() for p, v in ours.items())
    _report("backbone weights after the round trip (char table row 0 aside)", diff, 0.0)
    ids = character_ids(SENTENCES)
    layers, again = _layers(backbone, ids), _layers(restored, ids)
    real = _real(ids)
    assert np.abs(layers[:, real]).max() > 0.1 and np.abs(layers[2, real] - layers[1, real]).max() > 0.01
    _report("backbone L+1 layers after the round trip", np.abs(again - layers)[:, real].max())
    # The vocabulary given with a backbone is written as bilm's file (without <pad>).
    with open(tiny["paths"]["vocabulary"], encoding="utf-8") as f:
        assert f.read() == "".join(w + "\n" for w in WORDS[1:])
    with h5py.File(tiny["paths"]["weights"], "r") as f:
        assert f["char_embed"].shape == (261, 3) and f["CNN/W_cnn_1"].shape == (1, 2, 3, 5)
        assert f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"].shape == (12, 40)
        # W_0 = [kernel; recurrent_kernel] rows, gates as they are.
        np.testing.assert_array_equal(
            f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"][...],
            np.concatenate([ours["backward_lstm_1/kernel"], ours["backward_lstm_1/recurrent_kernel"]]),
        )


def test_pretrainer_round_trip(tiny, tmp_path, capsys):
    """Our random ElmoBiLM -> export_bilm -> convert.load(softmax=): the same softmax, logits and NLL."""
    backbone = ElmoBackbone(**TINY)
    backbone.set_weights(tiny["backbone"].get_weights())
    lm = ElmoBiLM(backbone, vocabulary_size=len(WORDS))
    _randomize(lm.softmax, seed=2)
    paths = export_bilm(lm, str(tmp_path / "out"), vocabulary=WORDS)
    assert "<pad>" in capsys.readouterr().out  # row 0 held probability: said to be dropped
    restored, vocabulary = convert.load(str(tmp_path / "out"), pretrainer=True, softmax=paths["softmax"])
    assert isinstance(restored, ElmoBiLM) and vocabulary == WORDS
    table, bias = to_numpy(lm.softmax.embeddings), to_numpy(lm.softmax.bias)
    table2, bias2 = to_numpy(restored.softmax.embeddings), to_numpy(restored.softmax.bias)
    np.testing.assert_array_equal(table2[1:], table[1:])
    np.testing.assert_array_equal(bias2[1:], bias[1:])
    assert np.all(table2[0] == 0) and bias2[0] == np.float32(NEG_INF)
    ids = character_ids(SENTENCES)
    real = _real(ids)
    index = {w: i for i, w in enumerate(WORDS)}
    token_ids = np.zeros(ids.shape[:2], "int32")
    for r, sentence in enumerate(SENTENCES):
        words = ["<S>"] + sentence + ["</S>"]
        token_ids[r, : len(words)] = [index.get(w, index["<UNK>"]) for w in words]
    forward, backward = lm_targets(token_ids)
    inputs = {"char_ids": ids, "next_token_ids": forward, "previous_token_ids": backward}
    # The logits of every word (row 0 aside) are the same model's.
    outputs = restored.backbone.predict({"char_ids": ids}, verbose=0)
    top = lm.backbone.predict({"char_ids": ids}, verbose=0)
    for name in ("forward", "backward"):
        ours = top[f"{name}_output"] @ table.T + bias
        theirs = outputs[f"{name}_output"] @ table2.T + bias2
        _report(f"softmax {name} logits after the round trip", np.abs(theirs - ours)[..., 1:][real].max())
    # With row 0 out of the softmax (as every imported model has it), the NLL is the same.
    lm.softmax.embeddings.assign(np.concatenate([np.zeros_like(table[:1]), table[1:]]))
    lm.softmax.bias.assign(np.concatenate([np.full((1,), NEG_INF, "float32"), bias[1:]]))
    expected, got = lm.predict(inputs, verbose=0), restored.predict(inputs, verbose=0)
    for name, targets in (("forward", forward), ("backward", backward)):
        assert np.all(np.isfinite(got[name])) and got[name][targets > 0].min() > 0
        _report(f"LM {name} NLL after the round trip", np.abs(got[name] - expected[name])[targets > 0].max())


@pytest.mark.one_backend
def test_what_bilm_cannot_hold_is_refused(tmp_path):
    out = str(tmp_path / "out")
    # No CNN_proj and no W_P_0 when the widths agree: the projections must be the identity.
    square = ElmoBackbone(**{**TINY, "hidden_dim": 8, "lstm_dim": 8, "proj_clip": None})
    with pytest.raises(ExportError, match=r"char_encoder/projection/kernel.*CNN_proj.*identity"):
        export_bilm(square, out)
    square.char_encoder.projection.kernel.assign(np.eye(8, dtype="float32"))
    with pytest.raises(ExportError, match=r"forward_lstm_0/projection.*W_P_0"):
        export_bilm(square, out)
    for layer in square.forward_layers + square.backward_layers:
        layer.projection.assign(np.eye(8, dtype="float32"))
    square.char_encoder.projection.bias.assign(np.full((8,), 0.5, "float32"))
    with pytest.raises(ExportError, match=r"char_encoder/projection/bias.*zeros"):
        export_bilm(square, out)
    assert not os.path.exists(out)  # nothing written before everything is checked
    square.char_encoder.projection.bias.assign(np.zeros((8,), "float32"))
    with h5py.File(export_bilm(square, out)["weights"], "r") as f:
        assert "CNN_proj" not in f and "W_P_0" not in f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell"]
    # proj_clip without a projection: bilm's LSTMCell would not clip.
    with pytest.raises(ExportError, match=r"proj_clip=1\.5"):
        export_bilm(ElmoBackbone(**{**TINY, "hidden_dim": 8, "lstm_dim": 8}), str(tmp_path / "b"))
    lm = ElmoBiLM(ElmoBackbone(**TINY), vocabulary_size=len(WORDS))
    with pytest.raises(ExportError, match="vocabulary"):
        export_bilm(lm, str(tmp_path / "c"))
    with pytest.raises(ExportError, match=r"12 words for a softmax of 11 rows"):
        export_bilm(lm, str(tmp_path / "c"), WORDS + ["extra"])
    with pytest.raises(ExportError, match=r"our order"):
        export_bilm(lm, str(tmp_path / "c"), WORDS[1:] + ["<pad>"])
    with pytest.raises(ExportError, match=r"cannot hold.*'two words\\n'"):
        export_bilm(lm, str(tmp_path / "c"), WORDS[:-1] + ["two words\n"])
    with pytest.raises(ExportError, match=r"repeated words \['the'\]"):
        export_bilm(lm, str(tmp_path / "c"), WORDS[:-1] + ["the"])
    with pytest.raises(ExportError, match=r"ElmoClassifier.*\.backbone"):
        export_bilm(ElmoClassifier(ElmoBackbone(**TINY), num_classes=2), str(tmp_path / "c"))
    assert sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.one_backend
def test_output_folder_must_be_new_or_empty(tiny, tmp_path):
    backbone = tiny["backbone"]
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match=re.escape(str(full)) + r": the output folder is not empty \(holds \['notes.txt'\]\)"):
        export_bilm(backbone, str(full))
    assert os.listdir(full) == ["notes.txt"] and (full / "notes.txt").read_text() == "mine"
    # A link inside (even to a missing file) makes it non-empty: never written through.
    outside = tmp_path / "outside"
    outside.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    os.symlink(outside / "weights.hdf5", linked / "weights.hdf5")
    with pytest.raises(ExportError, match=re.escape(str(linked)) + r": the output folder is not empty"):
        export_bilm(backbone, str(linked))
    assert os.listdir(outside) == []
    # The folder itself a link, a file.
    os.symlink(outside, tmp_path / "alias")
    with pytest.raises(ExportError, match=r"alias: the output folder is a symbolic link"):
        export_bilm(backbone, str(tmp_path / "alias"))
    (tmp_path / "file").write_text("")
    with pytest.raises(ExportError, match=r"file: the output folder is not a folder"):
        export_bilm(backbone, str(tmp_path / "file"))
    assert os.listdir(outside) == []
    # An existing empty folder is fine; the same folder a second time is not.
    empty = tmp_path / "empty"
    empty.mkdir()
    export_bilm(backbone, str(empty))
    assert sorted(os.listdir(empty)) == ["options.json", "weights.hdf5"]
    with pytest.raises(ExportError, match=re.escape(str(empty)) + r": the output folder is not empty"):
        export_bilm(backbone, str(empty))


def test_bilm_reads_the_export(tiny, tmp_path):
    """bilm-tf itself (BidirectionalLanguageModel + Batcher, in a subprocess) on our exported files:
    our embeddings."""
    paths = tiny["paths"]
    output = str(tmp_path / "bilm.npz")
    spec = str(tmp_path / "spec.json")
    with open(spec, "w") as f:
        json.dump({"runs": [{
            "options": paths["options"], "weights": paths["weights"], "vocabulary": paths["vocabulary"],
            "output": output, "batches": [SENTENCES], "hub_module": None,
        }]}, f)
    result = subprocess.run(
        [sys.executable, make_bilm_release.__file__, "reference", spec],
        env={**os.environ, "KERAS_BACKEND": "tensorflow"}, capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    ref = dict(np.load(output))
    ids = ref["ids_0"]
    np.testing.assert_array_equal(character_ids(SENTENCES), ids)
    real = _real(ids)
    ours = _layers(tiny["backbone"], ids)
    assert ref["layers_0"].shape == ours.shape
    _report("bilm-tf on the exported release vs our layers", np.abs(ours - ref["layers_0"])[:, real].max())
