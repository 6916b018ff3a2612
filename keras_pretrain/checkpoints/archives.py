"""Safe extraction of (untrusted) tar archives of published checkpoints.

`safe_extract(archive, folder)` checks every member before writing anything:
no absolute paths, no `..` components, no symbolic or hard links that point
outside the folder, no device files or FIFOs. A truncated or corrupt archive
(gzip stream cut short, bad header, CRC error) raises `CheckpointFormatError`
naming the file, never a bare `EOFError` / `tarfile.ReadError`.

Size limit (a "tar bomb" never fills the disk): the members' total size must
not exceed `max(EXPANSION_RATIO x the archive's size, MIN_LIMIT)` (100x, 1 GB;
published checkpoints expand about 1.1x, as weights compress poorly). Raise it
with `max_extract_bytes=` or the environment variable
`KERAS_PRETRAIN_MAX_EXTRACT_BYTES` (bytes; `0` = no limit). The total is read
from the headers before anything is written.
"""

import gzip
import os
import tarfile
import zlib

from keras_pretrain.errors import CheckpointFormatError

EXPANSION_RATIO = 100
MIN_LIMIT = 1 << 30
LIMIT_ENV = "KERAS_PRETRAIN_MAX_EXTRACT_BYTES"

# Errors the tarfile / gzip / bz2 / lzma readers raise on damaged input.
_READ_ERRORS = (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError)


def is_archive(path):
    """Whether `path` is a file that looks like a tar archive (any compression)."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    name = path.lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")):
        return True
    try:
        return tarfile.is_tarfile(path)
    except _READ_ERRORS:
        return False


def _inside(folder, path):
    folder = os.path.realpath(folder)
    path = os.path.realpath(path)
    return os.path.commonpath([folder, path]) == folder


def check_member(member, folder, archive):
    """Raises `CheckpointFormatError` if extracting `member` would be unsafe."""
    name = member.name
    where = f"{archive}: member {name!r}"
    if name.startswith(("/", "\\")) or os.path.isabs(name) or (len(name) > 1 and name[1] == ":"):
        raise CheckpointFormatError(f"{where} has an absolute path; refusing to extract.")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise CheckpointFormatError(f"{where} contains '..'; refusing to extract outside the folder.")
    target = os.path.join(folder, name)
    if not _inside(folder, target):
        raise CheckpointFormatError(f"{where} would be written outside the folder.")
    if member.issym():
        link = member.linkname
        resolved = os.path.join(os.path.dirname(target), link)
        if os.path.isabs(link) or not _inside(folder, resolved):
            raise CheckpointFormatError(
                f"{where} is a symbolic link to {link!r}, outside the archive folder."
            )
    elif member.islnk():
        link = member.linkname
        if os.path.isabs(link) or ".." in link.replace("\\", "/").split("/") or not _inside(
            folder, os.path.join(folder, link)
        ):
            raise CheckpointFormatError(
                f"{where} is a hard link to {link!r}, outside the archive folder."
            )
    elif not (member.isfile() or member.isdir()):
        raise CheckpointFormatError(
            f"{where} is a device file or FIFO; a checkpoint archive holds only "
            "files and folders."
        )


def extract_limit(archive, max_extract_bytes=None):
    """The most bytes `archive` may expand to (None: no limit); see module doc."""
    if max_extract_bytes is None:
        raw = os.environ.get(LIMIT_ENV)
        if raw:
            try:
                max_extract_bytes = int(float(raw))
            except ValueError:
                raise CheckpointFormatError(f"{LIMIT_ENV}={raw!r} is not a number of bytes.") from None
    if max_extract_bytes is None:
        return max(EXPANSION_RATIO * os.path.getsize(archive), MIN_LIMIT)
    return None if max_extract_bytes <= 0 else int(max_extract_bytes)


def _too_big(archive, total, limit):
    return CheckpointFormatError(
        f"{archive}: expands to {total / 1e6:,.1f} MB, more than the limit of {limit / 1e6:,.1f} MB "
        f"({EXPANSION_RATIO}x the archive's {os.path.getsize(archive) / 1e6:,.1f} MB, at least "
        f"{MIN_LIMIT / 1e6:,.0f} MB); refusing to extract. If the archive is trusted, raise the limit "
        f"with max_extract_bytes= or {LIMIT_ENV}=<bytes> (0: no limit)."
    )


def safe_extract(archive, folder, max_extract_bytes=None):
    """Extracts the tar archive `archive` into `folder`, checked.

    Args:
        archive: path of a tar archive (any compression).
        folder: where to extract (created).
        max_extract_bytes: the most bytes the members may total; default
            `KERAS_PRETRAIN_MAX_EXTRACT_BYTES` or max(100 x the archive's
            size, 1 GB); 0 or less: no limit.

    Returns:
        The list of extracted member names.

    Raises:
        CheckpointFormatError: an unsafe member, a damaged archive, or more
            bytes than the limit (checked before anything is written).
    """
    archive = os.fspath(archive)
    if not os.path.isfile(archive):
        raise CheckpointFormatError(f"{archive}: no such archive file.")
    limit = extract_limit(archive, max_extract_bytes)
    os.makedirs(folder, exist_ok=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            members = tar.getmembers()  # reads every header: finds truncation
            if not members:
                raise CheckpointFormatError(f"{archive}: the archive is empty.")
            for member in members:
                check_member(member, folder, archive)
            total = sum(m.size for m in members if m.isfile())
            if limit is not None and total > limit:
                raise _too_big(archive, total, limit)
            for member in members:
                if hasattr(tarfile, "data_filter"):
                    tar.extract(member, folder, filter="data")
                else:  # pragma: no cover (Python < 3.11.4)
                    tar.extract(member, folder)
    except CheckpointFormatError:
        raise
    except _READ_ERRORS as e:
        raise CheckpointFormatError(
            f"{archive}: truncated, corrupt or unreadable archive ({type(e).__name__}: {e}). "
            "Download it again."
        ) from None
    return [m.name for m in members]
