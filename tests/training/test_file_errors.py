"""keras_pretrain.training.file_errors: file-system errors in a few words, TensorFlow's read as OSErrors."""

import errno

import pytest

from keras_pretrain import training


@pytest.mark.one_backend
def test_os_error_reason_in_a_few_words():
    assert training.os_error_reason(OSError(errno.ENOSPC, "whatever", "/out/x")) == "No space left on device"
    assert training.os_error_reason(OSError(errno.EACCES, "Permission denied", "/out/x")) == "Permission denied"
    h5py_error = OSError("Can't write data (file write failed: No space left on device)")  # no errno
    assert training.os_error_reason(h5py_error) == "No space left on device"
    assert training.os_error_reason(ValueError("first line\nsecond")) == "first line"
    assert training.os_error_reason(ValueError()) == "ValueError"


@pytest.mark.tf_only
def test_tensorflow_file_errors_read_as_os_errors():
    """TensorFlow raises its own errors where Python raises OSError: the recipes read them as one."""
    import tensorflow as tf

    full = tf.errors.ResourceExhaustedError(None, None, "{{function_node __wrapped__SaveV2}} /out/encoder/variables/"
                                            "variables_temp/part-0.data; No space left on device [Op:SaveV2]")
    error = training.as_os_error(full)
    assert (error.errno, error.strerror, error.filename) == (
        errno.ENOSPC, "No space left on device", "/out/encoder/variables/variables_temp/part-0.data")
    locked = training.as_os_error(tf.errors.PermissionDeniedError(None, None, "/out/saved_model.pb.tmp1; Read-only "
                                                                               "file system"))
    assert (locked.errno, locked.filename) == (errno.EROFS, "/out/saved_model.pb.tmp1")
    assert training.as_os_error(tf.errors.InvalidArgumentError(None, None, "shape mismatch")) is None
    assert training.as_os_error(ValueError("/out/x; No space left on device")) is None
    plain = OSError(errno.ENOSPC, "No space left on device", "/out/x")
    assert training.as_os_error(plain) is plain
