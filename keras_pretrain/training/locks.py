"""The lock of a run folder (`.lock`: the pid and host of the run that holds it).

One run at a time writes a folder: a live holder refuses the next (`RunFolderError`), the lock of a dead
process (a killed run) is taken over with a message on stderr, a run on another host is never second-guessed.
"""

import contextlib
import json
import os
import socket
import sys

from keras_pretrain.errors import RunFolderError

LOCK_FILE = ".lock"


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


def _cannot_write(out, error):
    return RunFolderError(f"--out: cannot write to {out!r} ({error.strerror or error})")


def acquire_lock(out):
    """Writes `out/.lock` (pid and host) and returns its path. A live holder raises `RunFolderError` (the
    recipes exit with code 2); the lock of a dead process (a killed run) is taken over with a message.
    Also the writability check of `out`: a read-only or full folder fails here (`RunFolderError`)."""
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
                raise RunFolderError(f"--out: {out!r} is in use by another run (pid {pid}, lock file {path}); "
                                     "wait for it to finish or choose another folder") from None
            if holder is not None and host != me["host"]:
                raise RunFolderError(f"--out: {out!r} is locked by a run on host {host!r} (pid {pid}, lock file "
                                     f"{path}); delete the lock file if that run is over") from None
            if pid != me["pid"]:
                print(f"taking over the stale lock of {out!r} (pid {pid} is no longer running)", file=sys.stderr)
            try:
                os.remove(path)
            except FileNotFoundError:
                pass
            except OSError as e:
                raise _cannot_write(out, e) from None
            continue
        except OSError as e:
            raise _cannot_write(out, e) from None
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(me, f)
        except OSError as e:
            with contextlib.suppress(OSError):
                os.remove(path)
            raise _cannot_write(out, e) from None
        return path
    raise RunFolderError(f"--out: could not take the lock {path}")


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
