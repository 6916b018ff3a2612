import os

# Masked-LM pretrainers compile with XLA on TensorFlow on CPU (1.05-1.1x per
# step); in tests the compilation of each tiny model costs more than its few
# steps (the suite's TF run takes twice as long). Off here and in the
# subprocesses tests start; tests/models/test_task_xla.py checks that the XLA
# step equals the plain graph's.
os.environ.setdefault("KERAS_PRETRAIN_XLA_ON_CPU", "0")

# JAX compiles every jitted step on its first call, and the suite builds the same tiny models in many tests (and
# in the subprocesses some start): one compilation cache for the whole run, shared by the xdist workers (they
# inherit this process's environment), removed at its end (`pytest_unconfigure`). The cache is keyed on the
# compiled program, compile options and versions, so a hit is the same program. Compilations under 0.2 s are
# not worth a disk write.
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    import tempfile

    _JAX_CACHE = tempfile.mkdtemp(prefix="keras_pretrain_jax_cache_")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _JAX_CACHE
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
else:
    _JAX_CACHE = None

# XLA:CPU runs LLVM's optimisations on every program it compiles; the JAX run compiles hundreds of tiny programs
# (every fit/predict step) and runs each a few times, so the optimisation costs more than it gains:
# tests/models/bert/test_bert_tasks.py on JAX took 184 s with it and 91 s without (same machine, interleaved).
# JAX run only: TensorFlow's fused GELU kernels are XLA functions whose accuracy tests/layers/test_activations.py
# bounds against TensorFlow's own ops, and unoptimised they round differently. A flag the caller set wins.
_XLA_FLAGS = os.environ.get("XLA_FLAGS", "")
if os.environ.get("KERAS_BACKEND") == "jax" and "--xla_backend_optimization_level" not in _XLA_FLAGS:
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

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


def pytest_unconfigure(config):
    if _JAX_CACHE is not None:
        import shutil

        shutil.rmtree(_JAX_CACHE, ignore_errors=True)


def pytest_report_header(config):
    return f"keras backend: {keras.config.backend()} (KERAS_BACKEND={os.environ.get('KERAS_BACKEND')})"


# Per-file durations (issue 66, item 6): with KERAS_PRETRAIN_DURATIONS set to a file path, the controlling pytest
# process (xdist forwards every worker's reports to it) writes `seconds<TAB>file` per test file, setup, call and
# teardown summed. `.ci/test-backends` merges the backends' files into tests/durations.tsv.
_FILE_SECONDS = {}


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    _FILE_SECONDS[path] = _FILE_SECONDS.get(path, 0.0) + report.duration


def pytest_sessionfinish(session, exitstatus):
    target = os.environ.get("KERAS_PRETRAIN_DURATIONS")
    if not target or hasattr(session.config, "workerinput"):
        return
    with open(target, "w", encoding="utf-8") as f:
        for path, seconds in sorted(_FILE_SECONDS.items(), key=lambda item: -item[1]):
            f.write(f"{seconds:.1f}\t{path}\n")
