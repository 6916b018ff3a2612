import os

import keras
import numpy as np
import pytest

from keras_pretrain.models.elmo import ElmoBackbone
from keras_pretrain.models.elmo import ElmoBiLM
from keras_pretrain.models.elmo import ElmoEmbedder
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo import lm_targets
from keras_pretrain.models.elmo.elmo_pretrainer import log_uniform_probability
from keras_pretrain.models.elmo.elmo_pretrainer import log_uniform_sample
from keras_pretrain.models.elmo.elmo_pretrainer import sampled_softmax_nll
from tests.testing import assert_all_close
from tests.testing import to_numpy

TINY = dict(num_layers=2, hidden_dim=16, lstm_dim=24, filters=[[1, 8], [2, 8], [3, 16]], num_highway=1,
            max_characters=10)
WORDS = ["<pad>", "<S>", "</S>", "<UNK>", "a", "b", "c", "d", "e", "f", "g", "h"]


def _features(num=32, width=8, seed=0):
    # Learnable sentences: a run of consecutive letters from a random start.
    rng = np.random.default_rng(seed)
    sentences, ids = [], np.zeros((num, width), "int32")
    for n in range(num):
        start, length = rng.integers(0, 8), rng.integers(3, width - 1)
        words = [WORDS[4 + (start + k) % 8] for k in range(length)]
        sentences.append(words)
        row = [1] + [WORDS.index(w) for w in words] + [2]
        ids[n, : len(row)] = row
    next_ids, previous_ids = lm_targets(ids)
    return {
        "char_ids": character_ids(sentences, max_characters=10, sequence_length=width),
        "next_token_ids": next_ids.astype("int32"),
        "previous_token_ids": previous_ids.astype("int32"),
    }


def test_lm_targets():
    next_ids, previous_ids = lm_targets(np.array([[1, 7, 9, 2, 0], [1, 5, 2, 0, 0]]))
    np.testing.assert_array_equal(next_ids, [[7, 9, 2, 0, 0], [5, 2, 0, 0, 0]])
    np.testing.assert_array_equal(previous_ids, [[0, 1, 7, 9, 0], [0, 1, 5, 0, 0]])


def test_log_uniform_sampler_distribution():
    vocabulary, draws = 10, 20000
    ids = to_numpy(log_uniform_sample(draws, vocabulary, seed=keras.random.SeedGenerator(3)))
    assert ids.min() >= 0 and ids.max() < vocabulary
    q = to_numpy(log_uniform_probability(np.arange(vocabulary), vocabulary))
    np.testing.assert_allclose(q.sum(), 1.0, rtol=1e-6)
    freq = np.bincount(ids, minlength=vocabulary) / draws
    se = np.sqrt(q * (1 - q) / draws)
    assert np.all(np.abs(freq - q) <= 4.5 * se), (freq, q)


@pytest.mark.tf_only
def test_sampled_softmax_equals_tensorflow():
    import tensorflow as tf

    rng = np.random.default_rng(0)
    n, dim, vocabulary, num_sampled = 6, 4, 30, 7
    hidden = rng.normal(size=(n, dim)).astype("float32")
    weights = rng.normal(size=(vocabulary, dim)).astype("float32")
    bias = rng.normal(size=(vocabulary,)).astype("float32")
    labels = rng.integers(0, vocabulary, (n,)).astype("int64")
    sampled, true_count, sampled_count = tf.random.log_uniform_candidate_sampler(
        labels[:, None], 1, num_sampled, unique=False, range_max=vocabulary, seed=1
    )
    labels[0] = sampled.numpy()[0]  # an accidental hit, removed by both
    true_count = num_sampled * log_uniform_probability(labels, vocabulary).numpy()[:, None]
    # TF's sampler's expected counts are num_sampled * Q, as ours.
    np.testing.assert_allclose(
        sampled_count.numpy(), num_sampled * log_uniform_probability(sampled, vocabulary).numpy(), rtol=1e-5
    )
    expected = tf.nn.sampled_softmax_loss(
        weights, bias, labels[:, None], hidden, num_sampled, vocabulary,
        sampled_values=(sampled, true_count, sampled_count), remove_accidental_hits=True,
    )
    got = sampled_softmax_nll(hidden, labels, weights, bias, sampled.numpy().astype("int32"), vocabulary)
    assert_all_close(got, expected.numpy(), what="sampled softmax")


@pytest.fixture(scope="module")
def features():
    return _features()


