"""File-system errors in a few words, whichever library raised them (Python's `OSError`, TensorFlow's own)."""

import re


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

