import keras
import numpy as np

from keras_pretrain.models.elmo import ElmoBackbone
from keras_pretrain.models.elmo import ElmoClassifier
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo.elmo_classifier import MaskedMeanPool
from tests.models.elmo.test_elmo_backbone import SENTENCES
from tests.models.elmo.test_elmo_backbone import TINY
from tests.testing import run_task_test
from tests.testing import to_numpy


def test_masked_mean_pool_matches_numpy():
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3, 5, 4)).astype("float32")
    mask = np.array([[1, 1, 0, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], "int32")
    pooled = to_numpy(MaskedMeanPool()(vectors, mask))
    np.testing.assert_allclose(pooled[0], vectors[0, :2].mean(0), rtol=1e-6)
    np.testing.assert_allclose(pooled[1], vectors[1].mean(0), rtol=1e-6)
    np.testing.assert_array_equal(pooled[2], np.zeros(4))  # no real token: zeros, not NaN


def test_classifier_trains_mix_and_head_only(tmp_path):
    backbone = ElmoBackbone(**TINY)
    classifier = ElmoClassifier(backbone, num_classes=3)
    char_ids = character_ids(SENTENCES, max_characters=12)
    frozen = [to_numpy(w) for w in backbone.weights]
    mix = [to_numpy(w) for w in classifier.embedder.scalar_mix.weights]
    run_task_test(classifier, {"char_ids": char_ids, "label": np.array([0, 2])}, tmp_path, steps=2)
    # Feature-based use: the biLM is unchanged, the scalar mix has moved.
    for before, after in zip(frozen, backbone.weights):
        np.testing.assert_array_equal(before, to_numpy(after))
    assert any(np.abs(b - to_numpy(a)).max() > 0 for b, a in zip(mix, classifier.embedder.scalar_mix.weights))
    # Padding words do not change the logits of a sentence.
    padded = character_ids(SENTENCES[:1], max_characters=12, sequence_length=12)
    short = character_ids(SENTENCES[:1], max_characters=12)
    a = to_numpy(classifier({"char_ids": padded}, training=False))
    b = to_numpy(classifier({"char_ids": short}, training=False))
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert keras.ops.shape(a) == (1, 3)
