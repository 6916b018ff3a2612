"""Bad inputs (issue 23, items 5 and 6): each is refused with a clear one-line
error and exit code 2 before any long work, and nothing is overwritten."""

import io
import json
import os
import tarfile

import pytest

from recipes import create_pretraining_data
from recipes import pretrain
from tests.recipes.test_pretrain_recipe import CORPUS

tf_only = pytest.mark.tf_only


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS * 4, encoding="utf-8")
    return str(path)


def exit_2(main, argv, capsys):
    """The first line of stderr of `main(argv)`, which must exit with code 2."""
    with pytest.raises(SystemExit) as info:
        main(argv)
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    return [line for line in err.splitlines() if "error:" in line][0]


def preset_folder(tmp_path, **config):
    folder = tmp_path / "preset"
    folder.mkdir()
    base = {"vocabulary_size": 100, "num_layers": 2, "num_heads": 2, "hidden_dim": 16, "intermediate_dim": 32}
    (folder / "config.json").write_text(json.dumps({"class_name": "BertBackbone", "config": {**base, **config}}))
    return str(folder)


@tf_only
@pytest.mark.parametrize("case, message", [
    ("empty corpus", "empty (no text to train on)"),
    ("blank corpus", "no usable line (3 read: 3 blank"),
    ("undecodable corpus", "no usable line (2 read: 0 blank, 2 invalid UTF-8"),
    ("unknown preset", "--preset: unknown bert preset 'bert_huge'; choose one of ['bert_base_en_uncased'"),
    ("zero heads", "BertBackbone: sizes must be positive integers; found {'num_heads': 0}"),
    ("heads not dividing", "hidden_dim 16 is not divisible by num_heads 3"),
    ("tpu", "--distribution tpu: No TPU found"),
    ("seq length", "--seq-length 100000 exceeds the 512 positions of the demo configuration"),
    ("seq length of preset", "--seq-length 600 exceeds the 512 positions of --preset bert_base_en_uncased"),
    ("boolean typo", "argument --lowercase: expected true or false (or yes/no, 1/0), got 'flase'"),
    ("unwritable out", "--out: cannot create"),
])
def test_pretrain_refuses_before_creating_the_run_folder(case, message, corpus, tmp_path, capsys):
    out = str(tmp_path / "run")
    argv = {
        "empty corpus": ["--corpus", str(tmp_path / "empty.txt")],
        "blank corpus": ["--corpus", str(tmp_path / "blank.txt")],
        "undecodable corpus": ["--corpus", str(tmp_path / "bad.txt")],
        "unknown preset": ["--preset", "bert_huge"],
        "zero heads": ["--preset", "ZERO"],
        "heads not dividing": ["--preset", "THREE"],
        "tpu": ["--distribution", "tpu"],
        "seq length": ["--seq-length", "100000"],
        "seq length of preset": ["--preset", "bert_base_en_uncased", "--seq-length", "600"],
        "boolean typo": ["--lowercase", "flase"],
        "unwritable out": ["--out", "/proc/keras_pretrain_test/run"],
    }[case]
    (tmp_path / "empty.txt").write_text("")
    (tmp_path / "blank.txt").write_text("\n\n\n")
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\n\xff\n")
    if case == "zero heads":
        argv[1] = preset_folder(tmp_path, num_heads=0)
    if case == "heads not dividing":
        argv[1] = preset_folder(tmp_path, num_heads=3)
    argv = ["--model", "bert", "--corpus", corpus, "--out", out] + argv
    line = exit_2(pretrain.main, argv, capsys)
    assert message in line, line
    assert not os.path.exists(out)  # so the corrected command is not refused


@tf_only
def test_a_run_folder_problem_is_a_usage_error_of_the_recipe(tmp_path, capsys):
    """`common.prepare_output` / `common.acquire_lock`: the library's `RunFolderError` becomes `parser.error`
    (exit code 2, its message as the one error line); the folder problems themselves: tests/training."""
    import argparse
    import socket

    from recipes import common

    parser = argparse.ArgumentParser(prog="recipe")
    out = str(tmp_path / "run")
    assert common.prepare_output(parser, out, {"a": 1}) == 0
    with open(os.path.join(out, common.LOCK_FILE), "w") as f:  # another live process holds it
        json.dump({"pid": os.getppid(), "host": socket.gethostname()}, f)
    for call in (lambda: common.prepare_output(parser, out, {"a": 1}), lambda: common.acquire_lock(parser, out)):
        with pytest.raises(SystemExit) as info:
            call()
        assert info.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"recipe: error: --out: {out!r} is in use by another run (pid {os.getppid()}, lock file "
            f"{os.path.join(out, common.LOCK_FILE)}); wait for it to finish or choose another folder")


def cpd_files(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "."]) + "\n")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(("the cat .\nthe the cat .\n\n") * 20)
    return ["--input_file", str(corpus), "--vocab_file", str(vocab), "--max_seq_length", "16",
            "--max_predictions_per_seq", "2"]


