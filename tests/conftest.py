import os

# Masked-LM pretrainers compile with XLA on TensorFlow on CPU (1.05-1.1x per
# step); in tests the compilation of each tiny model costs more than its few
# steps (the suite's TF run takes twice as long). Off here and in the
# subprocesses tests start; tests/models/test_task_xla.py checks that the XLA
# step equals the plain graph's.
os.environ.setdefault("KERAS_PRETRAIN_XLA_ON_CPU", "0")

import keras  # noqa: E402
import pytest  # noqa: E402


def pytest_collection_modifyitems(config, items):
    """`tf_only` tests (export, checkpoints, tf.data) run in the TF run only; `one_backend` tests (code that
    computes nothing with Keras ops: file layouts, argument checks, error messages) run once, in the torch run
    (the shortest of the three)."""
    backend = keras.config.backend()
    skip_tf = pytest.mark.skip(reason="TensorFlow-side code: runs once, in the tensorflow backend run")
    skip_one = pytest.mark.skip(reason="backend-independent: runs once, in the torch backend run")
    for item in items:
        if "tf_only" in item.keywords and backend != "tensorflow":
            item.add_marker(skip_tf)
        if "one_backend" in item.keywords and backend != "torch":
            item.add_marker(skip_one)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)
    yield


def pytest_report_header(config):
    return f"keras backend: {keras.config.backend()} (KERAS_BACKEND={os.environ.get('KERAS_BACKEND')})"
