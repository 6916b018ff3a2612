"""Static data at corpus scale: shard-by-shard in-process builds and the Apache Beam pipeline (DirectRunner)
give the same records and the same counts; bad input is counted and skipped, or refused with --strict."""

import glob
import os
import random
import re

import pytest
import tensorflow as tf

from keras_pretrain.data.tfrecords import shard_paths
from recipes import create_pretraining_data as recipe

pytestmark = pytest.mark.tf_only

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "new", "york", "北", "京", "##s"] + [
    f"{prefix}{i}" for prefix in "ab" for i in range(30)]


def _shards(tmp_path, bad=False):
    """Three shards of documents; shard 0 only uses a-words, the others b-words. With `bad`: an empty
    shard, a shard with an invalid UTF-8 line and one with a 10 MB line."""
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp_path / "entities.txt").write_text("new york\n北京\n")
    folder = tmp_path / "corpus"
    folder.mkdir()
    rng = random.Random(0)
    for shard, prefix in enumerate("abb"):
        docs = []
        for _ in range(12):
            lines = [" ".join(f"{prefix}{rng.randint(0, 29)}" for _ in range(rng.randint(3, 9)))
                     + rng.choice([" .", " new york .", " 北京 ."]) for _ in range(rng.randint(1, 6))]
            docs.append("\n".join(lines))
        (folder / f"part-{shard}.txt").write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    if bad:
        (folder / "part-3.txt").write_bytes(b"")
        (folder / "part-4.txt").write_bytes(b"a1 a2 a3 .\n\xff\xfe broken\na4 a5 .\n\nb1 b2 .\nb3 b4 .\n")
        (folder / "part-5.txt").write_bytes(b"a1 " * 3_500_000 + b"\n\na2 a3 .\na4 a5 .\n")
    return str(folder), str(tmp_path / "vocab.txt"), str(tmp_path / "entities.txt")


def _run(tmp_path, name, extra, capsys=None):
    folder, vocab, entities = _shards(tmp_path) if not (tmp_path / "corpus").exists() else (
        str(tmp_path / "corpus"), str(tmp_path / "vocab.txt"), str(tmp_path / "entities.txt"))
    pattern = str(tmp_path / name / "train-{shard:05d}-of-{num_shards:05d}.tfrecord")
    argv = ["--input_file", folder, "--vocab_file", vocab, "--output_file", pattern, "--num_shards", "3",
            "--max_seq_length", "32", "--max_predictions_per_seq", "5", "--dupe_factor", "3",
            "--entities_file", entities, "--num_examples_to_print", "0"] + extra
    code = recipe.main(argv)
    captured = capsys.readouterr() if capsys else None
    return code, pattern, captured.out + captured.err if captured else ""


def _records(pattern):
    files = shard_paths(pattern, 3)
    assert all(os.path.isfile(f) for f in files)
    return sorted(r.numpy() for f in files for r in tf.data.TFRecordDataset(f))


def _summary(out):
    # The counts of the closing line, without the time.
    line = [x for x in out.splitlines() if x.startswith("Wrote ")][-1]
    return re.sub(r" in [\d.]+ s$", "", line)


def _tokens(record):
    """The instance's tokens before masking (a random replacement may be any token)."""
    example = tf.train.Example.FromString(record).features.feature
    ids = list(example["input_ids"].int64_list.value)
    weights = example["masked_lm_weights"].float_list.value
    for position, label, weight in zip(example["masked_lm_positions"].int64_list.value,
                                       example["masked_lm_ids"].int64_list.value, weights):
        if weight:
            ids[position] = label
    return [VOCAB[i] for i in ids]


@pytest.mark.parametrize("objective, masking", [("nsp", "token"), ("sop", "ngram"),
                                                ("full_sentences", "whole_word"),
                                                ("doc_sentences", "knowledge")])
def test_beam_writes_the_records_of_the_in_process_build(tmp_path, capsys, objective, masking):
    pytest.importorskip("apache_beam")
    extra = ["--objective", objective, "--masking", masking]
    code, local, local_out = _run(tmp_path, "local", extra, capsys)
    assert code == 0
    code, beam, beam_out = _run(tmp_path, "beam", extra + ["--runner", "DirectRunner"], capsys)
    assert code == 0, beam_out
    assert _records(beam) == _records(local)  # the same bytes: instances, masks, features
    assert _summary(beam_out) == _summary(local_out)
    assert "files=3, empty_files=0" in _summary(local_out)
    if objective in ("nsp", "sop"):
        # A random next segment comes from the same shard: no instance mixes shard 0's words with the others'.
        for record in _records(local):
            words = {t[0] for t in _tokens(record) if re.fullmatch("[ab][0-9]+", t)}
            assert len(words) <= 1


