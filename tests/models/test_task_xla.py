"""The XLA path of the masked-LM pretrainers on TensorFlow on CPU (on by default, off in the rest of the
suite through KERAS_PRETRAIN_XLA_ON_CPU=0, see tests/conftest.py) computes the plain graph's steps.

Without dropout the steps are equal; with it they differ by their masks alone: under XLA the masks are drawn
from ThreeFry, outside it from Philox (keras_pretrain.layers.backend_kernels; their statistics are in
tests/layers/test_dropout.py)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.models.albert import AlbertBackbone
from keras_pretrain.models.albert import AlbertPretrainer
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from tests.models.bert.test_bert_tasks import TINY
from tests.models.bert.test_bert_tasks import pretraining_features

pytestmark = pytest.mark.tf_only  # XLA-on-CPU is a TensorFlow-backend choice


def _train(cls, backbone, monkeypatch, xla):
    monkeypatch.setenv("KERAS_PRETRAIN_XLA_ON_CPU", "1" if xla else "0")
    keras.utils.set_random_seed(0)
    model = cls(backbone(**TINY, dropout=0.0))
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    data = tf.data.Dataset.from_tensor_slices(pretraining_features(n=16)).batch(8)
    history = model.fit(data, epochs=3, verbose=0).history
    return model, history


@pytest.mark.parametrize("cls, backbone", [(AlbertPretrainer, AlbertBackbone),
                                           pytest.param(BertPretrainer, BertBackbone, marks=pytest.mark.large)])
def test_xla_step_equals_the_plain_graph(cls, backbone, monkeypatch):
    plain, plain_history = _train(cls, backbone, monkeypatch, xla=False)
    xla, xla_history = _train(cls, backbone, monkeypatch, xla=True)
    assert plain.jit_compile is False and xla.jit_compile is True
    np.testing.assert_allclose(xla_history["loss"], plain_history["loss"], rtol=1e-4, atol=1e-5)
    for a, b in zip(xla.weights, plain.weights):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-4, err_msg=a.path)


def test_xla_stays_off_under_bfloat16(monkeypatch):
    """XLA:CPU's bfloat16 matmuls ran slower than its float32 ones; TensorFlow's oneDNN kernels use the bfloat16
    units (benchmarks/RESULTS.md)."""
    monkeypatch.setenv("KERAS_PRETRAIN_XLA_ON_CPU", "1")
    models = {}
    for policy in ("float32", "mixed_bfloat16"):
        model = AlbertPretrainer(AlbertBackbone(**TINY, dtype=policy), dtype=policy)
        model.compile(optimizer=keras.optimizers.Adam(1e-3))
        models[policy] = model
    assert models["float32"].jit_compile is True
    assert models["mixed_bfloat16"].jit_compile is False
