"""Runs a serving SavedModel in a fresh process that imports only TensorFlow and tensorflow-text.

    python tests/export/serving_check.py '[[SAVEDMODEL_DIR, {input: values}], ...]'

prints `{"outputs": [{name: nested lists}, ...], "modules": [...]}` where `modules` lists
any keras_hub / keras_pretrain / hub_modules / recipes module the process imported.
`serve(path, inputs)` runs it from a test.
"""

import json
import os
import subprocess
import sys

FORBIDDEN = ("keras_hub", "keras_pretrain", "hub_modules", "recipes")  # keras itself comes with tensorflow_text


def serve(path, inputs):
    """(outputs dict of NumPy arrays, forbidden modules imported) of `path`'s serving_default on `inputs`."""
    outputs, modules = serve_many([(path, inputs)])
    return outputs[0], modules


def serve_many(requests):
    """`serve` for several (path, inputs) in one process: ([outputs, ...], forbidden modules imported)."""
    import numpy as np

    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KERAS_BACKEND")}
    requests = [[os.fspath(path), inputs] for path, inputs in requests]
    result = subprocess.run([sys.executable, os.path.abspath(__file__), json.dumps(requests)],
                            env=env, capture_output=True, text=True, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    return [{k: np.asarray(v) for k, v in out.items()} for out in data["outputs"]], data["modules"]


def main(requests):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the tokenizers' ops)

    results = []
    for path, inputs in json.loads(requests):
        function = tf.saved_model.load(path).signatures["serving_default"]
        outputs = function(**{k: tf.constant(v) for k, v in inputs.items()})
        result = {}
        for name, value in outputs.items():
            value = value.numpy()
            result[name] = [x.decode() for x in value] if value.dtype == object else value.tolist()
        results.append(result)
    modules = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    print(json.dumps({"outputs": results, "modules": modules}))


if __name__ == "__main__":
    main(sys.argv[1])
