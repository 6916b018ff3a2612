"""Writing an export's files into a new folder: never over user data, never through a link.

`write_new_folder(folder, files)` refuses a folder that exists and is not empty, a folder that is a
symbolic link, and a path inside it that is a link (files are created with `O_EXCL | O_NOFOLLOW`, so
nothing is written anywhere but a new file in the folder). On any failure what it wrote is removed, and
the folder too when it made it.
"""

import os

from keras_pretrain.errors import ExportError

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)


def prepare_new_folder(folder):
    """Makes `folder` (new or empty, not a link); returns whether it was created."""
    folder = os.fspath(folder)
    if os.path.lexists(folder):
        if os.path.islink(folder) or not os.path.isdir(folder):
            what = "a symbolic link" if os.path.islink(folder) else "not a folder"
            raise ExportError(f"{folder}: the output folder is {what}; give a new or empty folder (nothing was "
                              "written).")
        entries = sorted(os.listdir(folder))
        if entries:
            more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
            raise ExportError(f"{folder}: the output folder is not empty (holds {entries[:5]}{more}); give a new "
                              "or empty folder (nothing was changed).")
        return False
    os.makedirs(folder)
    return True


def write_new_folder(folder, files):
    """Writes `files` ({relative name: bytes}, names without folders) into the new or empty `folder`."""
    folder = os.fspath(folder)
    for name in files:
        if os.path.basename(name) != name or name in ("", ".", ".."):
            raise ExportError(f"{folder}: refusing to write {name!r} (a file name, not a path, is expected).")
    created = prepare_new_folder(folder)
    written = []
    try:
        for name, data in files.items():
            path = os.path.join(folder, name)
            with os.fdopen(os.open(path, _FLAGS, 0o644), "wb") as f:
                written.append(path)
                f.write(data)
    except BaseException:
        for path in written:
            if os.path.isfile(path) and not os.path.islink(path):
                os.remove(path)
        if created and not os.listdir(folder):
            os.rmdir(folder)
        raise
    return folder
