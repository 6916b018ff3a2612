"""keras_pretrain.training.runs and .locks: the output folder of a run (created and locked, or an interrupted
run of the same settings recognised), its lock, and the finished marker. Problems are `RunFolderError`s
carrying the message the recipes print (with exit code 2), never exits."""

import json
import os
import socket
import subprocess
import sys

import pytest

from keras_pretrain import training
from keras_pretrain.errors import KerasPretrainError


def lock_of(out, pid, host=None):
    with open(os.path.join(out, training.LOCK_FILE), "w") as f:
        json.dump({"pid": pid, "host": host or socket.gethostname()}, f)


def dead_pid():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    return dead.pid


@pytest.mark.one_backend
def test_a_new_run_folder_is_created_locked_and_recorded(tmp_path):
    out = str(tmp_path / "run")
    assert training.prepare_output(out, {"a": 1}, epochs=3) == 0
    assert sorted(os.listdir(out)) == [training.LOCK_FILE, training.RUN_FILE]
    with open(os.path.join(out, training.RUN_FILE)) as f:
        assert json.load(f) == {"config": {"a": 1}, "finished": False}
    with open(os.path.join(out, training.LOCK_FILE)) as f:
        assert json.load(f) == {"pid": os.getpid(), "host": socket.gethostname()}
    training.release_lock(out)
    assert sorted(os.listdir(out)) == [training.RUN_FILE]
    # The same settings again: the interrupted run (no checkpoint yet) resumes from epoch 0, locked again.
    assert training.prepare_output(out, {"a": 1}, epochs=3) == 0
    assert os.path.exists(os.path.join(out, training.LOCK_FILE))
    training.release_lock(out)


@pytest.mark.one_backend
@pytest.mark.parametrize("case, message", [
    ("file", "is a file, not a folder"),
    ("user data", "already holds files that are not from this recipe; choose a new folder (nothing is overwritten)"),
    ("other settings", "holds another run (different settings: a, b); choose a new folder"),
    ("finished", "holds a finished run; choose a new folder"),
    ("resume outside", "--resume-from 4 is outside [0, 3] (this run trains 3 epochs)"),
    ("resume nothing", "holds no run to resume"),
])
def test_a_folder_that_cannot_be_used_is_refused_and_left_alone(case, message, tmp_path):
    out = tmp_path / "run"
    resume_from = {"resume outside": 4, "resume nothing": 2}.get(case)
    if case == "file":
        out.write_text("precious")
    elif case != "resume nothing":
        out.mkdir()
        if case == "user data":
            (out / "notes.txt").write_text("precious")
        else:
            config = {"a": 2, "c": 3} if case == "other settings" else {"a": 1, "c": 3}
            (out / training.RUN_FILE).write_text(json.dumps({"config": config, "finished": case == "finished"}))
    before = sorted(os.listdir(out)) if out.is_dir() else None
    with pytest.raises(training.RunFolderError) as info:
        training.prepare_output(str(out), {"a": 1, "b": 2, "c": 3} if case == "other settings" else {"a": 1, "c": 3},
                                epochs=3, resume_from=resume_from)
    assert message in str(info.value)
    assert isinstance(info.value, KerasPretrainError) and not isinstance(info.value, training.RunError)
    if case == "file":
        assert out.read_text() == "precious"
    elif case == "resume nothing":
        assert not out.exists()
    else:
        assert sorted(os.listdir(out)) == before  # no lock, nothing written


@pytest.mark.one_backend
def test_a_run_json_without_settings_is_a_run_error(tmp_path):
    (tmp_path / training.RUN_FILE).write_text(json.dumps({"finished": False}))
    with pytest.raises(training.RunError, match=r"run.json: lacks the run's settings"):
        training.prepare_output(str(tmp_path), {"a": 1})
    (tmp_path / training.RUN_FILE).write_text("[1, 2]")
    with pytest.raises(training.RunError, match=r"run.json: holds a JSON list, not an object"):
        training.prepare_output(str(tmp_path), {"a": 1})
    assert not os.path.exists(tmp_path / training.LOCK_FILE)


@pytest.mark.tf_only
def test_lock_refuses_a_live_run_and_takes_over_a_dead_ones(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert training.prepare_output(out, {"a": 1}) == 0
    lock = os.path.join(out, training.LOCK_FILE)
    lock_of(out, os.getppid())  # another live process holds it
    with pytest.raises(training.RunFolderError) as info:
        training.prepare_output(out, {"a": 1})
    assert f"is in use by another run (pid {os.getppid()}" in str(info.value)
    pid = dead_pid()
    lock_of(out, pid)
    assert training.prepare_output(out, {"a": 1}) == 0
    assert f"taking over the stale lock of {out!r} (pid {pid} is no longer running)" in capsys.readouterr().err
    with open(lock) as f:
        assert json.load(f)["pid"] == os.getpid()
    training.release_lock(out)
    assert not os.path.exists(lock)


@pytest.mark.one_backend
def test_lock_of_another_host_is_never_taken_over(tmp_path):
    out = str(tmp_path)
    lock_of(out, dead_pid(), host="elsewhere.example")
    with pytest.raises(training.RunFolderError, match=r"is locked by a run on host 'elsewhere.example' .*delete "
                                                      r"the lock file if that run is over"):
        training.acquire_lock(out)
    training.release_lock(out)  # not ours: kept
    with open(os.path.join(out, training.LOCK_FILE)) as f:
        assert json.load(f)["host"] == "elsewhere.example"


@pytest.mark.one_backend
def test_a_damaged_lock_is_taken_over(tmp_path):
    (tmp_path / training.LOCK_FILE).write_text("{not json")
    path = training.acquire_lock(str(tmp_path))
    with open(path) as f:
        assert json.load(f)["pid"] == os.getpid()


@pytest.mark.one_backend
def test_mark_finished_records_the_summary_and_the_folder_is_not_reused(tmp_path):
    out = str(tmp_path / "run")
    training.prepare_output(out, {"a": 1})
    training.mark_finished(out, {"steps": 6})
    with open(os.path.join(out, training.RUN_FILE)) as f:
        assert json.load(f) == {"config": {"a": 1}, "finished": True, "summary": {"steps": 6}}
    training.release_lock(out)
    with pytest.raises(training.RunFolderError, match="holds a finished run"):
        training.prepare_output(out, {"a": 1})


@pytest.mark.one_backend
def test_json_written_atomically_and_read_only_inside_the_run_folder(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    training.write_json(str(out / "a.json"), {"x": 1.5})
    assert sorted(os.listdir(out)) == ["a.json"]  # no .tmp left behind
    assert training.read_json_object(str(out), str(out / "a.json")) == {"x": 1.5}
    (tmp_path / "elsewhere.json").write_text("{}")
    os.symlink(tmp_path / "elsewhere.json", out / "link.json")
    with pytest.raises(training.RunError, match=r"link.json: a symbolic link leading out of the run folder"):
        training.read_json_object(str(out), str(out / "link.json"))
    with pytest.raises(training.RunError, match=r"link.json: a symbolic link leading out of the run folder"):
        training.check_links(str(out))
    (out / "big.json").write_text(" " * 2000)
    with pytest.raises(training.RunError, match=r"big.json: more than 1000 bytes"):
        training.read_small_file(str(out), str(out / "big.json"), limit=1000)
