"""Safe extraction of (untrusted) archives of published checkpoints.

Tar archives (any compression: ALBERT's `albert_base_v2.tar.gz`) and zip files
(Google's BERT releases: `uncased_L-12_H-768_A-12.zip`).
`safe_extract(archive, folder)` checks every member before writing anything:
no absolute paths, no `..` components, no symbolic or hard links that point
outside the folder (zip files: no symbolic links at all, which Python's
zipfile would write as plain files), no device files or FIFOs. A truncated or
corrupt archive (gzip stream cut short, bad header, CRC error) raises
`CheckpointFormatError` naming the file, never a bare `EOFError` /
`tarfile.ReadError` / `zipfile.BadZipFile`.

Size limit (a "tar bomb" never fills the disk): the members' total size must
not exceed `max(EXPANSION_RATIO x the archive's size, MIN_LIMIT)` (100x, 1 GB;
published checkpoints expand about 1.1x, as weights compress poorly). Raise it
with `max_extract_bytes=` or the environment variable
`KERAS_PRETRAIN_MAX_EXTRACT_BYTES` (bytes; `0` = no limit). The total is read
from the headers before anything is written.
"""

import gzip
import os
import stat
import tarfile
import zipfile
import zlib

from keras_pretrain.errors import CheckpointFormatError

EXPANSION_RATIO = 100
MIN_LIMIT = 1 << 30
LIMIT_ENV = "KERAS_PRETRAIN_MAX_EXTRACT_BYTES"

# Errors the tarfile / gzip / bz2 / lzma readers raise on damaged input.
_READ_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, gzip.BadGzipFile, OSError)


def is_zip(path):
    """Whether `path` names a zip archive (by name, or by content)."""
    path = os.fspath(path)
    if path.lower().endswith(".zip"):
        return True
    try:
        return zipfile.is_zipfile(path)
    except _READ_ERRORS:
        return False


def is_archive(path):
    """Whether `path` is a file that looks like a tar (any compression) or zip archive."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    name = path.lower()
    if name.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".zip")):
        return True
    try:
        return tarfile.is_tarfile(path) or zipfile.is_zipfile(path)
    except _READ_ERRORS:
        return False


def _inside(folder, path):
    folder = os.path.realpath(folder)
    path = os.path.realpath(path)
    return os.path.commonpath([folder, path]) == folder


def _check_path(name, folder, where):
    if name.startswith(("/", "\\")) or os.path.isabs(name) or (len(name) > 1 and name[1] == ":"):
        raise CheckpointFormatError(f"{where} has an absolute path; refusing to extract.")
    parts = name.replace("\\", "/").split("/")
    if ".." in parts:
        raise CheckpointFormatError(f"{where} contains '..'; refusing to extract outside the folder.")
    target = os.path.join(folder, name)
    if not _inside(folder, target):
        raise CheckpointFormatError(f"{where} would be written outside the folder.")
    return target


def check_member(member, folder, archive):
    """Raises `CheckpointFormatError` if extracting `member` would be unsafe."""
    name = member.name
    where = f"{archive}: member {name!r}"
    target = _check_path(name, folder, where)
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


def check_zip_member(info, folder, archive):
    """Raises `CheckpointFormatError` if extracting the zip member `info` would be unsafe."""
    where = f"{archive}: member {info.filename!r}"
    _check_path(info.filename, folder, where)
    mode = info.external_attr >> 16  # Unix mode, when the zip was written on Unix
    if stat.S_ISLNK(mode):
        raise CheckpointFormatError(
            f"{where} is a symbolic link; a checkpoint zip holds only files and folders."
        )
    if stat.S_IFMT(mode) and not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise CheckpointFormatError(
            f"{where} is a device file or FIFO; a checkpoint archive holds only "
            "files and folders."
        )


def _extract_zip(archive, folder, limit):
    with zipfile.ZipFile(archive) as zf:
        members = zf.infolist()  # reads the central directory: finds truncation
        if not members:
            raise CheckpointFormatError(f"{archive}: the archive is empty.")
        for info in members:
            check_zip_member(info, folder, archive)
        total = sum(info.file_size for info in members if not info.is_dir())
        if limit is not None and total > limit:
            raise _too_big(archive, total, limit)
        for info in members:
            zf.extract(info, folder)  # CRC checked while reading
    return [m.filename for m in members]


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
    """Extracts the tar or zip archive `archive` into `folder`, checked.

    Args:
        archive: path of a tar (any compression) or zip archive.
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
        if is_zip(archive):
            return _extract_zip(archive, folder, limit)
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


def member_names(path):
    """The file names inside an archive, read from its index (nothing extracted); CheckpointFormatError
    naming the archive when it cannot be read."""
    zipped = is_zip(path)  # a damaged .zip is reported as a zip, not as a tar it never was
    try:
        if zipped:
            with zipfile.ZipFile(path) as archive:
                return archive.namelist()
        with tarfile.open(path) as archive:
            return [member.name for member in archive]
    except _READ_ERRORS as e:
        raise CheckpointFormatError(
            f"{path}: unreadable {'zip' if zipped else 'tar'} archive, truncated or corrupt ({type(e).__name__}: {e})."
        ) from None
