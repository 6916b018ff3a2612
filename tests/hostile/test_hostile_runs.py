"""Hostile inputs to the recipes' run folders, vocabularies, outputs and arguments (issue 44, items 2, 4, 5, 6).

One case per input. Each asserts the exit code, the one line naming the file and the problem, and that
nothing outside the run folder was read or written: a sentinel (another run's checkpoint) keeps its bytes
and times, and no path outside is ever opened (Python's audit hook sees every `open`; h5py's opens are
recorded by a wrapper). The recipes run in-process (`main(argv)`); a resume is refused before any model is
built, so each case takes a fraction of a second.
"""

import errno
import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from recipes import common
from recipes import create_pretraining_data
from recipes import export
from recipes import finetune
from recipes import pretrain

tf_only = pytest.mark.tf_only

CORPUS = "the cat sat on the mat .\nthe dog ran .\n\na bird sang .\nthe cat slept .\n\n" * 6
EPOCHS = 3  # --steps 6 --steps-per-epoch 2

# Every path Python opens while `OPENED` is a list (audit hooks cannot be removed: one for the module).
OPENED = None


def _audit(event, args):
    if OPENED is not None and event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


@pytest.fixture
def opened(monkeypatch):
    """The paths opened during the test (Python's opens and h5py's)."""
    global OPENED
    OPENED = []
    real = h5py.File

    def recording(name, *args, **kwargs):
        if isinstance(name, (str, bytes, os.PathLike)):
            OPENED.append(os.fsdecode(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(h5py, "File", recording)
    yield OPENED
    OPENED = None


def snapshot(folder, skip):
    """(path, size, mtime, bytes) of every file under `folder` except under `skip` (its reads not recorded)."""
    global OPENED
    recording, OPENED = OPENED, None
    try:
        return _snapshot(folder, skip)
    finally:
        OPENED = recording


def _snapshot(folder, skip):
    found = {}
    for root, names, files in os.walk(folder):
        names[:] = [n for n in names if os.path.join(root, n) != skip]
        for name in files:
            path = os.path.join(root, name)
            st = os.lstat(path)
            data = open(path, "rb").read() if os.path.isfile(path) and not os.path.islink(path) else None
            found[path] = (st.st_size, st.st_mtime_ns, data)
    return found


def checkpoint_files(epoch):
    return f"model-{epoch:05d}.weights.h5", f"rng-{epoch:05d}.npz"  # as `common.write_checkpoint` names them


def write_checkpoint_files(folder, epoch):
    """The two files of checkpoint `epoch` (tiny, whole)."""
    os.makedirs(folder, exist_ok=True)
    weights, rng = checkpoint_files(epoch)
    with h5py.File(os.path.join(folder, weights), "w") as f:
        f.create_dataset("w", data=np.arange(4.0))
    with open(os.path.join(folder, rng), "wb") as f:
        np.savez(f, state_0=np.arange(2))


def argv_of(tmp_path, *extra):
    return ["--model", "bert", "--corpus", str(tmp_path / "corpus.txt"), "--out", str(tmp_path / "run"),
            "--steps", "6", "--steps-per-epoch", "2", "--batch-size", "4", "--seq-length", "24",
            "--max-predictions", "4", "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0",
            "--no-export", *extra]


@pytest.fixture
def interrupted_run(tmp_path, monkeypatch):
    """tmp_path/run: an interrupted pretraining run (run.json of these settings, checkpoints of epochs 1
    and 2, state.json naming 2) beside tmp_path/other, another run whose checkpoint is the sentinel."""
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    started = []
    monkeypatch.setattr(pretrain, "run", lambda args, paths, dist, start_epoch: started.append(start_epoch) or {})
    pretrain.main(argv_of(tmp_path))
    run = tmp_path / "run"
    checkpoint = run / common.CHECKPOINT_DIR
    for epoch in (1, 2):
        write_checkpoint_files(str(checkpoint), epoch)
    weights, rng = checkpoint_files(2)
    (checkpoint / "state.json").write_text(json.dumps({"epoch": 2, "weights": weights, "rng": rng}))
    (run / "before.json").write_text(json.dumps({"loss": 5.0, "mlm_accuracy": 0.0}))
    (run / "history.csv").write_text("epoch,loss\n0,5.0\n1,4.0\n")
    other = tmp_path / "other" / common.CHECKPOINT_DIR
    write_checkpoint_files(str(other), 2)
    (other / "state.json").write_text(json.dumps({"epoch": 2, "weights": weights, "rng": rng}))
    started.clear()
    return run, started


def state_of(run):
    return json.loads((run / common.CHECKPOINT_DIR / "state.json").read_text())


def set_state(run, **changes):
    state = {**state_of(run), **changes}
    (run / common.CHECKPOINT_DIR / "state.json").write_text(json.dumps(state))


def drop_key(run, key):
    state = state_of(run)
    del state[key]
    (run / common.CHECKPOINT_DIR / "state.json").write_text(json.dumps(state))


def write(path, data):
    path.unlink()
    path.write_bytes(data)


def truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def relink(path, target):
    if os.path.lexists(path):
        os.remove(path) if not os.path.isdir(path) or os.path.islink(path) else __import__("shutil").rmtree(path)
    os.symlink(target, path)


OTHER_WEIGHTS = "other/checkpoint/model-00002.weights.h5"
# (case, how the run folder is damaged: f(run, tmp_path), the file the message names (relative to
# tmp_path), what it says)
RESUME_CASES = [
    ("absolute weights path", lambda r, t: set_state(r, weights=str(t / OTHER_WEIGHTS)),
     "run/checkpoint/state.json", "is not a file name inside"),
    ("dot-dot to /etc/passwd", lambda r, t: set_state(r, weights="../../../../etc/passwd"),
     "run/checkpoint/state.json", "absolute paths, '..' and sub-folders are refused"),
    ("dot-dot to another run", lambda r, t: set_state(r, weights="../../" + OTHER_WEIGHTS),
     "run/checkpoint/state.json", "is not a file name inside"),
    ("absolute rng path", lambda r, t: set_state(r, rng=str(t / "other/checkpoint/rng-00002.npz")),
     "run/checkpoint/state.json", "rng"),
    ("weights symlink out", lambda r, t: relink(r / "checkpoint/model-00002.weights.h5", t / OTHER_WEIGHTS),
     "run/checkpoint/model-00002.weights.h5", "a symbolic link leading out of the run folder"),
    ("checkpoint folder symlink out", lambda r, t: relink(r / "checkpoint", t / "other/checkpoint"),
     "run/checkpoint", "a symbolic link leading out of the run folder"),
    ("state.json symlink out", lambda r, t: relink(r / "checkpoint/state.json", t / "other/checkpoint/state.json"),
     "run/checkpoint/state.json", "a symbolic link leading out of the run folder"),
    ("run.json symlink out", lambda r, t: relink(r / "run.json", "/etc/passwd"),
     "run/run.json", "a symbolic link leading out of the run folder"),
    ("history.csv symlink out", lambda r, t: relink(r / "history.csv", t / "other/history.csv"),
     "run/history.csv", "a symbolic link leading out of the run folder"),
    ("negative epoch", lambda r, t: set_state(r, epoch=-1), "run/checkpoint/state.json", "epoch -1 is outside [0, 3]"),
    ("epoch beyond the run", lambda r, t: set_state(r, epoch=99), "run/checkpoint/state.json",
     "epoch 99 is outside [0, 3] (this run trains 3 epochs)"),
    ("epoch not a number", lambda r, t: set_state(r, epoch="2"), "run/checkpoint/state.json",
     "epoch '2' is not a whole number"),
    ("missing key", lambda r, t: drop_key(r, "rng"), "run/checkpoint/state.json", "lacks the key 'rng'"),
    ("truncated JSON", lambda r, t: write(r / "checkpoint/state.json", b'{"epoch": 2, "weig'),
     "run/checkpoint/state.json", "not valid JSON, truncated or damaged"),
    ("binary state", lambda r, t: write(r / "checkpoint/state.json", b"\x89HDF\r\n\x1a\n\xff\xfe"),
     "run/checkpoint/state.json", "not UTF-8 text"),
    ("empty state", lambda r, t: write(r / "checkpoint/state.json", b""), "run/checkpoint/state.json", "empty"),
    ("state is a list", lambda r, t: write(r / "checkpoint/state.json", b"[2]"), "run/checkpoint/state.json",
     "holds a JSON list, not an object"),
    ("weights of another epoch", lambda r, t: set_state(r, weights="model-00001.weights.h5"),
     "run/checkpoint/state.json", "is not the checkpoint of epoch 2"),
    ("missing weights", lambda r, t: (r / "checkpoint/model-00002.weights.h5").unlink(),
     "run/checkpoint/model-00002.weights.h5", "missing"),
    ("truncated weights", lambda r, t: truncate(r / "checkpoint/model-00002.weights.h5"),
     "run/checkpoint/model-00002.weights.h5", "not a whole HDF5 weights file, truncated or damaged"),
    ("empty weights", lambda r, t: write(r / "checkpoint/model-00002.weights.h5", b""),
     "run/checkpoint/model-00002.weights.h5", "empty"),
    ("truncated rng", lambda r, t: truncate(r / "checkpoint/rng-00002.npz"),
     "run/checkpoint/rng-00002.npz", "not a whole .npz file"),
    ("missing state with checkpoints", lambda r, t: (r / "checkpoint/state.json").unlink(),
     "run/checkpoint/state.json", "missing, yet the run folder holds checkpoints"),
]


@tf_only
@pytest.mark.parametrize("case, damage, named, problem", RESUME_CASES, ids=[c[0] for c in RESUME_CASES])
def test_resume_trusts_nothing_it_reads(case, damage, named, problem, interrupted_run, tmp_path, capsys, opened):
    run, started = interrupted_run
    damage(run, tmp_path)
    outside = snapshot(str(tmp_path), str(run))
    opened.clear()  # from here: what the recipe opens
    with pytest.raises(SystemExit) as info:
        pretrain.main(argv_of(tmp_path))
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 1, err
    assert len(err) == 1 and err[0].startswith("pretrain: error: "), err
    assert f"{tmp_path / named}: " in err[0] and problem in err[0], err[0]
    # The other complete checkpoint is offered (epoch 1; epoch 2 too where its files are whole), and
    # starting over only when asked; a link leading out refuses the folder itself.
    if "symlink" in case:
        assert err[0].endswith("(remove the link to resume)"), err[0]
    else:
        assert "`--resume-from 0` starts the run over" in err[0], err[0]
    if case in ("missing weights", "truncated weights", "empty weights", "truncated rng"):
        assert "the previous complete checkpoint is epoch 1; `--resume-from 1` resumes from it" in err[0], err[0]
    elif "symlink" not in case:
        assert "the previous complete checkpoint is epoch 2 (complete checkpoints: epochs 1, 2)" in err[0], err[0]
    assert not started  # no training
    assert not os.path.exists(run / common.LOCK_FILE)  # the lock released
    assert snapshot(str(tmp_path), str(run)) == outside  # nothing outside the run folder written
    others = [p for p in opened if os.path.realpath(p).startswith((str(tmp_path / "other"), "/etc/passwd"))]
    assert not others, others  # ... nor read


@tf_only
def test_resume_from_an_earlier_checkpoint_or_start_over_when_asked(interrupted_run, tmp_path, capsys, opened):
    run, started = interrupted_run
    truncate(run / "checkpoint/model-00002.weights.h5")
    pretrain.main(argv_of(tmp_path, "--resume-from", "1"))
    assert started == [1]
    assert state_of(run) == {"epoch": 1, "weights": "model-00001.weights.h5", "rng": "rng-00001.npz"}
    pretrain.main(argv_of(tmp_path, "--resume-from", "0"))
    assert started == [1, 0]
    assert os.listdir(run / "checkpoint") == []  # started over: the old checkpoints are gone
    for argv, message in ((["--resume-from", "4"], "--resume-from 4 is outside [0, 3] (this run trains 3 epochs)"),
                          (["--resume-from", "-1"], "--resume-from must be 0 (start over) or an epoch")):
        with pytest.raises(SystemExit) as info:
            pretrain.main(argv_of(tmp_path, *argv))
        assert info.value.code == 2 and message in capsys.readouterr().err


@tf_only
def test_resume_from_in_a_new_folder_is_refused(tmp_path, capsys):
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    with pytest.raises(SystemExit) as info:
        pretrain.main(argv_of(tmp_path, "--resume-from", "2"))
    assert info.value.code == 2
    assert f"--resume-from 2: '{tmp_path / 'run'}' holds no run to resume" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


# === Vocabularies (item 4) ===

VOCABULARIES = {
    "empty vocabulary": ("", "empty (no token)"),
    "no [UNK]": ("[PAD]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n.\n", "lacks [UNK]"),
    "no [MASK]": ("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n.\n", "lacks [MASK]"),
}


def run_main(main, argv, capsys):
    """(exit code, the lines of stderr) of `main(argv)`."""
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    return code, capsys.readouterr().err.strip().splitlines()


def assert_one_line(lines, code, expected_code, *parts):
    assert code == expected_code, lines
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1, lines
    assert all(line.startswith("usage: ") and line.endswith(" --help") for line in lines if line not in errors), lines
    for part in parts:
        assert part in errors[0], errors[0]


@tf_only
@pytest.mark.parametrize("vocab", list(VOCABULARIES))
@pytest.mark.parametrize("recipe", ["pretrain", "create_pretraining_data", "finetune"])
def test_a_vocabulary_without_its_special_tokens(recipe, vocab, tmp_path, capsys):
    text, problem = VOCABULARIES[vocab]
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    path = tmp_path / "vocab.txt"
    path.write_text(text, encoding="utf-8")
    if recipe == "pretrain":
        code, lines = run_main(pretrain.main, argv_of(tmp_path, "--vocab", str(path)), capsys)
        flag = "--vocab"
    elif recipe == "create_pretraining_data":
        code, lines = run_main(create_pretraining_data.main, [
            "--input_file", str(tmp_path / "corpus.txt"), "--vocab_file", str(path), "--output_file",
            str(tmp_path / "run" / "o.tfrecord"), "--max_seq_length", "16", "--max_predictions_per_seq", "2"], capsys)
        flag = "--vocab_file"
    else:  # a pretraining run's folder holding that vocabulary (refused before its model is read)
        (tmp_path / "pretrainer.keras").write_bytes(b"not read")
        code, lines = run_main(finetune.main, ["--from", str(tmp_path), "--out", str(tmp_path / "run")], capsys)
        flag = "--from"
    assert_one_line(lines, code, 2, f"{flag}: {path}: {problem}")
    assert not (tmp_path / "run").exists()


# === Fine-tuning's --out and --from (item 4) ===


@tf_only
@pytest.mark.parametrize("case", ["out is a file", "out below a file", "module without model.keras"])
def test_finetune_out_and_from(case, tmp_path, capsys):
    source = tmp_path / "module"
    source.mkdir()
    (source / "metadata.json").write_text(json.dumps({"format": "x", "family": "bert"}))
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    out = {"out is a file": precious, "out below a file": precious / "sub"}.get(case, tmp_path / "out")
    code, lines = run_main(finetune.main, ["--from", str(source), "--out", str(out)], capsys)
    expected = {"out is a file": f"--out: '{precious}' is a file, not a folder",
                "out below a file": f"--out: '{precious}' is a file, not a folder; cannot create",
                "module without model.keras": f"--from: {source / 'model.keras'}: missing"}[case]
    assert_one_line(lines, code, 2, expected)
    assert precious.read_text() == "keep me"
    assert not (tmp_path / "out").exists()


def lock(folder):
    """Makes `folder` read-only, for root too (root writes in a 0555 folder: then the immutable attribute,
    `chattr +i`); skips when neither can be set. Returns the function that unlocks it."""
    folder.chmod(0o555)
    if os.geteuid() != 0:
        return lambda: folder.chmod(0o755)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        folder.chmod(0o755)
        pytest.skip("running as root where `chattr +i` is refused: no folder is read-only to root here")

    def unlock():
        subprocess.run(["chattr", "-i", str(folder)], check=True)
        folder.chmod(0o755)

    return unlock


@tf_only
@pytest.mark.parametrize("recipe", ["finetune", "export", "create_pretraining_data", "pretrain"])
def test_read_only_out(recipe, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    unlock = lock(locked)
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\n", encoding="utf-8")
    try:
        if recipe == "finetune":
            (tmp_path / "pretrainer.keras").write_bytes(b"not read")
            code, lines = run_main(finetune.main, ["--from", str(tmp_path), "--out", str(locked / "o")], capsys)
        elif recipe == "export":
            code, lines = run_main(export.main, ["--from", str(tmp_path), "--to", "huggingface", "--out",
                                                 str(locked / "o")], capsys)
        elif recipe == "create_pretraining_data":
            code, lines = run_main(create_pretraining_data.main, [
                "--input_file", str(tmp_path / "corpus.txt"), "--vocab_file", str(tmp_path / "vocab.txt"),
                "--output_file", str(locked / "o.tfrecord"), "--max_seq_length", "16",
                "--max_predictions_per_seq", "2"], capsys)
        else:
            argv = argv_of(tmp_path)
            argv[argv.index("--out") + 1] = str(locked / "o")
            code, lines = run_main(pretrain.main, argv, capsys)
        assert_one_line(lines, code, 2, str(locked))
        assert os.listdir(locked) == []
    finally:
        unlock()


# === A full disk (item 6) ===


@tf_only
def test_full_disk_during_data_creation(tmp_path, capsys, monkeypatch):
    """A real ENOSPC: the shard's temporary file is /dev/full. One line; no output; earlier files whole."""
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\n.\n", encoding="utf-8")
    earlier = tmp_path / "earlier-0.tfrecord"
    earlier.write_bytes(b"an earlier output")
    target = tmp_path / "o.tfrecord"
    os.symlink("/dev/full", f"{target}.partial-{os.getpid()}")
    code, lines = run_main(create_pretraining_data.main, [
        "--input_file", str(tmp_path / "corpus.txt"), "--vocab_file", str(tmp_path / "vocab.txt"),
        "--output_file", str(target), "--max_seq_length", "16", "--max_predictions_per_seq", "2",
        "--num_examples_to_print", "0"], capsys)
    assert_one_line(lines, code, 1, f"{target}.partial-{os.getpid()}: No space left on device",
                    "no output file was written or replaced")
    assert not os.path.lexists(target) and not os.path.lexists(f"{target}.partial-{os.getpid()}")
    assert earlier.read_bytes() == b"an earlier output"


@tf_only
def test_full_disk_during_export(tmp_path, capsys, monkeypatch):
    """ENOSPC injected into the writer after a first file: one line, the partial export removed."""
    from keras_pretrain import convert

    monkeypatch.setattr(export, "read_source", lambda parser, source, pretrainer: (object(), None))

    def full_disk(model, out, tokenizer=None):
        os.makedirs(out)
        with open(os.path.join(out, "config.json"), "w") as f:
            f.write("{}")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.path.join(out, "model.safetensors"))

    monkeypatch.setattr(convert, "to_huggingface", full_disk)
    source = tmp_path / "source"
    source.mkdir()
    (source / "pretrainer.keras").write_bytes(b"the source")
    out = tmp_path / "hf"
    code, lines = run_main(export.main, ["--from", str(source), "--to", "huggingface", "--out", str(out)], capsys)
    assert code == 1 and len(lines) == 1, lines
    assert f"--out {out}: {out / 'model.safetensors'}: No space left on device; the partial export was removed" \
        in lines[0], lines
    assert not out.exists()
    assert (source / "pretrainer.keras").read_bytes() == b"the source"


@tf_only
def test_full_disk_during_fine_tuning(tmp_path, capsys, monkeypatch):
    """ENOSPC while the classifier is saved: one line; no half-written classifier.keras; eval_results.json whole."""
    out = tmp_path / "out"
    out.mkdir()
    common.write_json(str(out / "eval_results.json"), {"accuracy": 0.5})

    class Model:
        def save(self, path):
            with open(path, "wb") as f:
                f.write(b"PK half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    def _main(argv):
        finetune.save_model(Model(), str(out / "classifier.keras"))

    monkeypatch.setattr(finetune, "_main", _main)
    code, lines = run_main(finetune.main, [], capsys)
    assert code == 1 and len(lines) == 1, lines
    assert lines[0].startswith(f"finetune: error: {out}/.partial-classifier.keras: No space left on device"), lines
    assert os.listdir(out) == ["eval_results.json"]
    assert json.loads((out / "eval_results.json").read_text()) == {"accuracy": 0.5}


# === No silent surprises (item 5) and the one-line messages (item 4) ===


@tf_only
def test_steps_fewer_than_an_epoch_run_exactly(tmp_path, monkeypatch):
    (tmp_path / "corpus.txt").write_text(CORPUS, encoding="utf-8")
    seen = []
    monkeypatch.setattr(pretrain, "run", lambda args, paths, dist, start_epoch: seen.append(args) or {})
    argv = argv_of(tmp_path)
    argv[argv.index("--steps") + 1], argv[argv.index("--steps-per-epoch") + 1] = "20", "100"
    pretrain.main(argv)
    assert pretrain.total_epochs(seen[0]) * seen[0].steps_per_epoch == 20


@tf_only
def test_max_line_chars_is_honoured_by_the_input_check(tmp_path, capsys):
    long_line = ("the cat sat . " * 900).strip()  # 12,599 characters: over the default 10,000
    (tmp_path / "corpus.txt").write_text((long_line + "\nthe cat .\n\n") * 4, encoding="utf-8")
    (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nthe\ncat\nsat\n.\n", encoding="utf-8")
    argv = ["--input_file", str(tmp_path / "corpus.txt"), "--vocab_file", str(tmp_path / "vocab.txt"),
            "--max_seq_length", "16", "--max_predictions_per_seq", "2", "--num_examples_to_print", "0",
            "--dupe_factor", "1", "--max_line_chars", "20000"]
    assert create_pretraining_data.main(argv + ["--output_file", str(tmp_path / "a.tfrecord")]) == 0
    argv[-1] = "100"  # every line of the first document over 100: the check quotes the limit given
    (tmp_path / "corpus.txt").write_text((long_line + "\n\n") * 4, encoding="utf-8")
    code, lines = run_main(create_pretraining_data.main, argv + ["--output_file", str(tmp_path / "b.tfrecord")],
                           capsys)
    assert_one_line(lines, code, 2, "more than max_line_chars=100")


@pytest.mark.parametrize("recipe", ["pretrain", "create_pretraining_data", "fill_mask", "export", "distill",
                                    "generate", "albert_to_savedmodel", "finetune", "evaluate"])
def test_errors_are_one_line_without_the_usage_block(recipe, capsys):
    import importlib

    parser = importlib.import_module(f"recipes.{recipe}").build_parser()
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--no-such-option"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2
    assert lines == [f"usage: {parser.prog} --help", f"{parser.prog}: error: {lines[-1].split(': error: ', 1)[1]}"]
    assert parser.format_help().count("\n") > 5  # --help still shows every option


# === TensorFlow's own file-system errors (a SavedModel or TFRecord written on a full disk) ===


@pytest.fixture
def small_disk(tmp_path):
    """A 2.5 MB tmpfs (root only, where mounting is allowed; skipped elsewhere)."""
    folder = tmp_path / "small"
    folder.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2500k", "tmpfs", str(folder)],
                                           capture_output=True).returncode != 0:
        pytest.skip("no tmpfs can be mounted here (needs root and the permission to mount)")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


@tf_only
def test_a_real_full_disk_during_a_savedmodel_export(tmp_path, small_disk, capsys):
    """A TF-Hub export (model.keras, then the SavedModels) onto a disk that fills during TensorFlow's SaveV2: one
    line naming the file, exit 1, the partial export removed, the source whole."""
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertPretrainer

    source = tmp_path / "source"
    source.mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(200)]
    (source / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    backbone = BertBackbone(vocabulary_size=len(vocab), num_layers=2, num_heads=2, hidden_dim=128,
                            intermediate_dim=512, max_sequence_length=64)
    BertPretrainer(backbone).save(str(source / "pretrainer.keras"))
    before = (source / "pretrainer.keras").read_bytes()
    out = small_disk / "module"
    code, lines = run_main(export.main, ["--from", str(source), "--to", "tfhub", "--out", str(out)], capsys)
    errors = [line for line in lines if "error:" in line]  # (the other line: the casing the vocabulary implies)
    assert code == 1 and len(errors) == 1 and len(lines) <= 2, lines
    assert f"--out {out}: {out}" in errors[0] and "No space left on device; the partial export was removed" \
        in errors[0], lines
    assert os.listdir(small_disk) == []
    assert (source / "pretrainer.keras").read_bytes() == before
