"""Pieces shared by the recipes: output folders, locks, checkpoints, signals, plots."""

import argparse
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import socket
import sys

RUN_FILE = "run.json"
LOCK_FILE = ".lock"
CHECKPOINT_DIR = "checkpoint"


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """`--help` of every recipe: the module docstring as written, and each option's default, once.

    A help line that already states its default (e.g. "(default: the family's own)") is shown as
    written; flags (default False) and options without a default show none.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)

    # An error (`parser.error`) prints the usage alone, then the one-line message: that usage is one line
    # pointing at --help, not the block of every option above the message. `--help` shows the full usage.
    _usage_only = None

    def add_usage(self, usage, actions, groups, prefix=None):
        if self._usage_only is None:
            self._usage_only = True
        super().add_usage(usage, actions, groups, prefix)

    def add_text(self, text):
        self._usage_only = False
        super().add_text(text)

    def start_section(self, heading):
        self._usage_only = False
        super().start_section(heading)

    def format_help(self):
        if self._usage_only:
            return f"usage: {self._prog} --help\n"
        return super().format_help()


class RunError(Exception):
    """A run cannot go on (disk full, folder taken, ...): one line, exit code 1."""


def boolean(text):
    """Strict parser of boolean options: `--lowercase flase` is an error, not False."""
    value = str(text).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false (or yes/no, 1/0), got {text!r}")


def prepare_output(parser, out, run_config, epochs=None, resume_from=None):
    """Creates and locks `out`, or recognises (and locks) an interrupted run of the same config.

    Returns the epoch to resume from (0 for a new run). An output folder that
    holds anything else (another run's files, a finished run, user data), a
    folder another live run holds the lock of, or a folder that cannot be
    written stops the recipe with exit code 2: nothing is ever overwritten.
    An interrupted run is resumed only once everything the resume reads is
    checked (`resume_epoch`: `epochs` is the run's total, `resume_from` the
    `--resume-from` choice): a damaged or foreign file raises `RunError`
    (one line naming it, exit code 1), with the lock released.
    Call it after every other argument check: it is the first write.
    The lock is released by `release_lock(out)` (and at exit).
    """
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error(f"--out: {out!r} is a file, not a folder")
    if resume_from is not None and (resume_from < 0 or (epochs is not None and resume_from > epochs)):
        parser.error(f"--resume-from {resume_from} is outside [0, {epochs}] (this run trains {epochs} epochs)")
    if os.path.isdir(out) and set(os.listdir(out)) - {LOCK_FILE}:
        run_path = os.path.join(out, RUN_FILE)
        if not os.path.lexists(run_path):
            parser.error(f"--out: {out!r} already holds files that are not from this recipe; choose a new folder (nothing is overwritten)")
        check_links(out)
        previous = read_json_object(out, run_path)
        if not isinstance(previous.get("config"), dict):
            raise RunError(f"{run_path}: lacks the run's settings (a \"config\" object); not a run of this recipe")
        if previous.get("config") != run_config:
            changed = sorted(k for k in set(previous.get("config", {})) | set(run_config)
                             if previous.get("config", {}).get(k) != run_config.get(k))
            parser.error(f"--out: {out!r} holds another run (different settings: {', '.join(changed)}); choose a new folder")
        if previous.get("finished"):
            parser.error(f"--out: {out!r} holds a finished run; choose a new folder")
        acquire_lock(parser, out)
        try:
            return resume_epoch(out, epochs, resume_from)
        except BaseException:
            release_lock(out)
            raise
    if resume_from:
        parser.error(f"--resume-from {resume_from}: {out!r} holds no run to resume")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        parser.error(f"--out: cannot create {out!r} ({e.strerror or e})")
    acquire_lock(parser, out)
    try:
        write_json(os.path.join(out, RUN_FILE), {"config": run_config, "finished": False})
    except OSError as e:
        release_lock(out)
        parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
    return 0


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:  # a killed run its parent has not reaped yet (a zombie) is dead too
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def acquire_lock(parser, out):
    """Writes `out/.lock` (pid and host). A live holder stops the recipe (exit 2);
    the lock of a dead process (a killed run) is taken over with a message.
    Also the writability check of `out`: a read-only or full folder fails here."""
    path = os.path.join(out, LOCK_FILE)
    me = {"pid": os.getpid(), "host": socket.gethostname()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:  # never through a symbolic link (it would read a file outside the run folder)
                with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)), "rb") as f:
                    holder = json.loads(f.read(4096))
                pid, host = int(holder["pid"]), holder.get("host")
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                holder, pid, host = None, None, None
            if holder is not None and host == me["host"] and pid != me["pid"] and _pid_alive(pid):
                parser.error(f"--out: {out!r} is in use by another run (pid {pid}, lock file {path}); "
                             "wait for it to finish or choose another folder")
            if holder is not None and host != me["host"]:
                parser.error(f"--out: {out!r} is locked by a run on host {host!r} (pid {pid}, lock file {path}); "
                             "delete the lock file if that run is over")
            if pid != me["pid"]:
                print(f"taking over the stale lock of {out!r} (pid {pid} is no longer running)", file=sys.stderr)
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
            continue
        except OSError as e:
            parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.remove(path)
            parser.error(f"--out: cannot write to {out!r} ({e.strerror or e})")
        return path
    parser.error(f"--out: could not take the lock {path}")


def release_lock(out):
    """Removes `out/.lock` if this process holds it."""
    path = os.path.join(out, LOCK_FILE)
    try:
        with open(path) as f:
            if int(json.load(f)["pid"]) != os.getpid():
                return
        os.remove(path)
    except (OSError, ValueError, KeyError, TypeError):
        pass


def corpus_paths(parser, corpus):
    """The files of `corpus` (files, folders or globs); exit 2 when there are none."""
    from keras_pretrain.data import expand_paths

    try:
        paths = expand_paths(corpus)
    except (FileNotFoundError, ValueError) as e:
        parser.error(f"corpus: {e}")
    if not paths:
        parser.error(f"corpus: no file found in {corpus}")
    return paths


def check_corpus(parser, paths, flag, max_line_chars=None):
    """Exit 2 unless the corpus holds at least one sentence: an empty corpus,
    or one where every line is blank or skipped (invalid UTF-8, longer than
    `max_line_chars`: the recipe's own limit, else the reader's default),
    is reported before any vocabulary learning. Reads up to the first
    document with text."""
    from keras_pretrain.data import CorpusStats
    from keras_pretrain.data import read_documents
    from keras_pretrain.errors import CorpusFormatError

    import logging

    stats = CorpusStats()
    quiet = logging.getLogger("keras_pretrain.data.corpus")
    was_disabled, quiet.disabled = quiet.disabled, True  # the summary below says it once
    try:
        limit = {} if max_line_chars is None else {"max_line_chars": max_line_chars}
        for document in read_documents(paths, stats=stats, **limit):
            if any(sentence.strip() for sentence in document):
                return
    except (CorpusFormatError, OSError) as e:
        parser.error(f"{flag}: {e}")
    finally:
        quiet.disabled = was_disabled
    names = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    if not stats.lines_read:
        parser.error(f"{flag}: {names}: empty (no text to train on)")
    first = f"; first: {stats.issues[0]}" if stats.issues else ""
    parser.error(f"{flag}: {names}: no usable line ({stats.lines_read} read: {stats.blank_lines} blank, "
                 f"{stats.invalid_utf8_lines} invalid UTF-8, {stats.overlong_lines} overlong{first})")


WORDPIECE_SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def vocabulary_problem(path, required=WORDPIECE_SPECIAL_TOKENS, limit=1 << 28):
    """None, or what is wrong with the WordPiece vocabulary file `path` (one token a line, as
    `BertTokenizer` reads it): unreadable, not UTF-8, empty, or lacking a special token it needs."""
    if not os.path.isfile(path):
        return "no such file"
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if len(data) > limit:
        return f"more than {limit >> 20} MB; not a vocabulary"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8 text (byte {e.start})"
    tokens = {line.rstrip() for line in text.splitlines()} - {""}
    if not tokens:
        return "empty (no token)"
    missing = [t for t in required if t not in tokens]
    if missing:
        return (f"lacks {', '.join(missing)} ({len(tokens)} tokens; a WordPiece vocabulary needs "
                f"{', '.join(required)})")
    return None


def check_vocabulary(parser, flag, path, required=WORDPIECE_SPECIAL_TOKENS):
    """Exit 2 (one line naming the file) unless `path` is a usable WordPiece vocabulary."""
    problem = vocabulary_problem(path, required)
    if problem:
        parser.error(f"{flag}: {path}: {problem}")


def os_error_reason(error):
    """`error`'s reason in a few words ("No space left on device", "Permission denied", ...)."""
    import errno

    if getattr(error, "errno", None) == errno.ENOSPC or "No space left on device" in str(error):
        return "No space left on device"
    if getattr(error, "strerror", None):
        return error.strerror
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# TensorFlow's file-system errors (a SavedModel or TFRecord write on a full or read-only disk) are not OSErrors:
# "<path>; No space left on device" inside a ResourceExhaustedError, UnknownError, PermissionDeniedError, ...
_TF_FILE_ERROR = re.compile(r"(/[^\s;]+)[;:] (No space left on device|Read-only file system|Permission denied)")


def as_os_error(error):
    """`error` itself when it is an `OSError`; the `OSError` (errno, reason, file) a TensorFlow file-system error
    stands for; None for anything else (a bug: let it raise)."""
    import errno

    if isinstance(error, OSError):
        return error
    if not type(error).__module__.startswith("tensorflow"):
        return None
    match = _TF_FILE_ERROR.search(str(error))
    if match is None:
        return None
    path, reason = match.groups()
    number = {"No space left on device": errno.ENOSPC, "Read-only file system": errno.EROFS}.get(reason, errno.EACCES)
    return OSError(number, reason, path)


def wordpiece_tokenizer(vocabulary, lowercase):
    """BERT's WordPiece tokenizer (the ids of the original `FullTokenizer`), for `data.shards.ShardBuilder`.

    A function of this importable module, so Beam sends it to its workers by name; the tokenizer's module
    (and TensorFlow) is imported only where a tokenizer is built, not by the pipeline's launcher.
    """
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    return BertTokenizer(vocabulary=vocabulary, lowercase=lowercase)


def write_json(path, data):
    """Writes JSON atomically (a crash never leaves a half-written file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, default=float)
    os.replace(tmp, path)


def mark_finished(out, summary):
    path = os.path.join(out, RUN_FILE)
    run = read_json_object(out, path)
    run.update(finished=True, summary=summary)
    write_json(path, run)


# === Checkpoints ===
# checkpoint/state.json names the complete checkpoint ({"epoch", "weights",
# "rng"}); it is written (atomically) only after both files it names, so a
# kill at any moment leaves the previous checkpoint whole. The checkpoint
# before it is kept too (one fallback when the newest is damaged); older ones
# are deleted before a new one is written, so at most two are on disk.
# Resuming trusts nothing it reads: state.json may name only the files the
# writer names, inside the run folder; every file is checked before use.

STATE_FILE = "state.json"
CHECKPOINT_NAME = re.compile(r"model-(\d{5,})\.weights\.h5")


def checkpoint_files(epoch):
    """The names `write_checkpoint` gives the files of checkpoint `epoch`: (weights, random states)."""
    return f"model-{epoch:05d}.weights.h5", f"rng-{epoch:05d}.npz"


def inside(folder, path):
    """Whether `path`, its symbolic links resolved, lies in `folder` (resolved as well)."""
    root, target = os.path.realpath(folder), os.path.realpath(path)
    return os.path.commonpath([root, target]) == root


def leading_out(path, prefix=None):
    """The `RunError` of a symbolic link `path` that leads out of the run folder."""
    return RunError(f"{prefix or f'{path}: '}a symbolic link leading out of the run folder (to "
                    f"{os.path.realpath(path)}); refused: a run reads and writes only its own folder (remove the "
                    "link to resume)")


def check_links(out):
    """`RunError` for the first symbolic link in the run folder `out` that leads out of it (a file or
    folder the run would read or write elsewhere, e.g. another run's checkpoint)."""
    for folder, names, files in os.walk(out):
        for name in sorted(names) + sorted(files):
            path = os.path.join(folder, name)
            if os.path.islink(path) and not inside(out, path):
                raise leading_out(path)


def read_small_file(out, path, limit=1 << 20):
    """The text of a small file the run wrote (run.json, state.json, before.json), read only when it lies
    inside the run folder `out`; `RunError` naming it otherwise."""
    if not inside(out, path):
        raise leading_out(path)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise RunError(f"{path}: cannot be read ({e.strerror or e})") from None
    if len(data) > limit:
        raise RunError(f"{path}: more than {limit} bytes; not a file this recipe wrote")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RunError(f"{path}: not UTF-8 text (byte {e.start}); damaged or overwritten") from None


def read_json_object(out, path):
    """The JSON object of `path` (a dict), checked as `read_small_file` does; `RunError` naming it."""
    text = read_small_file(out, path)
    try:
        data = json.loads(text)
    except ValueError as e:
        kind = "empty" if not text.strip() else f"not valid JSON, truncated or damaged ({e})"
        raise RunError(f"{path}: {kind}") from None
    if not isinstance(data, dict):
        raise RunError(f"{path}: holds a JSON {type(data).__name__}, not an object")
    return data


def read_state(out, epochs=None):
    """The checked content of `out/checkpoint/state.json` (None when there is none): an `epoch` in
    [0, epochs] and the names of that epoch's two files, inside the checkpoint folder. Any other content
    raises `RunError` naming the file and the problem. The files themselves: `check_checkpoint(out, epoch)`."""
    folder = os.path.join(out, CHECKPOINT_DIR)
    path = os.path.join(folder, STATE_FILE)
    if not os.path.lexists(path):
        return None
    state = read_json_object(out, path)
    for key in ("epoch", "weights", "rng"):
        if key not in state:
            raise RunError(f"{path}: lacks the key {key!r} (a checkpoint state names its epoch, weights and rng)")
    epoch = state["epoch"]
    if isinstance(epoch, bool) or not isinstance(epoch, int):
        raise RunError(f"{path}: epoch {epoch!r} is not a whole number")
    if epoch < 0 or (epochs is not None and epoch > epochs):
        bound = f"[0, {epochs}] (this run trains {epochs} epochs)" if epochs is not None else "[0, ...)"
        raise RunError(f"{path}: epoch {epoch} is outside {bound}")
    for key, expected in zip(("weights", "rng"), checkpoint_files(epoch)):
        name = state[key]
        if (not isinstance(name, str) or not name or os.path.isabs(name) or name in (".", "..") or "\0" in name
                or os.path.basename(name) != name or (os.altsep and os.altsep in name)):
            raise RunError(f"{path}: {key} {name!r} is not a file name inside {folder} (absolute paths, '..' and "
                           "sub-folders are refused)")
        if os.path.lexists(os.path.join(folder, name)) and not inside(out, os.path.join(folder, name)):
            raise leading_out(os.path.join(folder, name), f"{path}: {key} {name!r} is ")
        if name != expected:
            raise RunError(f"{path}: {key} {name!r} is not the checkpoint of epoch {epoch} ({expected!r})")
    return state


def check_checkpoint(out, epoch):
    """`RunError` unless both files of checkpoint `epoch` are in `out/checkpoint`, inside the run folder,
    and whole: an HDF5 file h5py opens (a truncated one it refuses) and an `.npz` whose zip directory and
    members are intact. Reads no array."""
    import zipfile

    import h5py

    folder = os.path.join(out, CHECKPOINT_DIR)
    weights, rng = (os.path.join(folder, name) for name in checkpoint_files(epoch))
    for path in (weights, rng):
        if not os.path.lexists(path):
            raise RunError(f"{path}: missing (the checkpoint of epoch {epoch})")
        if not inside(out, path):
            raise leading_out(path)
        if not os.path.isfile(path):
            raise RunError(f"{path}: not a regular file")
        if not os.path.getsize(path):
            raise RunError(f"{path}: empty (the checkpoint of epoch {epoch} was not written whole)")
    try:
        with h5py.File(weights, "r"):
            pass
    except (OSError, ValueError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise RunError(f"{weights}: not a whole HDF5 weights file, truncated or damaged ({reason})") from None
    try:
        with zipfile.ZipFile(rng) as archive:
            bad = archive.testzip()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as e:
        raise RunError(f"{rng}: not a whole .npz file, truncated or damaged ({e})") from None
    if bad is not None:
        raise RunError(f"{rng}: member {bad!r} is damaged")


def complete_checkpoints(out, epochs=None, exclude=()):
    """The epochs (ascending) whose checkpoint files in `out/checkpoint` pass `check_checkpoint`."""
    folder = os.path.join(out, CHECKPOINT_DIR)
    if not os.path.isdir(folder) or not inside(out, folder):
        return []
    found = []
    for name in os.listdir(folder):
        match = CHECKPOINT_NAME.fullmatch(name)
        if not match:
            continue
        epoch = int(match.group(1))
        if epoch in exclude or epoch < 1 or (epochs is not None and epoch > epochs):
            continue
        try:
            check_checkpoint(out, epoch)
        except RunError:
            continue
        found.append(epoch)
    return sorted(found)


def resume_hint(out, epochs=None, exclude=()):
    """What a run whose checkpoint state is unusable can do: the other complete checkpoints, or start over."""
    others = complete_checkpoints(out, epochs, exclude)
    if not others:
        return "no other complete checkpoint is in the run folder; `--resume-from 0` starts the run over"
    listed = f" (complete checkpoints: epochs {', '.join(map(str, others))})" if len(others) > 1 else ""
    return (f"the previous complete checkpoint is epoch {others[-1]}{listed}; `--resume-from {others[-1]}` resumes "
            "from it, `--resume-from 0` starts the run over")


def resume_epoch(out, epochs, resume_from=None):
    """The epoch the existing run folder `out` resumes from, once everything a resume reads has been
    checked (`check_links`, `read_state`, `check_checkpoint`); `RunError` with one line naming the file,
    the problem and the other complete checkpoints otherwise.

    `resume_from` (`--resume-from N`): N = 0 starts the run over (its checkpoints are deleted); N > 0
    resumes from checkpoint N (checked; state.json is pointed at it)."""
    check_links(out)
    folder = os.path.join(out, CHECKPOINT_DIR)
    if resume_from == 0:
        if os.path.isdir(folder):
            for name in os.listdir(folder):
                if name == STATE_FILE or name.startswith(STATE_FILE) or CHECKPOINT_NAME.fullmatch(name) \
                        or re.fullmatch(r"rng-\d{5,}\.npz", name):
                    with contextlib.suppress(OSError):
                        os.remove(os.path.join(folder, name))
        print(f"--resume-from 0: starting {out} over (its checkpoints deleted)", file=sys.stderr)
        return 0
    if resume_from is not None:
        try:
            check_checkpoint(out, resume_from)
        except RunError as e:
            raise RunError(f"--resume-from {resume_from}: {e}; {resume_hint(out, epochs, (resume_from,))}") from None
        weights, rng = checkpoint_files(resume_from)
        write_json(os.path.join(folder, STATE_FILE), {"epoch": resume_from, "weights": weights, "rng": rng})
        return resume_from
    state_path = os.path.join(folder, STATE_FILE)
    try:
        state = read_state(out, epochs)
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs)}") from None
    if state is None:
        others = complete_checkpoints(out, epochs)
        if others:
            raise RunError(f"{state_path}: missing, yet the run folder holds checkpoints; {resume_hint(out, epochs)}")
        return 0
    try:
        if state["epoch"]:
            check_checkpoint(out, state["epoch"])
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs, (state['epoch'],))}") from None
    return state["epoch"]


