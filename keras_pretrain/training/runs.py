"""The output folder of a run: created and locked, or recognised as an interrupted run of the same settings
(and resumed); `run.json` records the settings and, once the run is over, `finished` and its summary.

Nothing is ever overwritten: a folder that holds anything else (another run's files, a finished run, user
data), one a live run holds the lock of, or one that cannot be written raises `RunFolderError` (the recipes
report it as a usage error, exit code 2) before anything is written.
"""

import os

from keras_pretrain.errors import RunError
from keras_pretrain.errors import RunFolderError
from keras_pretrain.training.checkpoints import resume_epoch
from keras_pretrain.training.files import check_links
from keras_pretrain.training.files import read_json_object
from keras_pretrain.training.files import write_json
from keras_pretrain.training.locks import LOCK_FILE
from keras_pretrain.training.locks import acquire_lock
from keras_pretrain.training.locks import release_lock

RUN_FILE = "run.json"


def prepare_output(out, run_config, epochs=None, resume_from=None):
    """Creates and locks `out`, or recognises (and locks) an interrupted run of the same config.

    Returns the epoch to resume from (0 for a new run). An output folder that
    holds anything else (another run's files, a finished run, user data), a
    folder another live run holds the lock of, or a folder that cannot be
    written raises `RunFolderError`: nothing is ever overwritten.
    An interrupted run is resumed only once everything the resume reads is
    checked (`resume_epoch`: `epochs` is the run's total, `resume_from` the
    `--resume-from` choice): a damaged or foreign file raises `RunError`
    (one line naming it), with the lock released.
    Call it after every other argument check: it is the first write.
    The lock is released by `release_lock(out)` (and at exit).
    """
    if os.path.exists(out) and not os.path.isdir(out):
        raise RunFolderError(f"--out: {out!r} is a file, not a folder")
    if resume_from is not None and (resume_from < 0 or (epochs is not None and resume_from > epochs)):
        raise RunFolderError(f"--resume-from {resume_from} is outside [0, {epochs}] (this run trains {epochs} epochs)")
    if os.path.isdir(out) and set(os.listdir(out)) - {LOCK_FILE}:
        run_path = os.path.join(out, RUN_FILE)
        if not os.path.lexists(run_path):
            raise RunFolderError(f"--out: {out!r} already holds files that are not from this recipe; choose a new "
                                 "folder (nothing is overwritten)")
        check_links(out)
        previous = read_json_object(out, run_path)
        if not isinstance(previous.get("config"), dict):
            raise RunError(f"{run_path}: lacks the run's settings (a \"config\" object); not a run of this recipe")
        if previous.get("config") != run_config:
            changed = sorted(k for k in set(previous.get("config", {})) | set(run_config)
                             if previous.get("config", {}).get(k) != run_config.get(k))
            raise RunFolderError(f"--out: {out!r} holds another run (different settings: {', '.join(changed)}); "
                                 "choose a new folder")
        if previous.get("finished"):
            raise RunFolderError(f"--out: {out!r} holds a finished run; choose a new folder")
        acquire_lock(out)
        try:
            return resume_epoch(out, epochs, resume_from)
        except BaseException:
            release_lock(out)
            raise
    if resume_from:
        raise RunFolderError(f"--resume-from {resume_from}: {out!r} holds no run to resume")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        raise RunFolderError(f"--out: cannot create {out!r} ({e.strerror or e})") from None
    acquire_lock(out)
    try:
        write_json(os.path.join(out, RUN_FILE), {"config": run_config, "finished": False})
    except OSError as e:
        release_lock(out)
        raise RunFolderError(f"--out: cannot write to {out!r} ({e.strerror or e})") from None
    return 0


def mark_finished(out, summary):
    """Records in `out/run.json` that the run is over, with its summary: the folder is never resumed again."""
    path = os.path.join(out, RUN_FILE)
    run = read_json_object(out, path)
    run.update(finished=True, summary=summary)
    write_json(path, run)
