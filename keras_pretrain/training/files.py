"""The files of a run folder, read and written safely: atomic JSON, and reads that never leave the folder.

A run folder is trusted only as far as it was written by the run itself: a symbolic link leading out of it
(to another run's checkpoint, to a file elsewhere) is refused, and a small file the run wrote is read with a
size limit and checked as UTF-8 / a JSON object, each problem a `RunError` naming the file.
"""

import json
import os

from keras_pretrain.errors import RunError


def write_json(path, data):
    """Writes JSON atomically (a crash never leaves a half-written file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, default=float)
    os.replace(tmp, path)


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