def _state(out):
    try:
        return read_state(out)
    except RunError:
        return None


def checkpoint_epoch(out):
    """The epoch of the complete checkpoint state.json names (0 when there is none or it is unusable)."""
    state = _state(out)
    return int(state["epoch"]) if state else 0


def trim_history(out, epoch):
    """Keeps the header and the first `epoch` rows of `out/history.csv` (Keras' CSVLogger appends the
    resumed epochs: rows of epochs after the checkpoint resumed from would be counted twice)."""
    path = os.path.join(out, "history.csv")
    if not os.path.isfile(path) or not inside(out, path):
        return
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        lines = f.readlines()
    if len(lines) > epoch + 1:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.writelines(lines[: epoch + 1])
        os.replace(tmp, path)


def _seed_states(model):
    """Dropout seed-generator states: not in `model.weights`, but needed to
    continue with the same random masks after a resume."""
    # Matched by order, not path: paths carry per-process name counters.
    return [v for v in model.variables if "seed_generator_state" in v.path]


def _global_seed_generator():
    # private API: keras exposes no reader of its global seed generator (what unseeded `keras.random`
    # calls draw from); its state has to be saved for a resume to draw the same numbers.
    from keras.src.backend.common import global_state

    return global_state.get_global_attribute("global_seed_generator")