def test_beam_records_do_not_depend_on_the_run_or_the_workers(tmp_path, capsys):
    pytest.importorskip("apache_beam")
    code, one, _ = _run(tmp_path, "one", ["--runner", "DirectRunner"], capsys)
    assert code == 0
    code, two, out = _run(tmp_path, "two", ["--runner", "DirectRunner", "--direct_num_workers", "2",
                                            "--direct_running_mode", "multi_threading"], capsys)
    assert code == 0, out
    code, seed, _ = _run(tmp_path, "seed", ["--runner", "DirectRunner", "--random_seed", "7"], capsys)
    assert code == 0
    assert _records(one) == _records(two) != _records(seed)


def test_beam_with_the_runners_file_count_writes_the_same_records_where_they_are_built(tmp_path, capsys):
    pytest.importorskip("apache_beam")
    code, local, _ = _run(tmp_path, "local", [], capsys)
    assert code == 0
    runner = ["--runner", "DirectRunner", "--direct_num_workers", "2", "--direct_running_mode", "multi_threading"]
    code, pattern, out = _run(tmp_path, "beam", runner + ["--num_shards", "0"], capsys)
    assert code == 0, out
    files = sorted(glob.glob(os.path.join(os.path.dirname(pattern), "*")))
    assert files and all(re.fullmatch(r"train-(\d{5})-of-(\d{5})\.tfrecord", os.path.basename(f)) for f in files)
    assert [f"  {f}" for f in files] == [x for x in out.splitlines() if x.startswith("  ")]
    assert sorted(r.numpy() for f in files for r in tf.data.TFRecordDataset(f)) == _records(local)
    # A second run refuses before any work, whatever file count the first one chose; in-process needs >= 1.
    for extra in (runner + ["--num_shards", "0"], ["--num_shards", "0"]):
        with pytest.raises(SystemExit) as e:
            _run(tmp_path, "beam", extra)
        assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{files[0]} already exists ({len(files)} files match" in err
    assert "--num_shards must be >= 1 (or 0 with --runner: the runner's choice), got 0" in err
    assert sorted(glob.glob(os.path.join(os.path.dirname(pattern), "*"))) == files


def test_bad_shards_are_counted_and_skipped_then_refused_with_strict(tmp_path, capsys):
    pytest.importorskip("apache_beam")
    _shards(tmp_path, bad=True)
    code, local, local_out = _run(tmp_path, "local", [], capsys)
    assert code == 0
    code, beam, beam_out = _run(tmp_path, "beam", ["--runner", "DirectRunner"], capsys)
    assert code == 0, beam_out
    summary = _summary(local_out)
    assert "files=6, empty_files=1," in summary and "invalid_utf8_lines=1, overlong_lines=1," in summary
    assert _summary(beam_out) == summary and _records(beam) == _records(local)
    assert "part-4.txt:2: invalid UTF-8" in local_out and "part-5.txt:1: line of 10499999 characters" in local_out
    for runner in ([], ["--runner", "DirectRunner"]):
        code, pattern, err = _run(tmp_path, f"strict{len(runner)}", ["--strict"] + runner, capsys)
        # In-process stops at the first bad shard in order; Beam at whichever a worker meets first.
        assert code == 1 and re.search(r"part-3.txt: empty file|part-4.txt:2: invalid UTF-8|part-5.txt:1: line of", err), err
        folder = os.path.dirname(pattern)
        assert not glob.glob(os.path.join(folder, "*"))  # no output, no partial or temporary file


def test_beam_refuses_to_overwrite_and_names_files_as_in_process(tmp_path, capsys):
    pytest.importorskip("apache_beam")
    from keras_pretrain.data.beam import output_layout
    from keras_pretrain.errors import ConfigError

    _shards(tmp_path)
    existing = tmp_path / "kept" / "train-00001-of-00003.tfrecord"
    existing.parent.mkdir()
    existing.write_text("keep me")
    with pytest.raises(SystemExit) as e:
        _run(tmp_path, "kept", ["--runner", "DirectRunner"])
    assert e.value.code == 2 and "already exists; nothing is overwritten" in capsys.readouterr().err
    assert existing.read_text() == "keep me" and len(os.listdir(existing.parent)) == 1
    for pattern, shards in [("out/p-{shard}-of-{num_shards}.tfr", 3), ("out/p-{shard:03d}.tfrecord", 12),
                            ("out/plain", 1), ("out/plain", 4)]:
        prefix, template, suffix = output_layout(pattern, shards)
        names = [prefix + re.sub("S+|N+", lambda m: f"{(i if m.group()[0] == 'S' else shards):0{len(m.group())}d}",
                                 template) + suffix for i in range(shards)]
        assert names == shard_paths(pattern, shards), pattern
    for bad in ("out/{shard}-SET-{num_shards}", "out/{index}.tfrecord"):
        with pytest.raises(ConfigError):
            output_layout(bad, 2)


def test_beam_options_without_a_runner_are_refused(tmp_path, capsys):
    _shards(tmp_path)
    with pytest.raises(SystemExit) as e:
        _run(tmp_path, "none", ["--direct_num_workers", "2"])
    assert e.value.code == 2
    assert "unrecognized arguments: --direct_num_workers 2 (Beam pipeline options need --runner)" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()
