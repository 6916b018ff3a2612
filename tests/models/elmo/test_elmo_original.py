"""ELMo from bilm-tf / AllenNLP releases and the TF1 hub module, against bilm-tf itself.

The reference is bilm-tf 0.1.post5 (`BidirectionalLanguageModel` + `Batcher`)
run in TF1 graph mode in a subprocess (make_bilm_release.py, once per test
module) on tiny releases written in the published layout: the Batcher's
character ids, every layer at every position and bilm's `lm_embeddings` of
four consecutive calls in one session (its LSTM states carry over).
Our models run through `predict` (compiled once per model and shape: eager
JAX calls of the LSTM scan are slow on 2 cores).
"""

import json
import os
import shutil
import subprocess
import sys

import h5py
import keras
import numpy as np
import pytest

from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from keras_pretrain.models.elmo import ElmoBackbone
from keras_pretrain.models.elmo import ElmoBiLM
from keras_pretrain.models.elmo import LSTMP
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo import lm_targets
from keras_pretrain.models.elmo.elmo_convert import convert_bilm
from keras_pretrain.models.elmo.elmo_convert import convert_tf1_hub
from keras_pretrain.models.elmo.elmo_convert import is_bilm_release
from keras_pretrain.models.elmo.elmo_convert import is_elmo_hub_module
from keras_pretrain.models.elmo.elmo_convert import options_config
from tests.models.elmo import make_bilm_release
from tests.testing import TOLERANCE
from tests.testing import to_numpy
from tests.testing import write_tf1_checkpoint

# Different lengths, a word of 60 bytes (cut to 48), non-ASCII words.
SENTENCES = [
    ["Gold", ",", "surely", "!"],
    ["The", "rain", "had", "x" * 60, "über", "東京", "."],
    ["a"],
]
# Consecutive calls of one bilm session: the same batch twice, a smaller
# batch (rows 0-1 carry on, row 2 keeps its state), the first batch again.
CALLS = [SENTENCES, SENTENCES, [SENTENCES[1], SENTENCES[0]], SENTENCES]


def _report(what, diff):
    print(f"[{keras.config.backend()}] {what}: max abs diff {diff:.3g}")
    assert diff <= TOLERANCE, (what, diff)


def _real(ids):
    return (np.asarray(ids) != 0).any(-1)


def _layers(backbone, ids):
    """(L+1, B, W, 2D) and the outputs dict of a compiled predict."""
    outputs = backbone.predict({"char_ids": ids}, verbose=0)
    return np.stack(outputs["encoder_outputs"]), outputs


def _strip_boundaries(layers, ids):
    """(B, L+1, W - 2, 2D): each row without its <S> and </S> (first and last
    real position), zero past its length, as bilm's `_build_ops` and our
    hub contract (`keras_pretrain.export.contracts.elmo_outputs`)."""
    lengths = _real(ids).sum(1)
    out = np.zeros((layers.shape[1], layers.shape[0], ids.shape[1] - 2, layers.shape[-1]), layers.dtype)
    for b, n in enumerate(lengths):
        out[b, :, : n - 2] = layers[:, b, 1 : n - 1]
    return out