def rng_state(model):
    """Every random state training draws from, as NumPy arrays: the model's
    seed generators, Keras' global one and, on PyTorch, torch's global
    generator (Keras' unseeded torch dropout and ours draw from it)."""
    import keras

    states = {f"state_{i}": keras.ops.convert_to_numpy(v) for i, v in enumerate(_seed_states(model))}
    generator = _global_seed_generator()
    if generator is not None:
        states["global_seed_generator"] = keras.ops.convert_to_numpy(generator.state)
    if keras.config.backend() == "torch":
        import torch

        states["torch_cpu"] = torch.get_rng_state().numpy()
        if torch.cuda.is_available():
            for i, s in enumerate(torch.cuda.get_rng_state_all()):
                states[f"torch_cuda_{i}"] = s.cpu().numpy()
    return states


def set_rng_state(model, states):
    import keras

    for i, variable in enumerate(_seed_states(model)):
        variable.assign(states[f"state_{i}"])
    generator = _global_seed_generator()
    if "global_seed_generator" in states and generator is not None:
        generator.state.assign(states["global_seed_generator"])
    if keras.config.backend() == "torch" and "torch_cpu" in states:
        import torch

        torch.set_rng_state(torch.from_numpy(states["torch_cpu"]))
        cuda = [torch.from_numpy(states[k]) for k in sorted(states) if k.startswith("torch_cuda_")]
        if cuda and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)


