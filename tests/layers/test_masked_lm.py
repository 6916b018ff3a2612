"""MaskedLMHead / MaskedLMLoss / MaskedLMAccuracy against keras-hub's head and Keras' loss and metric."""

import keras
import keras_hub
import numpy as np

from keras_pretrain.layers.masked_lm import MaskedLMAccuracy
from keras_pretrain.layers.masked_lm import MaskedLMHead
from keras_pretrain.layers.masked_lm import MaskedLMLoss
from keras_pretrain.layers.masked_lm import MaskedLMPerplexity
from tests.testing import assert_all_close

B, T, P, H, V = 3, 9, 4, 8, 50


def data(seed=0):
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, (B, P, V)).astype("float32")
    labels = rng.integers(0, V, (B, P)).astype("int32")
    labels[0, :2] = logits[0, :2].argmax(-1)  # some correct predictions
    weights = np.ones((B, P), "float32")
    weights[1, 2:] = 0.0
    return logits, labels, weights


def test_loss_matches_keras():
    logits, labels, weights = data()
    expected = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")
    actual = MaskedLMLoss()(labels, logits, sample_weight=weights)
    assert_all_close(actual, expected(labels, logits, sample_weight=weights), atol=1e-5)
    per_example = MaskedLMLoss(reduction=None)(labels, logits)
    assert tuple(per_example.shape) == (B, P)
    reference = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)(labels, logits)
    assert_all_close(per_example, reference, atol=1e-5)


def test_accuracy_matches_keras():
    logits, labels, weights = data(1)
    ours, reference = MaskedLMAccuracy(), keras.metrics.SparseCategoricalAccuracy()
    for metric in (ours, reference):
        metric.update_state(labels, logits, sample_weight=weights)
    assert 0 < float(reference.result()) < 1
    assert_all_close(ours.result(), reference.result(), atol=1e-6)


def test_perplexity_matches_keras_hub():
    """Over two batches (the metric accumulates), with sample weights and with a masked label id."""
    for kwargs in ({}, {"mask_token_id": 7}):
        ours, reference = MaskedLMPerplexity(**kwargs), keras_hub.metrics.Perplexity(from_logits=True, **kwargs)
        for seed in (2, 3):
            logits, labels, weights = data(seed)
            labels[2, 0] = 7
            for metric in (ours, reference):
                metric.update_state(labels, logits, sample_weight=weights)
        assert float(reference.result()) > 1.0
        np.testing.assert_allclose(float(ours.result()), float(reference.result()), rtol=1e-5, err_msg=str(kwargs))
    restored = MaskedLMPerplexity.from_config(MaskedLMPerplexity(mask_token_id=7, name="ppl").get_config())
    assert (restored.mask_token_id, restored.name) == (7, "ppl")


def tied_pair(seed=0):
    rng = np.random.default_rng(seed)
    embeddings = [keras_hub.layers.ReversibleEmbedding(V, H) for _ in range(2)]
    heads = [
        cls(token_embedding=embedding, intermediate_activation="gelu")
        for cls, embedding in zip((keras_hub.layers.MaskedLMHead, MaskedLMHead), embeddings)
    ]
    models = []
    for embedding, head in zip(embeddings, heads):
        ids = keras.Input((T,), dtype="int32")
        positions = keras.Input((P,), dtype="int32")
        models.append(keras.Model([ids, positions], head(embedding(ids), mask_positions=positions)))
    for theirs, mine in zip(models[0].weights, models[1].weights):
        value = rng.normal(0, 0.5, theirs.shape).astype("float32")
        theirs.assign(value)
        mine.assign(value)
    return models


def test_head_matches_keras_hub_forward_and_gradients():
    reference, ours = tied_pair()
    rng = np.random.default_rng(1)
    ids = rng.integers(0, V, (B, T)).astype("int32")
    positions = np.sort(rng.integers(0, T, (B, P)), axis=-1).astype("int32")
    labels = rng.integers(0, V, (B, P)).astype("int32")
    assert_all_close(ours.predict_on_batch([ids, positions]), reference.predict_on_batch([ids, positions]),
                     atol=1e-5, what="logits")
    for model in (reference, ours):
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss=MaskedLMLoss())
        model.train_on_batch([ids, positions], labels)
    for theirs, mine in zip(reference.weights, ours.weights):
        assert_all_close(mine, theirs, atol=1e-5, what=theirs.path)