@tf_only
def test_create_pretraining_data_never_overwrites(tmp_path, capsys):
    existing = tmp_path / "precious.tfrecord"
    existing.write_text("keep me")
    argv = cpd_files(tmp_path) + ["--output_file", str(existing)]
    line = exit_2(create_pretraining_data.main, argv, capsys)
    assert f"--output_file: {existing} already exists; nothing is overwritten" in line
    assert existing.read_text() == "keep me"
    new = tmp_path / "new-{shard}.tfrecord"
    argv = cpd_files(tmp_path) + ["--output_file", str(new), "--num_shards", "2"]
    assert create_pretraining_data.main(argv) == 0
    assert sorted(os.listdir(tmp_path)) == ["corpus.txt", "new-0.tfrecord", "new-1.tfrecord", "precious.tfrecord", "vocab.txt"]
    line = exit_2(create_pretraining_data.main, argv, capsys)  # the same command again
    assert "new-0.tfrecord already exists" in line


@tf_only
@pytest.mark.parametrize("extra, message", [
    (["--max_seq_length", "100000"], "--max_seq_length must be in [5, 512]"),
    (["--input_file", "EMPTY"], "empty (no text to train on)"),
    (["--do_lower_case", "--output_file", "/proc/keras_pretrain_test/x.tfrecord"], "--output_file: cannot write in /proc"),
])
def test_create_pretraining_data_bad_inputs_exit_2(tmp_path, capsys, extra, message):
    (tmp_path / "empty.txt").write_text("")
    extra = [str(tmp_path / "empty.txt") if e == "EMPTY" else e for e in extra]
    argv = cpd_files(tmp_path) + ["--output_file", str(tmp_path / "o.tfrecord")] + extra
    line = exit_2(create_pretraining_data.main, argv, capsys)
    assert message in line, line
    assert not os.path.exists(tmp_path / "o.tfrecord")


@tf_only
def test_archive_extraction_has_a_size_limit(tmp_path, monkeypatch):
    from keras_pretrain.checkpoints.archives import safe_extract
    from keras_pretrain.errors import CheckpointFormatError

    archive = tmp_path / "bomb.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = bytes(3_000_000)  # 3 MB of zeros: a few KB compressed
        info = tarfile.TarInfo("model.ckpt.data-00000-of-00001")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    assert os.path.getsize(archive) < 30_000
    with pytest.raises(CheckpointFormatError, match=r"bomb.tar.gz: expands to 3.0 MB, more than the limit of 1.0 MB"):
        safe_extract(archive, tmp_path / "a", max_extract_bytes=1_000_000)
    assert not os.listdir(tmp_path / "a")  # nothing written
    monkeypatch.setenv("KERAS_PRETRAIN_MAX_EXTRACT_BYTES", "2000000")
    with pytest.raises(CheckpointFormatError, match="KERAS_PRETRAIN_MAX_EXTRACT_BYTES"):
        safe_extract(archive, tmp_path / "b")
    monkeypatch.delenv("KERAS_PRETRAIN_MAX_EXTRACT_BYTES")
    # The default: max(100 x the archive, 1 GB); raised by the option.
    assert safe_extract(archive, tmp_path / "c") == [info.name]
    assert safe_extract(archive, tmp_path / "d", max_extract_bytes=4_000_000) == [info.name]


@tf_only
def test_hub_module_with_a_missing_tokenizer_file_is_named(tmp_path):
    import hub_modules
    from hub_modules.exporting import FORMAT
    from keras_pretrain.errors import CheckpointFormatError

    module = tmp_path / "module"
    (module / "tokenizer").mkdir(parents=True)
    (module / "metadata.json").write_text(json.dumps(
        {"format": FORMAT, "family": "bert", "backbone_class": "BertBackbone", "config": {}}))
    with pytest.raises(CheckpointFormatError, match=r"module/tokenizer/tokenizer.json: missing"):
        hub_modules.load_tokenizer(str(module))
    with pytest.raises(CheckpointFormatError, match=r"model.keras missing"):
        hub_modules.load(str(module))


@pytest.mark.parametrize("sizes, message", [
    ({"num_heads": 0}, r"sizes must be positive integers; found \{'num_heads': 0\}"),
    ({"num_heads": 3}, "hidden_dim 16 is not divisible by num_heads 3"),
    ({"num_layers": 0}, r"found \{'num_layers': 0\}"),
])
def test_backbones_refuse_bad_sizes(sizes, message):
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.models.albert import AlbertBackbone
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.gpt import GPTBackbone
    from keras_pretrain.models.roberta import RobertaBackbone
    from keras_pretrain.models.xlnet import XLNetBackbone

    config = {"vocabulary_size": 50, "num_layers": 1, "num_heads": 2, "hidden_dim": 16, "intermediate_dim": 32, **sizes}
    for cls in (BertBackbone, AlbertBackbone, RobertaBackbone, GPTBackbone, XLNetBackbone):
        with pytest.raises(ConfigError, match=message):
            cls(**config)


@pytest.mark.parametrize("argv, message", [
    (["--model", "bert", "--lexicon", "LEXICON"], "--lexicon: only knowledge masking reads a lexicon; bert masks with token"),
    (["--model", "gpt", "--masking", "ngram"], "--masking: gpt does not mask tokens"),
    (["--model", "xlnet", "--objective", "nsp"], "--objective nsp: xlnet takes permutation_lm"),
])
def test_pretrain_options_the_family_does_not_use(tmp_path, capsys, argv, message):
    lexicon = tmp_path / "lexicon.txt"
    lexicon.write_text("孔子\n论语\n", encoding="utf-8")
    argv = [str(lexicon) if a == "LEXICON" else a for a in argv] + ["--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as e:
        pretrain.main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "run").exists()  # refused before anything is written
