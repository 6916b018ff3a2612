"""Which TF1 checkpoint a folder, prefix or archive loads (tiny checkpoints written by tf.compat.v1).

Every checkpoint of a run folder holds different weights (the pooler bias is
filled with its global step), so the loaded model tells which one was read.
"""

import io
import json
import os
import shutil
import stat
import tarfile
import zipfile

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.checkpoints.archives import safe_extract
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.models.albert import load_albert

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.tf_only  # checkpoint and archive reading (TF-side code)

POOLER_BIAS = "bert/pooler/dense/bias"
GLOB_NAME = "run [v2] *?"


@pytest.fixture(scope="module")
def bert_arrays():
    from tests.models.bert.test_bert_parity import hf_config
    from tests.models.bert.test_bert_parity import hf_to_tf1_names

    model = transformers.BertForPreTraining(hf_config("gelu_new"))
    return hf_to_tf1_names(model.state_dict())


@pytest.fixture(scope="module")
def albert_model():
    from tests.models.albert.fixtures import ZH_VOCAB
    from tests.models.albert.fixtures import hf_albert

    return hf_albert(len(ZH_VOCAB), hidden_act="relu")


def save_step(arrays, folder, step, name="model.ckpt"):
    """`Saver.save(..., global_step=step)` as `run_pretraining.py` (writes the `checkpoint` file too)."""
    import tensorflow as tf

    arrays = dict(arrays, **{POOLER_BIAS: np.full_like(arrays[POOLER_BIAS], step)})
    arrays["global_step"] = np.array(step, "int64")
    os.makedirs(folder, exist_ok=True)
    with tf.Graph().as_default():
        variables = [tf.compat.v1.get_variable(k, initializer=np.asarray(v)) for k, v in arrays.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, os.path.join(folder, name), global_step=step)