def test_bilm_fit_lowers_perplexity(tmp_path, features):
    # One LSTMP layer per direction keeps compile time low (the residual
    # stack is tested in test_elmo_backbone.py); sampled softmax in training.
    backbone = ElmoBackbone(**{**TINY, "num_layers": 1})
    lm = ElmoBiLM(backbone, vocabulary_size=len(WORDS), num_sampled=8, seed=0)
    lm.compile(optimizer=keras.optimizers.Adam(0.02))
    before = lm.evaluate(features, verbose=0, return_dict=True)
    history = lm.fit(features, batch_size=8, epochs=6, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    after = lm.evaluate(features, verbose=0, return_dict=True)
    for direction in ("forward", "backward"):
        ppl0, ppl1 = before[f"{direction}_perplexity"], after[f"{direction}_perplexity"]
        assert ppl0 > 9.0 and ppl1 < 0.8 * ppl0, (direction, ppl0, ppl1)
    # Evaluation uses the full softmax: NLL equals the log-softmax of the logits.
    nll = lm.predict(features, verbose=0)
    logits, _ = lm.lm_logits(features["char_ids"][:4])
    logits = to_numpy(logits)
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    want = -np.take_along_axis(log_probs, features["next_token_ids"][:4, :, None], -1)[..., 0]
    np.testing.assert_allclose(nll["forward"][:4], want, atol=1e-4)
    # .keras round trip.
    path = os.path.join(tmp_path, "bilm.keras")
    lm.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is ElmoBiLM and restored.softmax.num_sampled == 8
    assert_all_close(restored.predict(features, verbose=0), nll, atol=1e-5, what="reloaded ElmoBiLM")


def test_embedder(tmp_path, features):
    backbone = ElmoBackbone(**{**TINY, "num_layers": 1})
    frozen = ElmoEmbedder(backbone)
    char_ids = keras.Input((None, 10), dtype="int32")
    model = keras.Model(char_ids, frozen(char_ids))
    assert len(model.trainable_weights) == 2  # scalar weights and gamma
    out = to_numpy(model(features["char_ids"][:3]))
    stack = [to_numpy(x) for x in backbone({"char_ids": features["char_ids"][:3]})["encoder_outputs"]]
    np.testing.assert_allclose(out, np.mean(stack, axis=0), atol=1e-5)
    path = os.path.join(tmp_path, "embedder.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert_all_close(restored(features["char_ids"][:3]), out, atol=1e-5, what="reloaded embedder")
    tuned = ElmoEmbedder(ElmoBackbone(**TINY), trainable_backbone=True, layer_norm=True)
    tuned.build((None, None, 10))
    assert len(tuned.trainable_weights) == len(tuned.backbone.trainable_weights) + 2 > 2


@pytest.mark.tf_only
def test_pretraining_dataset(tmp_path):
    from keras_pretrain.data.words import build_word_vocabulary
    from keras_pretrain.data.words import elmo_pretraining_dataset

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat .\nthe dog sat on the mat , twice .\n\nnaïve cat !\n", encoding="utf-8")
    vocabulary = build_word_vocabulary(str(corpus), max_size=9)
    assert vocabulary == ["<pad>", "<S>", "</S>", "<UNK>", "the", ".", "cat", "sat", "!"]
    kwargs = dict(seq_length=6, batch_size=2, seed=3)
    dataset = elmo_pretraining_dataset(str(corpus), vocabulary, drop_remainder=False, **kwargs)
    batches = list(dataset)
    again = list(elmo_pretraining_dataset(str(corpus), vocabulary, drop_remainder=False, **kwargs))
    np.testing.assert_array_equal(batches[0]["token_ids"], again[0]["token_ids"])  # same seed, same order
    rows = {}
    for batch in batches:
        for k in range(batch["token_ids"].shape[0]):
            ids = batch["token_ids"][k].numpy()
            rows[tuple(ids)] = {name: batch[name][k].numpy() for name in batch}
    # 3 sentences, the 9-word one cut into 4 + 4 + 1 words: 5 examples.
    assert len(rows) == 5
    index = {w: i for i, w in enumerate(vocabulary)}
    expected = {
        ("the", "cat", "sat", "."),
        ("the", "dog", "sat", "on"),
        ("the", "mat", ",", "twice"),
        (".",),
        ("naïve", "cat", "!"),
    }
    for sentence in expected:
        ids = [1] + [index.get(w, 3) for w in sentence] + [2]
        ids = tuple(ids + [0] * (6 - len(ids)))
        row = rows[ids]
        np.testing.assert_array_equal(row["char_ids"], character_ids([list(sentence)], sequence_length=6)[0])
        next_ids, previous_ids = lm_targets(np.array([ids]))
        np.testing.assert_array_equal(row["next_token_ids"], next_ids[0])
        np.testing.assert_array_equal(row["previous_token_ids"], previous_ids[0])