def restore_checkpoint(model, out, steps_per_epoch=None, epochs=None):
    """Loads weights and optimizer state saved by `EpochCheckpoint`; returns a
    callback for `fit` that restores the random states just before the first
    training step (after Keras' first symbolic call of the model, which on
    PyTorch draws from torch's generator).

    The checkpoint is checked again (`read_state`, `check_checkpoint`) and, given `steps_per_epoch`,
    its optimizer must have taken the steps of the epochs state.json claims (a run never finishes
    without training them): `RunError` naming the file otherwise."""
    import keras
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    state = read_state(out, epochs)
    if state is None:
        raise RunError(f"{os.path.join(folder, STATE_FILE)}: missing; {resume_hint(out, epochs)}")
    epoch = state["epoch"]
    weights, rng = os.path.join(folder, state["weights"]), os.path.join(folder, state["rng"])
    try:
        check_checkpoint(out, epoch)
        model.optimizer.build(model.trainable_variables)
        try:
            model.load_weights(weights)
        except (OSError, ValueError, KeyError, TypeError) as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise RunError(f"{weights}: cannot be loaded into this run's model ({reason})") from None
        try:
            with np.load(rng) as saved:
                states = {k: saved[k] for k in saved.files}
        except (OSError, ValueError, EOFError) as e:
            raise RunError(f"{rng}: cannot be read ({e})") from None
        if steps_per_epoch:
            done = int(keras.ops.convert_to_numpy(model.optimizer.iterations))
            expected = epoch * steps_per_epoch
            # Loss scaling (float16) does not count the steps it skips (non-finite gradients).
            skips = isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer)
            if done > expected or (done < expected and not (skips and done > expected - steps_per_epoch)):
                raise RunError(f"{weights}: holds the optimizer state of {done} training steps, not the {expected} "
                               f"of the {epoch} epoch(s) {os.path.join(folder, STATE_FILE)} claims")
    except RunError as e:
        raise RunError(f"{e}; {resume_hint(out, epochs, (epoch,))}") from None
    set_rng_state(model, states)

    class RestoreRandomState(keras.callbacks.Callback):
        done = False

        def on_train_batch_begin(self, batch, logs=None):
            if not self.done:
                set_rng_state(self.model, states)
                self.done = True

    return RestoreRandomState()


