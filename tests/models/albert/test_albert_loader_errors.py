"""Every bad input of the ALBERT loader raises a clear CheckpointFormatError."""

import io
import os
import tarfile

import numpy as np
import pytest

from keras_pretrain.checkpoints.archives import safe_extract
from keras_pretrain.errors import CheckpointFormatError
from keras_pretrain.models.albert import load_albert
from tests.models.albert.fixtures import ZH_VOCAB
from tests.models.albert.fixtures import build_albert_archive
from tests.models.albert.fixtures import hf_albert
from tests.models.albert.fixtures import hf_to_tf1_names
from tests.models.albert.fixtures import make_tarball
from tests.models.albert.fixtures import with_optimizer_slots
from tests.models.albert.fixtures import write_albert

pytestmark = pytest.mark.tf_only  # checkpoint and archive reading (TF-side code)


@pytest.fixture(scope="module")
def model():
    return hf_albert(len(ZH_VOCAB), hidden_act="relu")


def write_zh(tmp_path, model, arrays, name="src"):
    return write_albert(str(tmp_path / name), "zh", model, arrays=arrays)


def test_truncated_archive(tmp_path):
    path, _ = build_albert_archive(str(tmp_path), "zh")
    data = open(path, "rb").read()
    cut = str(tmp_path / "albert_base_zh_cut.tar.gz")
    with open(cut, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(CheckpointFormatError, match="albert_base_zh_cut.tar.gz.*truncated"):
        load_albert(cut)
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    with pytest.raises(CheckpointFormatError, match="garbage.tar.gz"):
        load_albert(str(garbage))


def test_missing_variable_and_shape_mismatch(tmp_path, model):
    arrays = with_optimizer_slots(hf_to_tf1_names(model))
    name = "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel"
    missing = {k: v for k, v in arrays.items() if k != name}
    folder = write_zh(tmp_path, model, missing, "missing")
    with pytest.raises(CheckpointFormatError, match=f"missing variable '{name}'"):
        load_albert(folder)
    wrong = dict(arrays)
    wrong["bert/pooler/dense/kernel"] = np.zeros((32, 31), "float32")
    folder = write_zh(tmp_path, model, wrong, "wrong")
    with pytest.raises(CheckpointFormatError, match="shape mismatch for 'bert/pooler/dense/kernel'.*(32, 31)"):
        load_albert(folder)
    # Heads are required only for the pretrainer.
    no_heads = {k: v for k, v in arrays.items() if not k.startswith("cls/")}
    folder = write_zh(tmp_path, model, no_heads, "no_heads")
    load_albert(folder)
    with pytest.raises(CheckpointFormatError, match="missing variable 'cls/seq_relationship/output_weights'"):
        load_albert(folder, pretrainer=True)


def test_community_albert_zh_layout(tmp_path, model):
    arrays = {
        "bert/embeddings/word_embeddings": np.zeros((40, 8), "float32"),
        "bert/embeddings/word_embeddings_2": np.zeros((8, 32), "float32"),
        "bert/encoder/layer_shared/attention/self/query/kernel": np.zeros((32, 32), "float32"),
    }
    folder = write_zh(tmp_path, model, arrays)
    with pytest.raises(CheckpointFormatError, match="community 'albert_zh' checkpoint.*different format"):
        load_albert(folder)


def test_missing_config_and_checkpoint(tmp_path, model):
    folder = write_zh(tmp_path, model, hf_to_tf1_names(model))
    os.remove(os.path.join(folder, "albert_config.json"))
    with pytest.raises(CheckpointFormatError, match="no albert_config.json"):
        load_albert(folder)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CheckpointFormatError, match="no TF1 checkpoint"):
        load_albert(str(empty))
    with pytest.raises(CheckpointFormatError, match="no such file"):
        load_albert(str(tmp_path / "nothing_here.tar.gz"))


def add_member(tar, name, data=b"x", kind=tarfile.REGTYPE, linkname=""):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = linkname
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


@pytest.mark.parametrize(
    "name, kind, linkname, message",
    [
        ("albert_base/../../evil.txt", tarfile.REGTYPE, "", "contains '..'"),
        ("/tmp/evil_absolute.txt", tarfile.REGTYPE, "", "absolute path"),
        ("albert_base/link", tarfile.SYMTYPE, "../../../etc/passwd", "symbolic link"),
        ("albert_base/hard", tarfile.LNKTYPE, "/etc/passwd", "hard link"),
        ("albert_base/fifo", tarfile.FIFOTYPE, "", "FIFO"),
    ],
    ids=["dotdot", "absolute", "symlink", "hardlink", "fifo"],
)
def test_unsafe_members_are_refused(tmp_path, name, kind, linkname, message):
    path = str(tmp_path / "evil.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        add_member(tar, "albert_base/albert_config.json", b"{}")
        add_member(tar, name, kind=kind, linkname=linkname)
    out = tmp_path / "out"
    with pytest.raises(CheckpointFormatError, match=f"evil.tar.gz: member .*{message}"):
        load_albert(path, extract_to=str(out))
    # Nothing was written, inside or outside.
    assert not (tmp_path / "evil.txt").exists() and not os.path.exists("/tmp/evil_absolute.txt")
    assert not out.exists() or not any(out.rglob("*"))


def test_safe_members_with_inner_link_extract(tmp_path):
    path = str(tmp_path / "ok.tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        add_member(tar, "top/a.txt", b"hello")
        add_member(tar, "top/b.txt", kind=tarfile.SYMTYPE, linkname="a.txt")
    names = safe_extract(path, str(tmp_path / "out"))
    assert names == ["top/a.txt", "top/b.txt"]
    assert (tmp_path / "out" / "top" / "b.txt").read_text() == "hello"


def test_tarball_round_trip_has_one_top_folder(tmp_path, model):
    folder = write_zh(tmp_path, model, with_optimizer_slots(hf_to_tf1_names(model)))
    path = make_tarball(os.path.dirname(folder), str(tmp_path / "albert_base_zh.tar.gz"))
    with tarfile.open(path) as tar:
        assert {n.split("/")[0] for n in tar.getnames()} == {"albert_base"}
    backbone, tokenizer = load_albert(path)
    assert backbone.activation == "relu" and tokenizer.vocabulary_size() > 5
