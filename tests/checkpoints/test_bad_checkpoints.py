"""Bad input gives a clear error that names the file and the problem."""

import json
import os

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.errors import ConfigError
from tests.models.bert.test_bert_parity import hf_config
from tests.models.bert.test_bert_parity import hf_reference
from tests.models.bert.test_bert_parity import write_google_bert

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.tf_only


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("hf"))
    hf_reference("gelu", folder)
    return folder


def copy_folder(src, dst, drop=None, edit_weights=None):
    from safetensors.numpy import load_file, save_file

    os.makedirs(dst)
    for name in os.listdir(src):
        if name == "model.safetensors":
            arrays = load_file(os.path.join(src, name))
            if edit_weights:
                edit_weights(arrays)
            save_file(arrays, os.path.join(dst, name))
        else:
            with open(os.path.join(src, name), "rb") as f, open(os.path.join(dst, name), "wb") as g:
                g.write(f.read())


def test_missing_variable_is_named(hf_folder, tmp_path):
    dst = str(tmp_path / "m")
    copy_folder(hf_folder, dst, edit_weights=lambda a: a.pop("bert.encoder.layer.1.attention.self.key.weight"))
    with pytest.raises(CheckpointFormatError) as info:
        convert.from_huggingface(dst)
    message = str(info.value)
    assert "model.safetensors" in message
    assert "missing variable 'bert.encoder.layer.1.attention.self.key.weight'" in message


def test_shape_mismatch_is_named(hf_folder, tmp_path):
    dst = str(tmp_path / "s")

    def edit(arrays):
        arrays["bert.pooler.dense.bias"] = np.zeros((31,), "float32")

    copy_folder(hf_folder, dst, edit_weights=edit)
    with pytest.raises(CheckpointFormatError, match=r"shape mismatch for 'bert.pooler.dense.bias': checkpoint has \(31,\)"):
        convert.from_huggingface(dst)


def test_unexpected_variable_is_named(hf_folder, tmp_path):
    dst = str(tmp_path / "u")
    copy_folder(hf_folder, dst, edit_weights=lambda a: a.update(extra_weight=np.zeros(3, "float32")))
    with pytest.raises(CheckpointFormatError, match="unexpected variable 'extra_weight'"):
        convert.from_huggingface(dst)


def test_corrupt_config(hf_folder, tmp_path):
    dst = str(tmp_path / "c")
    copy_folder(hf_folder, dst)
    with open(os.path.join(dst, "config.json"), "w") as f:
        f.write('{"model_type": "bert", "hidden_size": 32,')
    with pytest.raises(ConfigError, match=r"config.json: not valid JSON"):
        convert.from_huggingface(dst)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump({"model_type": "bert", "hidden_size": 32}, f)
    with pytest.raises(ConfigError, match=r"missing config key\(s\) \['vocab_size'"):
        convert.from_huggingface(dst)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump({"model_type": "mystery"}, f)
    with pytest.raises(ConfigError, match="model_type 'mystery' is not supported"):
        convert.from_huggingface(dst)


def test_corrupt_safetensors(hf_folder, tmp_path):
    dst = str(tmp_path / "t")
    copy_folder(hf_folder, dst)
    path = os.path.join(dst, "model.safetensors")
    with open(path, "r+b") as f:
        f.truncate(100)
    with pytest.raises(CheckpointFormatError, match="model.safetensors: unreadable"):
        convert.from_huggingface(dst)


def test_tf1_missing_and_mismatched_variables(tmp_path):
    model = transformers.BertForPreTraining(hf_config("gelu_new"))
    folder = str(tmp_path / "google")
    arrays = write_google_bert(model, folder)
    # Rewrite with one variable missing and one mis-shaped.
    import shutil

    shutil.rmtree(folder)
    arrays.pop("bert/encoder/layer_1/output/dense/bias")
    arrays["bert/pooler/dense/kernel"] = np.zeros((32, 16), "float32")
    from tests.testing import write_tf1_checkpoint

    write_google_bert(model, folder)
    os.remove(os.path.join(folder, "bert_model.ckpt.index"))
    for name in os.listdir(folder):
        if name.startswith("bert_model.ckpt.data"):
            os.remove(os.path.join(folder, name))
    write_tf1_checkpoint(arrays, os.path.join(folder, "bert_model.ckpt"))
    with pytest.raises(CheckpointFormatError) as info:
        convert.from_tf1_checkpoint(folder)
    message = str(info.value)
    assert "bert_model.ckpt" in message
    assert "missing variable 'bert/encoder/layer_1/output/dense/bias'" in message
    assert "shape mismatch for 'bert/pooler/dense/kernel'" in message
    assert "adam_m" not in message and "global_step" not in message


def test_tf1_truncated_data_file(tmp_path):
    model = transformers.BertForPreTraining(hf_config("gelu_new"))
    folder = str(tmp_path / "google")
    write_google_bert(model, folder)
    data = [n for n in os.listdir(folder) if ".data-" in n][0]
    with open(os.path.join(folder, data), "r+b") as f:
        f.truncate(64)
    with pytest.raises(CheckpointFormatError, match="bert_model.ckpt"):
        convert.from_tf1_checkpoint(folder)


def test_no_checkpoint_in_folder(tmp_path):
    with pytest.raises(CheckpointFormatError, match="no TF1 checkpoint found"):
        convert.from_tf1_checkpoint(str(tmp_path))