def checkpoint_bytes(model):
    """About the size of a checkpoint: every variable (weights, optimizer)."""
    import math

    variables = list(model.variables)
    if getattr(model, "optimizer", None) is not None:
        variables += list(model.optimizer.variables)
    return sum(math.prod(v.shape) * 4 for v in variables) + (1 << 20)


def write_checkpoint(model, out, epoch):
    """Writes checkpoint `epoch` (weights + optimizer, RNG states), then points
    state.json at it; the current one is kept as the previous, older ones are deleted first. A full disk or an
    unwritable folder raises `RunError` naming the folder (the previous
    checkpoint stays whole)."""
    import numpy as np

    folder = os.path.join(out, CHECKPOINT_DIR)
    weights, rng = checkpoint_files(epoch)
    try:
        os.makedirs(folder, exist_ok=True)
        previous = _state(out)
        keep = {epoch} | ({previous["epoch"]} if previous else set())
        for name in os.listdir(folder):  # the checkpoint before the current one: room for the new one
            match = CHECKPOINT_NAME.fullmatch(name) or re.fullmatch(r"rng-(\d{5,})\.npz", name)
            if match and int(match.group(1)) not in keep:
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(folder, name))
        needed, free = checkpoint_bytes(model), shutil.disk_usage(folder).free
        if free < needed:
            raise OSError(28, f"{free / 1e6:.1f} MB free, the checkpoint needs about {needed / 1e6:.1f} MB")
        model.save_weights(os.path.join(folder, weights))
        with open(os.path.join(folder, rng), "wb") as f:
            np.savez(f, **rng_state(model))
        write_json(os.path.join(folder, STATE_FILE), {"epoch": epoch, "weights": weights, "rng": rng})
    except OSError as e:
        for name in (weights, rng):
            with contextlib.suppress(OSError):
                os.remove(os.path.join(folder, name))
        reason = e.strerror or str(e).splitlines()[0]
        if e.errno == 28 or "No space left on device" in str(e):  # h5py reports it in its message
            reason = "No space left on device" + (f": {e.strerror}" if e.strerror and "space" not in e.strerror else "")
        kept = checkpoint_epoch(out)
        kept = f"the previous checkpoint (epoch {kept}) is intact" if kept else "no earlier checkpoint"
        raise RunError(f"cannot write the checkpoint of epoch {epoch} in {folder} ({reason}); {kept}") from None


