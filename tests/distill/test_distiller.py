"""Distillation: the KL loss, student initialisation, and short Distiller runs on every backend."""

import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_pretrain.distill import Distiller
from keras_pretrain.distill import initialize_student_from_teacher
from keras_pretrain.errors import ConfigError
from keras_pretrain.losses import distillation_kl
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertPretrainer
from tests.testing import random_encoder_inputs
from tests.testing import to_numpy

V = 40
SMALL = dict(vocabulary_size=V, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=16)


def numpy_kl(teacher, student, temperature, mask):
    def log_softmax(z):
        z = z / temperature
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    lt, ls = log_softmax(teacher.astype("float64")), log_softmax(student.astype("float64"))
    kl = (np.exp(lt) * (lt - ls)).sum(-1) * temperature**2
    return (kl * mask).sum() / mask.sum()


def test_kl_equals_numpy():
    rng = np.random.default_rng(0)
    teacher, student = rng.normal(size=(2, 3, 2, V)).astype("float32") * 3
    mask = np.array([[1, 1], [1, 0], [0, 1]], "float32")
    for temperature in (1.0, 2.0, 5.0):
        got = float(to_numpy(distillation_kl(teacher, student, temperature, mask=mask)))
        np.testing.assert_allclose(got, numpy_kl(teacher, student, temperature, mask), rtol=1e-5)
    assert float(to_numpy(distillation_kl(teacher, teacher, 1.0))) == pytest.approx(0.0, abs=1e-6)


def test_kl_gradient_scale_follows_t_squared():
    """d(KL*T^2)/d(student) = T * (softmax(s/T) - softmax(t/T)): the T^2 factor keeps its size ~constant in T."""
    rng = np.random.default_rng(1)
    teacher, student = rng.normal(size=(2, 1, V)).astype("float32")

    def loss(s, t):
        return float(to_numpy(distillation_kl(teacher, s, t)))

    def numeric_grad(t, eps=5e-2):
        grad = np.zeros(V)
        for k in range(V):
            up, down = student.copy(), student.copy()
            up[0, k] += eps
            down[0, k] -= eps
            grad[k] = (loss(up, t) - loss(down, t)) / (2 * eps)
        return grad

    def softmax(z):
        e = np.exp(z - z.max())
        return e / e.sum()

    norms = {}
    for t in (1.0, 4.0, 8.0):
        grad = numeric_grad(t)
        expected = t * (softmax(student[0] / t) - softmax(teacher[0] / t))
        np.testing.assert_allclose(grad, expected, atol=2e-2 * np.abs(expected).max())  # float32 differences
        norms[t] = np.linalg.norm(grad)
    # Without the T^2 factor the gradient would shrink 4x from T=4 to T=8; with it, it stays put.
    assert norms[8.0] / norms[4.0] == pytest.approx(1.0, abs=0.1)


def features(n=16, length=10, seed=0):
    rng = np.random.default_rng(seed)
    d = random_encoder_inputs(n, length, V, pad_from=7, seed=seed)
    return {"input_ids": d["token_ids"], "input_mask": d["padding_mask"], "segment_ids": d["segment_ids"],
            "masked_lm_positions": rng.integers(1, 7, (n, 3)).astype("int32"),
            "masked_lm_ids": rng.integers(5, V, (n, 3)).astype("int32"),
            "masked_lm_weights": np.tile(np.array([1, 1, 0], "float32"), (n, 1))}


@pytest.fixture(scope="module")
def teacher():
    return BertPretrainer(BertBackbone(num_layers=4, **SMALL), sentence_head=False)


def test_student_init_copies_exactly_the_chosen_layers(teacher):
    student = DistilBertPretrainer(DistilBertBackbone(num_layers=2, **SMALL))
    initialize_student_from_teacher(teacher, student, layers=(1, 3))
    t, s = teacher.backbone, student.backbone
    w = lambda layer: [to_numpy(v) for v in layer.weights]  # noqa: E731
    for i, j in enumerate((1, 3)):
        for a, b in zip(w(s.transformer_layers[i]), w(t.transformer_layers[j])):
            np.testing.assert_array_equal(a, b)
        for other in {0, 1, 2, 3} - {j}:  # and not another teacher layer
            assert not np.array_equal(w(s.transformer_layers[i])[0], w(t.transformer_layers[other])[0])
    np.testing.assert_array_equal(to_numpy(s.token_embedding.embeddings), to_numpy(t.token_embedding.embeddings))
    np.testing.assert_array_equal(to_numpy(s.position_embedding.position_embeddings),
                                  to_numpy(t.position_embedding.position_embeddings))
    np.testing.assert_array_equal(to_numpy(s.embeddings_layer_norm.gamma), to_numpy(t.embeddings_layer_norm.gamma))
    np.testing.assert_array_equal(to_numpy(student.masked_lm_head._intermediate_dense.kernel),
                                  to_numpy(teacher.masked_lm_head._intermediate_dense.kernel))
    with pytest.raises(ConfigError, match="student layers"):
        initialize_student_from_teacher(teacher, student, layers=(0, 1, 2))
    with pytest.raises(ConfigError, match="no layer"):
        initialize_student_from_teacher(teacher, student, layers=(0, 4))


def test_identical_teacher_and_student_at_t1_give_zero(teacher):
    student = BertPretrainer(BertBackbone(num_layers=4, **SMALL), sentence_head=False)
    student.set_weights(teacher.get_weights())
    distiller = Distiller(teacher, student, temperature=1.0)
    result = distiller.evaluate(tf.data.Dataset.from_tensor_slices(features()).batch(8), verbose=0,
                                return_dict=True)
    assert result["ce_loss"] == pytest.approx(0.0, abs=1e-6)
    assert result["cos_loss"] == pytest.approx(0.0, abs=1e-5)


def test_short_distillation_lowers_the_loss(teacher):
    student = DistilBertPretrainer(DistilBertBackbone(num_layers=2, **SMALL))
    initialize_student_from_teacher(teacher, student, layers=(0, 2))
    distiller = Distiller(teacher, student)
    assert not teacher.trainable and len(distiller.trainable_weights) == len(student.trainable_weights)
    frozen = [to_numpy(v) for v in teacher.weights]
    dataset = tf.data.Dataset.from_tensor_slices(features()).batch(8).cache()
    before = distiller.evaluate(dataset, verbose=0, return_dict=True)
    history = distiller.fit(dataset, epochs=6, verbose=0)
    after = distiller.evaluate(dataset, verbose=0, return_dict=True)
    print(before, after)
    assert {"ce_loss", "mlm_loss", "cos_loss", "mlm_accuracy"} <= set(history.history)
    assert after["loss"] < before["loss"] - 0.05
    assert after["cos_loss"] < before["cos_loss"]
    for a, b in zip(frozen, teacher.weights):  # the teacher did not move
        np.testing.assert_array_equal(a, to_numpy(b))
    # Student inputs without segment ids, teacher with: both fed from one feature dict.
    assert set(student.backbone.input) == {"token_ids", "padding_mask"}


def test_mismatched_vocabularies_rejected(teacher):
    student = DistilBertPretrainer(DistilBertBackbone(num_layers=1, **{**SMALL, "vocabulary_size": V + 1}))
    with pytest.raises(ConfigError, match="vocabulary"):
        Distiller(teacher, student)