def write_bert_files(folder):
    from tests.models.bert.test_bert_parity import VOCAB
    from tests.models.bert.test_bert_parity import hf_config

    config = hf_config().to_dict()
    keys = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "hidden_act", "max_position_embeddings", "type_vocab_size", "initializer_range"]
    with open(os.path.join(folder, "bert_config.json"), "w") as f:
        json.dump({k: config[k] for k in keys}, f)
    with open(os.path.join(folder, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")


def bert_run(arrays, folder, steps):
    """A `run_pretraining.py` output folder (+ bert_config.json, vocab.txt); saved in `steps` order."""
    for step in steps:
        save_step(arrays, folder, step)
    write_bert_files(folder)
    return folder


def loaded_step(model):
    bias = np.asarray(model.pooled_dense.bias)
    assert np.all(bias == bias[0])
    return int(bias[0])


def load_bert(path, capsys=None, **kwargs):
    model, tokenizer = convert.from_tf1_checkpoint(path, **kwargs)
    assert tokenizer is not None
    return loaded_step(model)


def test_state_file_then_highest_step(bert_arrays, tmp_path, capsys):
    folder = bert_run(bert_arrays, str(tmp_path / "run"), [100, 20])  # the last save (20) is in `checkpoint`
    with open(os.path.join(folder, "checkpoint")) as f:
        assert f.readline().endswith('/run/model.ckpt-20"\n')
    assert load_bert(folder) == 20
    assert "model.ckpt-20 (named by the 'checkpoint' file)" in capsys.readouterr().out
    os.remove(os.path.join(folder, "checkpoint"))
    assert load_bert(folder) == 100  # numbers, not text: "model.ckpt-100" < "model.ckpt-20"
    assert "model.ckpt-100 (highest global step (100))" in capsys.readouterr().out


def test_state_file_from_another_machine(bert_arrays, tmp_path, capsys):
    """Absolute paths of the training machine (folder copied since): the same file name here."""
    import tensorflow as tf

    folder = bert_run(bert_arrays, str(tmp_path / "copied"), [20, 100, 300])
    tf.compat.v1.train.update_checkpoint_state(
        folder, "/home/someone/gone/model.ckpt-100",
        all_model_checkpoint_paths=["/home/someone/gone/model.ckpt-20", "/home/someone/gone/model.ckpt-100"])
    assert load_bert(folder) == 100
    # A state file naming a checkpoint that is not there: the highest step, said so.
    tf.compat.v1.train.update_checkpoint_state(folder, "model.ckpt-999")
    assert load_bert(folder) == 300
    assert "/model.ckpt-999, which is not in the folder; choosing by global step" in capsys.readouterr().out


def test_explicit_prefix_loads_exactly_that(bert_arrays, albert_model, tmp_path, capsys):
    folder = bert_run(bert_arrays, str(tmp_path / "bert"), [20, 100])
    assert load_bert(os.path.join(folder, "model.ckpt-20")) == 20
    assert load_bert(os.path.join(folder, "model.ckpt-20.index")) == 20
    assert "model.ckpt-20 (the prefix given)" in capsys.readouterr().out
    with pytest.raises(CheckpointFormatError, match=r"model.ckpt-1000: no such checkpoint.*model.ckpt-100"):
        convert.from_tf1_checkpoint(os.path.join(folder, "model.ckpt-1000"))
    # ALBERT: the prefix is not reduced to its folder (which holds -best and 100).
    root = albert_folder(albert_model, tmp_path / "albert", [20, 100])
    for path, step in ((os.path.join(root, "model.ckpt-20"), 20), (root, 100), (str(tmp_path / "albert"), 100)):
        backbone, tokenizer = load_albert(path)
        assert loaded_step(backbone) == step and tokenizer is not None, path
        backbone, _ = convert.from_tf1_checkpoint(path, family="albert")
        assert loaded_step(backbone) == step


def albert_folder(model, folder, steps):
    """Google's ALBERT layout (`model.ckpt-best` = step 7, config, vocabulary) plus run checkpoints."""
    from tests.models.albert.fixtures import hf_to_tf1_names
    from tests.models.albert.fixtures import with_optimizer_slots
    from tests.models.albert.fixtures import write_albert

    arrays = with_optimizer_slots(hf_to_tf1_names(model))
    arrays[POOLER_BIAS] = np.full_like(arrays[POOLER_BIAS], 7)
    root = write_albert(str(folder), "zh", model, arrays=arrays)
    for step in steps:
        save_step(arrays, root, step)
    os.remove(os.path.join(root, "checkpoint"))
    return root


def test_best_and_ambiguous(albert_model, bert_arrays, tmp_path):
    root = albert_folder(albert_model, tmp_path / "best", [])
    assert loaded_step(load_albert(root)[0]) == 7  # only model.ckpt-best
    from tests.testing import write_tf1_checkpoint

    folder = str(tmp_path / "two")
    for name, step in (("first", 5), ("second", 6)):
        write_tf1_checkpoint(dict(bert_arrays, **{POOLER_BIAS: np.full_like(bert_arrays[POOLER_BIAS], step)}),
                             os.path.join(folder, name))
    os.remove(os.path.join(folder, "checkpoint"))  # Saver.save writes one
    write_bert_files(folder)
    with pytest.raises(CheckpointFormatError, match=r"several checkpoints and no rule.*'first', 'second'"):
        convert.from_tf1_checkpoint(folder)
    assert load_bert(os.path.join(folder, "second")) == 6


def test_glob_characters_in_names(bert_arrays, albert_model, tmp_path):
    folder = bert_run(bert_arrays, str(tmp_path / GLOB_NAME), [100, 20])
    assert load_bert(folder) == 20  # the state file, read from a folder named with [ ] * ?
    os.remove(os.path.join(folder, "checkpoint"))
    assert load_bert(folder) == 100
    assert load_bert(os.path.join(folder, "model.ckpt-20")) == 20
    root = albert_folder(albert_model, tmp_path / f"albert {GLOB_NAME}", [3])
    assert loaded_step(load_albert(root)[0]) == 3
    archive = str(tmp_path / f"albert_base_zh {GLOB_NAME}.tar.gz")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(root, arcname="albert_base")
    assert loaded_step(load_albert(archive)[0]) == 3


def google_zip(arrays, tmp_path, top="uncased_L-2_H-32_A-2", name=None):
    """The layout of Google's released BERT zips: one top folder with config, checkpoint, vocab."""
    from tests.testing import write_tf1_checkpoint

    src = tmp_path / f"src_{top}"
    folder = src / top
    write_tf1_checkpoint(dict(arrays, **{POOLER_BIAS: np.full_like(arrays[POOLER_BIAS], 42)}),
                         str(folder / "bert_model.ckpt"))
    (folder / "checkpoint").unlink()  # not in Google's zips
    (folder / "bert_model.ckpt.meta").write_bytes(b"\x08\x01")
    write_bert_files(str(folder))
    path = str(tmp_path / (name or f"{top}.zip"))
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(folder, f"{top}/")
        for file in sorted(os.listdir(folder)):
            zf.write(folder / file, f"{top}/{file}")
    shutil.rmtree(src)
    return path


def test_google_bert_zip(bert_arrays, tmp_path):
    path = google_zip(bert_arrays, tmp_path)
    with zipfile.ZipFile(path) as zf:
        assert sorted(zf.namelist()) == [
            "uncased_L-2_H-32_A-2/", "uncased_L-2_H-32_A-2/bert_config.json",
            "uncased_L-2_H-32_A-2/bert_model.ckpt.data-00000-of-00001",
            "uncased_L-2_H-32_A-2/bert_model.ckpt.index", "uncased_L-2_H-32_A-2/bert_model.ckpt.meta",
            "uncased_L-2_H-32_A-2/vocab.txt"]
    pretrainer, tokenizer = convert.from_tf1_checkpoint(path, pretrainer=True)
    assert loaded_step(pretrainer.backbone) == 42
    word = pretrainer.backbone.token_embedding.embeddings
    np.testing.assert_array_equal(np.asarray(word), bert_arrays["bert/embeddings/word_embeddings"])
    assert tokenizer.vocabulary_size() == 64
    out = tmp_path / "kept"
    assert load_bert(path, extract_to=str(out)) == 42
    assert (out / "uncased_L-2_H-32_A-2" / "vocab.txt").exists()
    # Glob characters in the archive's name.
    assert load_bert(google_zip(bert_arrays, tmp_path, name=f"{GLOB_NAME}.zip")) == 42
    # Truncated download.
    cut = str(tmp_path / "cut.zip")
    data = open(path, "rb").read()
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(CheckpointFormatError, match="cut.zip: truncated, corrupt or unreadable"):
        convert.from_tf1_checkpoint(cut)


def zip_member(zf, name, mode=stat.S_IFREG | 0o644, data=b"x"):
    info = zipfile.ZipInfo(name)
    info.external_attr = mode << 16
    zf.writestr(info, data)


@pytest.mark.parametrize(
    "name, mode, data, message",
    [
        ("top/../../evil.txt", stat.S_IFREG | 0o644, b"x", "contains '..'"),
        ("/tmp/evil_absolute_zip.txt", stat.S_IFREG | 0o644, b"x", "absolute path"),
        ("top/link", stat.S_IFLNK | 0o777, b"../../../etc/passwd", "symbolic link"),
        ("top/fifo", stat.S_IFIFO | 0o644, b"", "FIFO"),
        ("top/device", stat.S_IFCHR | 0o644, b"", "device file"),
    ],
    ids=["dotdot", "absolute", "symlink", "fifo", "device"],
)
def test_unsafe_zip_members_are_refused(tmp_path, name, mode, data, message):
    path = str(tmp_path / "evil.zip")
    with zipfile.ZipFile(path, "w") as zf:
        zip_member(zf, "top/bert_config.json", data=b"{}")
        zip_member(zf, name, mode, data)
    out = tmp_path / "out"
    with pytest.raises(CheckpointFormatError, match=f"evil.zip: member .*{message}"):
        convert.from_tf1_checkpoint(path, extract_to=str(out))
    with pytest.raises(CheckpointFormatError, match=message):
        safe_extract(path, str(tmp_path / "out2"))
    # Nothing was written, inside or outside.
    assert not (tmp_path / "evil.txt").exists() and not os.path.exists("/tmp/evil_absolute_zip.txt")
    assert not out.exists() or not any(out.rglob("*"))


def test_zip_written_on_windows_extracts(tmp_path):
    """Members without Unix mode bits (external_attr 0) are plain files."""
    path = str(tmp_path / "plain.zip")
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("top/a.txt", b"hello")
    assert safe_extract(path, str(tmp_path / "out")) == ["top/a.txt"]
    assert (tmp_path / "out" / "top" / "a.txt").read_bytes() == b"hello"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w"):
        pass
    (tmp_path / "empty.zip").write_bytes(buffer.getvalue())
    with pytest.raises(CheckpointFormatError, match="empty.zip: the archive is empty"):
        safe_extract(str(tmp_path / "empty.zip"), str(tmp_path / "out3"))