def epoch_checkpoint(out):
    import keras

    class EpochCheckpoint(keras.callbacks.Callback):
        """Saves weights + optimizer state + RNG states after every epoch, atomically."""

        def on_epoch_end(self, epoch, logs=None):
            write_checkpoint(self.model, out, epoch + 1)

    return EpochCheckpoint()


# === Signals ===


class Interrupted(KeyboardInterrupt):
    """SIGTERM / SIGINT received: the run stops where it is."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum
        self.name = signal.Signals(signum).name


@contextlib.contextmanager
def stop_on_signals():
    """SIGTERM and SIGINT raise `Interrupted` in the main thread (the run's
    `finally` blocks release its lock; checkpoints are atomic), restored after."""

    def handler(signum, frame):
        raise Interrupted(signum)

    previous = {}
    try:
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread: leave signals alone
        pass
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def interrupted_exit_code(error):
    return 128 + error.signum


def plot_history(csv_path, png_path, title):
    """A loss-curve PNG from Keras' CSVLogger file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return None
    epochs = [int(r["epoch"]) + 1 for r in rows]
    keys = [k for k in rows[0] if k.endswith("loss")]

    def value(text):
        try:
            return float(text)
        except (TypeError, ValueError):  # CSVLogger writes "NA" for missing values
            return float("nan")

    import math

    series = {key: [value(r[key]) for r in rows] for key in keys}
    # A loss that was never logged (e.g. a head the task does not have) gets no line and no legend entry.
    series = {key: ys for key, ys in series.items() if any(math.isfinite(y) for y in ys)}
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, ys in series.items():
        ax.plot(epochs, ys, marker="o", label=key)
    ax.set_xlabel("epoch")
    ax.set_ylabel("loss")
    ax.set_title(title)
    if series:
        ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return png_path
