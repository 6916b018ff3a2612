import json
import os

import keras
import numpy as np
import pytest

import hub_modules
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from keras_pretrain.models.bert import BertTokenizer
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "猫", "坐"]


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    keras.utils.set_random_seed(1)
    backbone = BertBackbone(vocabulary_size=len(VOCAB), num_layers=2, num_heads=2, hidden_dim=16,
                            intermediate_dim=32, max_sequence_length=16)
    pretrainer = BertPretrainer(backbone)
    tokenizer = BertTokenizer(vocabulary=VOCAB, lowercase=True)
    path = str(tmp_path_factory.mktemp("module") / "bert")
    hub_modules.export(pretrainer, path, tokenizer=tokenizer, seq_length=12)
    return path, pretrainer, tokenizer


def hub_inputs(data):
    return {"input_word_ids": data["token_ids"], "input_mask": data["padding_mask"], "input_type_ids": data["segment_ids"]}


def test_load_matches_model_and_fine_tunes(module):
    path, pretrainer, _ = module
    data = random_encoder_inputs(2, 10, len(VOCAB), pad_from=7)
    layer = hub_modules.load(path)
    expected = pretrainer.backbone(data)
    got = layer(hub_inputs(data))
    assert max_abs_diff(got["sequence_output"], expected["sequence_output"]) <= 1e-5
    assert max_abs_diff(got["default"], expected["pooled_output"]) <= 1e-5
    # One fine-tuning step inside model.fit on this backend.
    inputs = {k: keras.Input(shape=(None,), dtype="int32", name=k) for k in ("input_word_ids", "input_mask", "input_type_ids")}
    model = keras.Model(inputs, keras.layers.Dense(2)(layer(inputs)["pooled_output"]))
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [keras.ops.convert_to_numpy(w).copy() for w in layer.backbone.trainable_weights]
    model.fit(hub_inputs(data), np.array([0, 1]), epochs=1, verbose=0)
    after = [keras.ops.convert_to_numpy(w) for w in layer.backbone.trainable_weights]
    assert any(np.abs(a - b).max() > 0 for a, b in zip(after, before))


@pytest.mark.tf_only
def test_savedmodels_match_and_preprocessor_matches_tokenizer(module):
    import tensorflow as tf

    path, pretrainer, tokenizer = module
    data = random_encoder_inputs(2, 10, len(VOCAB), pad_from=7)
    encoder = tf.saved_model.load(os.path.join(path, "encoder"))
    out = encoder({k: tf.constant(v) for k, v in hub_inputs(data).items()})
    assert max_abs_diff(out["pooled_output"].numpy(), pretrainer.backbone(data)["pooled_output"]) <= 1e-5
    preprocessor = tf.saved_model.load(os.path.join(path, "preprocessor"))
    text = "The cat sat on the MAT. 猫坐 unknownword"
    ids = preprocessor.tokenize(tf.constant([text])).to_list()[0]
    assert ids == [int(i) for i in np.asarray(tokenizer(text))]
    packed = preprocessor(tf.constant([text]))
    assert packed["input_word_ids"].shape == (1, 12)
    # Strings in, vectors out, in one graph.
    vectors = encoder(preprocessor(tf.constant([text, "猫"])))["pooled_output"]
    assert vectors.shape == (2, 16)
    layer = hub_modules.load(path, savedmodel=True)
    assert max_abs_diff(layer(hub_inputs(data))["pooled_output"], out["pooled_output"].numpy()) <= 1e-5


def test_corrupt_modules_give_clear_errors(module, tmp_path):
    path, _, _ = module
    with pytest.raises(CheckpointFormatError, match="no such module folder"):
        hub_modules.load(str(tmp_path / "nothing"))
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointFormatError, match="metadata.json missing"):
        hub_modules.load(str(empty))
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "metadata.json").write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(CheckpointFormatError, match="format 'something-else'"):
        hub_modules.load(str(bad))
    (bad / "metadata.json").write_text(json.dumps({"format": "keras_pretrain.hub_module", "format_version": 1, "family": "bert"}))
    with pytest.raises(CheckpointFormatError, match="model.keras missing"):
        hub_modules.load(str(bad))
    (bad / "model.keras").write_bytes(b"not a zip file")
    with pytest.raises(CheckpointFormatError, match="model.keras: unreadable"):
        hub_modules.load(str(bad))


def test_registry_never_downloads(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_PRETRAIN_CACHE", str(tmp_path))
    with pytest.raises(CheckpointFormatError) as info:
        hub_modules.resolve("albert_base_v2")
    message = str(info.value)
    assert "albert_base_v2.tar.gz" in message and str(tmp_path) in message and "nothing is downloaded" in message
    (tmp_path / "albert_base_v2.tar.gz").write_bytes(b"")
    assert hub_modules.resolve("albert_base_v2") == str(tmp_path / "albert_base_v2.tar.gz")