@pytest.fixture(scope="module")
def bilm(tmp_path_factory):
    """The releases and bilm-tf's outputs on them (one subprocess)."""
    root = str(tmp_path_factory.mktemp("bilm"))
    releases = {
        "projection": make_bilm_release.build(
            os.path.join(root, "projection"), "projection", training_keys=True, softmax=True
        ),
        "no_projection": make_bilm_release.build(os.path.join(root, "no_projection"), "no_projection"),
    }
    vocabulary = releases["projection"]["vocabulary"]
    runs = []
    for name, release in releases.items():
        release["outputs"] = os.path.join(root, f"{name}.npz")
        runs.append({
            "options": release["options"],
            "weights": release["weights"],
            "vocabulary": vocabulary,
            "output": release["outputs"],
            "batches": CALLS,
            "hub_module": os.path.join(root, "hub") if name == "projection" else None,
        })
    spec = os.path.join(root, "spec.json")
    with open(spec, "w") as f:
        json.dump({"runs": runs}, f)
    result = subprocess.run(
        [sys.executable, make_bilm_release.__file__, "reference", spec],
        env={**os.environ, "KERAS_BACKEND": "tensorflow"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    for release in releases.values():
        release["bilm"] = dict(np.load(release["outputs"]))
    releases["hub"] = os.path.join(root, "hub")
    return releases


@pytest.mark.parametrize("config", ["projection", "no_projection"])
def test_layers_equal_bilm(bilm, config):
    release = bilm[config]
    ref = release["bilm"]
    ids = ref["ids_0"]
    # Our character ids are the Batcher's.
    np.testing.assert_array_equal(character_ids(SENTENCES), ids)
    assert is_bilm_release(os.path.dirname(release["options"])) and is_bilm_release(release["options"])
    # keras_pretrain.convert.from_bilm(options, weights) calls this form.
    backbone, vocabulary = convert_bilm(release["options"], weights=release["weights"])
    assert isinstance(backbone, ElmoBackbone) and vocabulary is None and not backbone.stateful
    ours, _ = _layers(backbone, ids)
    real = _real(ids)
    _report(f"{config}: L+1 layers vs bilm's graph (real positions)", np.abs(ours - ref["layers_0"])[:, real].max())
    # bilm's lm_embeddings drop <S> / </S>, as our hub contract does.
    mask = ref["mask_0"]
    stripped = _strip_boundaries(ours, ids)
    np.testing.assert_array_equal(_real(ids).sum(1) - 2, mask.sum(1))
    diff = np.abs(stripped - ref["lm_embeddings_0"]).transpose(0, 2, 1, 3)[mask].max()
    _report(f"{config}: lm_embeddings (no <S>, </S>)", diff)
    # Stateless (the default): the same vectors every call.
    np.testing.assert_array_equal(_layers(backbone, ids)[0], ours)
    if config == "no_projection":
        # No projection: bilm's proj_clip (0.1) must not apply; no W_P_0 / CNN_proj.
        with h5py.File(release["weights"], "r") as f:
            assert "CNN_proj" not in f and "W_P_0" not in f["RNN_0/RNN/MultiRNNCell/Cell0/LSTMCell"]
        assert backbone.proj_clip is None
        assert np.abs(ours[1:, real]).max() > 0.2


def test_options_mapping():
    kwargs = options_config(make_bilm_release.CONFIGS["projection"], "x.json")
    assert kwargs == {
        "num_layers": 2, "hidden_dim": 8, "lstm_dim": 16, "filters": [[1, 4], [2, 4], [3, 8]],
        "num_highway": 1, "char_embedding_dim": 4, "num_characters": 262, "max_characters": 50,
        "activation": "relu", "cell_clip": 3.0, "proj_clip": 3.0, "use_residual": True, "dropout": 0.0,
    }
    options = json.loads(json.dumps(make_bilm_release.CONFIGS["no_projection"]))
    assert options_config(options, "x.json")["proj_clip"] is None
    del options["lstm"]["dim"]
    with pytest.raises(ConfigError, match=r"x\.json: missing key lstm\.dim"):
        options_config(options, "x.json")
    options = json.loads(json.dumps(make_bilm_release.CONFIGS["projection"]))
    options["char_cnn"]["activation"] = "gelu"
    with pytest.raises(ConfigError, match=r"x\.json: char_cnn\.activation must be"):
        options_config(options, "x.json")


def test_stateful_equals_bilm(bilm, tmp_path):
    release = bilm["projection"]
    ref = release["bilm"]
    backbone, _ = convert_bilm(os.path.dirname(release["options"]), stateful=True)
    assert backbone.stateful and backbone.get_config()["stateful"]
    first = None
    for k in range(len(CALLS)):
        ids = ref[f"ids_{k}"]
        ours, _ = _layers(backbone, ids)
        _report(f"stateful call {k} vs bilm", np.abs(ours - ref[f"layers_{k}"])[:, _real(ids)].max())
        if k == 0:
            first = ours
        if k == 1:  # the same batch again: different vectors, in bilm and in ours
            assert np.abs(ref["layers_1"] - ref["layers_0"])[1:, _real(ids)].max() > 1e-2
            assert np.abs(ours - first)[1:, _real(ids)].max() > 1e-2
    backbone.reset_states()
    again, _ = _layers(backbone, ref["ids_0"])
    _report("stateful after reset_states vs bilm's first call", np.abs(again - ref["layers_0"])[:, _real(ref["ids_0"])].max())
    # The states are not saved: a reloaded model starts from zeros.
    path = str(tmp_path / "stateful.keras")
    backbone.save(path)
    restored = keras.models.load_model(path)
    assert restored.stateful and restored.max_batch_size == 128
    reloaded, _ = _layers(restored, ref["ids_0"])
    _report("reloaded stateful vs bilm's first call", np.abs(reloaded - ref["layers_0"])[:, _real(ref["ids_0"])].max())
    # States for max_batch_size rows: a larger batch is refused.
    with pytest.raises(ConfigError, match="max_batch_size=2"):
        LSTMP(4, 2, stateful=True, max_batch_size=2)(np.zeros((3, 5, 3), "float32"))


def test_mismatched_hdf5_lists_every_problem(bilm, tmp_path):
    release = bilm["projection"]
    folder = tmp_path / "broken"
    shutil.copytree(os.path.dirname(release["options"]), folder)
    weights = str(folder / os.path.basename(release["weights"]))
    with h5py.File(weights, "a") as f:
        del f["CNN/b_cnn_1"]
        del f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"]
        f["RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0"] = np.zeros((15, 64), "float32")
    with pytest.raises(CheckpointFormatError) as error:
        convert_bilm(str(folder))
    message = str(error.value)
    assert weights in message
    assert "missing variable 'CNN/b_cnn_1'" in message
    assert "'RNN_1/RNN/MultiRNNCell/Cell1/LSTMCell/W_0'" in message and "(15, 64)" in message
    with pytest.raises(ConfigError, match="softmax"):
        convert_bilm(release["options"], pretrainer=True)
    # The hub module's variables, one missing and one mis-shaped.
    import tensorflow as tf

    reader = tf.train.load_checkpoint(os.path.join(bilm["hub"], "variables", "variables"))
    arrays = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    del arrays["bilm/CNN/b_cnn_1"]
    kernel = "bilm/RNN_1/RNN/MultiRNNCell/Cell1/rnn/lstm_cell/kernel"
    arrays[kernel] = arrays[kernel][:-1]
    hub = tmp_path / "hub"
    prefix = write_tf1_checkpoint(arrays, str(hub / "variables" / "variables"))
    (hub / "tfhub_module.pb").write_bytes(b"\x08\x01")
    with pytest.raises(CheckpointFormatError) as error:
        convert_tf1_hub(str(hub))
    message = str(error.value)
    assert prefix in message and "missing variable 'bilm/CNN/b_cnn_1'" in message
    assert repr(kernel) in message and "(15, 64)" in message


def test_tf1_hub_module(bilm):
    hub = bilm["hub"]
    assert sorted(os.listdir(hub)) == ["saved_model.pb", "tfhub_module.pb", "variables"]
    assert is_elmo_hub_module(hub)
    assert not is_elmo_hub_module(os.path.dirname(bilm["projection"]["options"]))
    assert not is_bilm_release(hub)
    ref = bilm["projection"]["bilm"]
    backbone, _ = convert_tf1_hub(hub)
    ours, _ = _layers(backbone, ref["ids_0"])
    _report("hub module: L+1 layers vs bilm", np.abs(ours - ref["layers_0"])[:, _real(ref["ids_0"])].max())
    with pytest.raises(ConfigError, match="softmax"):
        convert_tf1_hub(hub, pretrainer=True)


def test_softmax_equals_bilm(bilm, tmp_path):
    release = bilm["projection"]
    ref = release["bilm"]
    lm, vocabulary = convert_bilm(
        os.path.dirname(release["options"]), softmax=release["softmax"], vocabulary=release["vocabulary"]
    )
    assert isinstance(lm, ElmoBiLM)
    bilm_words = make_bilm_release.VOCABULARY
    assert vocabulary[:4] == ["<pad>", "<S>", "</S>", "<UNK>"]
    assert sorted(vocabulary[1:]) == sorted(bilm_words)
    order = np.array([bilm_words.index(w) for w in vocabulary[1:]])  # our id k -> bilm id order[k - 1]
    ids = ref["ids_0"]
    real = _real(ids)
    arrays = release["softmax_arrays"]
    w, b = arrays["lm/softmax/W"], arrays["lm/softmax/b"]
    dim = lm.backbone.hidden_dim
    top = ref["layers_0"][-1]
    hidden = {"forward": top[..., :dim], "backward": top[..., dim:]}  # bilm's top layer
    # Full-softmax logits (ElmoSoftmax.logits) from the placed table, on our
    # top layer: bilm's logits of the same words.
    _, outputs = _layers(lm.backbone, ids)
    table, bias = to_numpy(lm.softmax.embeddings), to_numpy(lm.softmax.bias)
    for name in ("forward", "backward"):
        ours = outputs[f"{name}_output"] @ table.T + bias  # (B, W, V + 1)
        logits = hidden[name] @ w.T + b  # bilm's full softmax scores, (B, W, V)
        _report(f"softmax {name} logits", np.abs(ours[..., 1:] - logits[..., order])[real].max())
        assert np.all(ours[..., 0] < -1e29)  # <pad> is never predicted
    # The LM's negative log-likelihood of the targets equals bilm's full softmax loss.
    index = {word: i for i, word in enumerate(vocabulary)}
    token_ids = np.zeros(ids.shape[:2], "int32")
    for r, sentence in enumerate(SENTENCES):
        words = ["<S>"] + sentence + ["</S>"]
        token_ids[r, : len(words)] = [index.get(word, index["<UNK>"]) for word in words]
    targets = dict(zip(("forward", "backward"), lm_targets(token_ids)))
    nll = lm.predict(
        {"char_ids": ids, "next_token_ids": targets["forward"], "previous_token_ids": targets["backward"]},
        verbose=0,
    )
    for name in ("forward", "backward"):
        logits = hidden[name] @ w.T + b
        bilm_targets = np.where(targets[name] > 0, order[np.maximum(targets[name] - 1, 0)], 0)
        top_logit = logits.max(-1, keepdims=True)
        log_z = np.log(np.exp(logits - top_logit).sum(-1)) + top_logit[..., 0]
        expected = log_z - np.take_along_axis(logits, bilm_targets[..., None], -1)[..., 0]
        _report(f"softmax {name} NLL of the targets", np.abs(nll[name] - expected)[targets[name] > 0].max())
    # The vocabulary file beside the options file is found by default.
    assert convert_bilm(release["options"], softmax=release["softmax"])[1] == vocabulary
    # A vocabulary that does not fit the checkpoint: named with the file.
    longer = tmp_path / "vocab.txt"
    longer.write_text("\n".join(bilm_words + ["extra"]) + "\n")
    with pytest.raises(CheckpointFormatError, match=r"lm/softmax/W"):
        convert_bilm(release["options"], softmax=release["softmax"], vocabulary=str(longer))
