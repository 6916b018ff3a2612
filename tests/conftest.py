import os

import keras
import pytest


def pytest_collection_modifyitems(config, items):
    """`tf_only` tests (export, checkpoints, tf.data) run in the TF run only."""
    if keras.config.backend() == "tensorflow":
        return
    skip = pytest.mark.skip(
        reason="TensorFlow-side code: runs once, in the tensorflow backend run"
    )
    for item in items:
        if "tf_only" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _seed():
    keras.utils.set_random_seed(0)
    yield


def pytest_report_header(config):
    return f"keras backend: {keras.config.backend()} (KERAS_BACKEND={os.environ.get('KERAS_BACKEND')})"
