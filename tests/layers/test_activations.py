"""Our GELUs: the same function as Keras' on every backend; on TensorFlow one XLA kernel inside compiled graphs,
TensorFlow's own ops in eager calls and in SavedModels (which must run where XLA is off, as in TF Serving)."""

import glob
import math
import os

import keras
import numpy as np
import pytest

from keras_pretrain.layers.activations import gelu_approximate
from keras_pretrain.layers.activations import gelu_exact
from keras_pretrain.layers.activations import get_activation

FORMS = [(gelu_exact, False), (gelu_approximate, True)]
TF_ONLY = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="the fused kernels are TensorFlow's")
# What TensorFlow's GELU is made of (erf form: Erfc; tanh form: Pow and Tanh).
GELU_OPS = {"Erfc", "Erf", "Tanh", "Pow"}


def _float64_gelu(x, approximate):
    """GELU and its derivative in float64, from the formulas."""
    x = x.astype(np.float64)
    if approximate:
        c = math.sqrt(2 / math.pi)
        t = np.tanh(c * (x + 0.044715 * x**3))
        return 0.5 * x * (1 + t), 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * 0.044715 * x**2)
    cdf = 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    return x * cdf, cdf + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _inputs():
    return np.random.default_rng(0).normal(0, 3, (5, 7, 33)).astype("float32")


def test_names_map_to_our_gelus():
    assert get_activation("gelu") is gelu_exact
    assert get_activation("gelu_approximate") is gelu_approximate
    assert keras.activations.deserialize(keras.activations.serialize(gelu_exact)) is gelu_exact


@pytest.mark.parametrize("ours, approximate", FORMS)
def test_eager_values_are_keras_gelu(ours, approximate):
    x = _inputs()
    expected = keras.ops.convert_to_numpy(keras.activations.gelu(x, approximate=approximate))
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(ours(keras.ops.convert_to_tensor(x))), expected)


@TF_ONLY
@pytest.mark.parametrize("ours, approximate", FORMS)
def test_fused_values_and_gradients_equal_tensorflow_gelu(ours, approximate):
    import tensorflow as tf

    def value_and_grad(activation):
        @tf.function(input_signature=[tf.TensorSpec([None, None, None], tf.float32)] * 2)
        def run(x, upstream):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = activation(x)
            return y, tape.gradient(y, x, output_gradients=upstream)

        return run

    fused = value_and_grad(ours)
    plain = value_and_grad(lambda x: keras.activations.gelu(x, approximate=approximate))
    graph = fused.get_concrete_function().graph
    assert not GELU_OPS & {op.type for op in graph.get_operations()}  # in the XLA functions, not here
    for shape in [(5, 7, 33), (2, 1, 3072)]:  # one trace, any shape
        x = np.random.default_rng(1).normal(0, 3, shape).astype("float32")
        upstream = np.ones(shape, "float32")
        value, derivative = _float64_gelu(x, approximate)
        got, tensorflow = fused(x, upstream), plain(x, upstream)
        # As close to the formula as TensorFlow's own ops are (fused 8.0e-7 / 3.6e-6, TF's 8.6e-7 / 4.2e-6 on
        # 200k normal(0, 3) samples, tanh form; 3.8e-7 / 1.4e-7 both, erf form).
        for ours, theirs, exact in [(got[0], tensorflow[0], value), (got[1], tensorflow[1], derivative)]:
            assert np.abs(ours.numpy() - exact).max() < 1e-5
            assert np.abs(ours.numpy() - exact).max() <= 1.5 * np.abs(theirs.numpy() - exact).max() + 1e-7
        upstream = np.random.default_rng(2).normal(0, 1, shape).astype("float32")
        np.testing.assert_allclose(fused(x, upstream)[1].numpy(), derivative * upstream, atol=2e-5)
    assert len(fused._list_all_concrete_functions()) == 1


@TF_ONLY
def test_fused_gelu_in_bfloat16():
    import tensorflow as tf

    x = tf.constant(_inputs(), tf.bfloat16)
    got = tf.function(gelu_approximate)(x)
    assert got.dtype == tf.bfloat16
    expected = keras.activations.gelu(tf.cast(x, tf.float32), approximate=True)
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(), expected.numpy(), rtol=1e-2, atol=1e-2)


@TF_ONLY
def test_savedmodels_hold_no_xla(tmp_path):
    """Ours (hub module: encoder, classifier, preprocessor) and Keras' `model.export` trace in the save context."""
    import hub_modules
    from tests.tasks.classification.test_serving import LABELS
    from tests.tasks.classification.test_serving import SEQ_LENGTH
    from tests.tasks.classification.test_serving import _classifier

    classifier, tokenizer = _classifier()
    classifier.predict(  # a compiled graph first: that one is fused
        {name: np.ones((2, SEQ_LENGTH), "int32") for name in classifier.input}, verbose=0
    )
    hub_modules.export(classifier, str(tmp_path / "module"), tokenizer=tokenizer, seq_length=SEQ_LENGTH,
                       labels=LABELS)
    classifier.export(str(tmp_path / "keras_export"), verbose=False)
    graphs = glob.glob(str(tmp_path / "**" / "saved_model.pb"), recursive=True)
    assert len(graphs) == 4, graphs
    for path in graphs:
        with open(path, "rb") as f:
            assert b"_XlaMustCompile" not in f.read(), f"{os.path.relpath(path, tmp_path)} needs XLA"
