"""Permutation LM data: visibility, rates (vs. transformers' collator), determinism, streams."""

import random

import numpy as np
import pytest

from keras_pretrain.data.permutation import PermutationLanguageModeling
from keras_pretrain.data.permutation import plm_stream_dataset
from keras_pretrain.data.permutation import stream_windows
from keras_pretrain.data.permutation import xlnet_pretraining_dataset

pytestmark = pytest.mark.tf_only  # numpy / tf.data code: backend independent


def test_each_prediction_sees_only_earlier_tokens_of_its_order():
    t = 24
    sampler = PermutationLanguageModeling(t, num_predict=8, plm_probability=0.3, max_span_length=3, perm_size=12,
                                          special_token_ids=[3])
    rng = np.random.default_rng(0)
    ids = rng.integers(4, 50, (64, t))
    ids[:, -1] = 3  # a special token, never predicted
    pad = np.ones((64, t), "int32")
    pad[::2, -4:] = 0
    batch = sampler(ids, pad, rng=rng, details=True)
    checked = 0
    for b in range(64):
        order, target, perm = batch["factorization_order"][b], batch["is_target"][b], batch["perm_mask"][b]
        real = pad[b].astype(bool) & (ids[b] != 3)
        assert not target[~real].any()  # no padding or special token is predicted
        for i in range(t):
            visible = perm[i] == 0
            if target[i]:
                # Non-targets always; targets exactly when earlier in the order; never itself.
                expected = ~target | (order < order[i])
                assert np.array_equal(visible, expected)
                assert not visible[i]
                checked += 1
            elif real[i]:
                assert not visible[target].any()  # ordinary tokens never see a target
        # target_mapping / ids / weights agree with the chosen positions.
        positions = np.flatnonzero(target)
        k = len(positions)
        assert k <= 8 and batch["target_weights"][b].sum() == k
        assert np.array_equal(np.argmax(batch["target_mapping"][b][:k], axis=1), positions)
        assert np.array_equal(batch["target_ids"][b][:k], ids[b][positions])
        assert batch["target_mapping"][b][k:].sum() == 0
        # perm_size 12: the first block precedes the second in the order.
        assert np.all(sampler.sample_order(np.random.default_rng(b))[:12] < 12)
    assert checked > 100


class _StubTokenizer:
    """What transformers' collator needs from a tokenizer: mask / pad ids, special-token mask."""

    mask_token = "<mask>"
    mask_token_id = 6
    pad_token = "<pad>"
    pad_token_id = 5

    def get_special_tokens_mask(self, ids, already_has_special_tokens=True):
        return [0] * len(ids)


def test_predicted_fraction_matches_transformers_collator():
    transformers = pytest.importorskip("transformers")
    t, n = 64, 1500
    collator = transformers.DataCollatorForPermutationLanguageModeling(
        _StubTokenizer(), plm_probability=1 / 6, max_span_length=5, return_tensors="np")
    random.seed(0)
    np.random.seed(0)
    inputs = np.random.default_rng(1).integers(10, 100, (n, t))
    ref = (collator.numpy_mask_tokens(inputs.copy())[3] != -100).mean(axis=1)
    sampler = PermutationLanguageModeling(t, plm_probability=1 / 6, max_span_length=5)
    ours = sampler(inputs, rng=np.random.default_rng(2))["target_weights"].sum(axis=1) / t
    # Standard error of the difference of two means (per-sequence rates are binomial-like,
    # spans make them over-dispersed, so use the observed variances).
    se = np.sqrt(ref.var() / n + ours.var() / n)
    assert abs(ours.mean() - ref.mean()) < 4 * se, (ours.mean(), ref.mean(), se)
    # About 1/K = 1/6 of the tokens, within 4 standard errors (less the span cut at the end).
    assert abs(ours.mean() - 1 / 6) < 4 * np.sqrt(ours.var() / n) + 0.02


def test_span_lengths_are_uniform():
    sampler = PermutationLanguageModeling(6000, plm_probability=1 / 6, max_span_length=5)
    rng = np.random.default_rng(3)
    lengths = []
    for _ in range(5):
        masked = sampler.sample_spans(6000, rng)
        # Runs of predicted tokens = spans, except when two spans touch their shared block edge.
        edges = np.diff(np.concatenate([[0], masked.astype(int), [0]]))
        lengths += list(np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1))
    lengths = np.asarray(lengths)
    n = len(lengths)
    for k in range(1, 6):
        p = np.mean(lengths == k)
        # Merged runs are rare (both spans must touch the shared block edge): p(k) ~ 1/5.
        assert abs(p - 0.2) < 4 * np.sqrt(0.2 * 0.8 / n) + 0.02, (k, p)


def test_original_sampler_predicts_exactly_num_predict():
    sampler = PermutationLanguageModeling(64, num_predict=11, span_sampler="original", mask_alpha=6, mask_beta=1)
    batch = sampler(np.arange(10, 74)[None].repeat(50, 0), rng=np.random.default_rng(0))
    assert np.all(batch["target_weights"].sum(axis=1) == 11)


def test_same_seed_same_data_and_stream_layout():
    stream = np.arange(1000) % 97 + 3
    sampler = PermutationLanguageModeling(16, num_predict=4)

    def arrays(seed):
        return [{k: v.numpy() for k, v in b.items()} for b in plm_stream_dataset(stream, sampler, 4, seed=seed)]

    a, b, c = arrays(7), arrays(7), arrays(8)
    assert len(a) == len(b) and all(np.array_equal(x[k], y[k]) for x, y in zip(a, b) for k in x)
    assert any(not np.array_equal(x["perm_mask"], y["perm_mask"]) for x, y in zip(a, c))
    # Row b of consecutive batches continues the same sub-stream.
    windows = stream_windows(stream, 4, 16, step=8)
    part = len(stream) // 4
    assert np.array_equal(windows[1, 2], stream[2 * part + 8: 2 * part + 24])
    assert np.array_equal(a[1]["token_ids"][3], stream[3 * part + 16: 3 * part + 32])


def test_pretraining_dataset_from_corpus(tmp_path):
    import keras_hub

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\nthe dog sat too .\n\na bird flew over the mat .\n\n" * 20)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "dog", "too",
             "a", "bird", "flew", "over"]
    tokenizer = keras_hub.tokenizers.WordPieceTokenizer(vocabulary=vocab)
    dataset, info = xlnet_pretraining_dataset([str(corpus)], tokenizer, seq_length=12, batch_size=2, num_predict=3,
                                              seed=0)
    batches = list(dataset)
    assert batches[0]["token_ids"].shape == (2, 12) and batches[0]["target_mapping"].shape == (2, 3, 12)
    assert len(batches) == info["num_batches"] and info["vocabulary_size"] == len(vocab)
    # Documents are separated by [SEP], which is never a target.
    ids = np.concatenate([b["token_ids"].numpy().ravel() for b in batches])
    targets = np.concatenate([b["target_ids"].numpy()[b["target_weights"].numpy() > 0] for b in batches])
    assert 3 in ids and 3 not in targets and len(targets) > 0
