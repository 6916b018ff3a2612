import math

import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.data.dynamic import DynamicMasking

pytestmark = pytest.mark.tf_only

PAD, CLS, SEP, MASK = 0, 1, 2, 3
SPECIAL = [PAD, CLS, SEP, MASK]
VOCAB_SIZE = 1000


def _within(count, n, p, sigmas=4.5):
    return abs(count / n - p) <= sigmas * math.sqrt(p * (1 - p) / n)


def _batch(batch=64, length=128, seed=0):
    rs = np.random.RandomState(seed)
    ids = rs.randint(4, VOCAB_SIZE, size=(batch, length)).astype("int32")
    lengths = rs.randint(8, length + 1, size=batch)
    lengths[0] = length
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype("int32")
    ids[:, 0] = CLS
    ids[np.arange(batch), lengths - 1] = SEP
    ids[np.arange(batch), lengths // 2] = SEP
    ids = ids * mask
    return {
        "input_ids": ids,
        "input_mask": mask,
        "segment_ids": np.zeros_like(ids),
        "next_sentence_labels": rs.randint(0, 2, size=batch).astype("int32"),
    }


def test_selection_replacement_and_specials():
    masking = DynamicMasking(VOCAB_SIZE, MASK, SPECIAL, max_predictions=20)
    features = _batch()
    ids, mask = features["input_ids"], features["input_mask"]
    kinds = {"mask": 0, "random": 0, "keep": 0}
    per_position_first_row = np.zeros(128)
    draws = 60
    for step in range(draws):
        out = {k: np.asarray(v) for k, v in masking(features, tf.constant([step, 7])).items()}
        assert out["masked_lm_positions"].shape == (64, 20)
        assert out["masked_lm_weights"].dtype == np.float32
        np.testing.assert_array_equal(out["segment_ids"], features["segment_ids"])
        np.testing.assert_array_equal(out["next_sentence_labels"], features["next_sentence_labels"])
        lengths = mask.sum(1)
        expected = np.clip(np.round(lengths * 0.15), 1, 20)
        np.testing.assert_array_equal(out["masked_lm_weights"].sum(1), expected)
        for b in range(64):
            k = int(expected[b])
            pos = out["masked_lm_positions"][b, :k]
            assert np.all(np.diff(pos) > 0)
            assert not np.isin(ids[b, pos], SPECIAL).any()
            assert np.all(mask[b, pos] == 1)
            np.testing.assert_array_equal(out["masked_lm_ids"][b, :k], ids[b, pos])
            assert np.all(out["masked_lm_positions"][b, k:] == 0)
            changed = np.flatnonzero(out["input_ids"][b] != ids[b])
            assert set(changed) <= set(pos)
            new = out["input_ids"][b, pos]
            kinds["mask"] += int((new == MASK).sum())
            kinds["keep"] += int((new == ids[b, pos]).sum())
            random_new = new[(new != MASK) & (new != ids[b, pos])]
            kinds["random"] += len(random_new)
            assert not np.isin(random_new, SPECIAL).any()
        per_position_first_row[out["masked_lm_positions"][0, :19]] += 1
    n = sum(kinds.values())
    # a random token equal to the original counts as "keep": p = 0.1 + 0.1 / 996
    assert _within(kinds["mask"], n, 0.8) and _within(kinds["random"], n, 0.1 * (1 - 1 / 996))
    assert _within(kinds["keep"], n, 0.1 + 0.1 / 996)
    # Row 0: 128 tokens, 3 specials, 19 predictions: each other position has p = 19 / 125.
    candidates = [i for i in range(128) if ids[0, i] not in SPECIAL]
    assert all(_within(per_position_first_row[i], draws, 19 / 125, sigmas=5) for i in candidates)


def test_rate_of_selection_is_15_percent_over_many_tokens():
    masking = DynamicMasking(VOCAB_SIZE, MASK, SPECIAL, max_predictions=128)
    features = _batch(batch=256, length=64, seed=1)
    out = masking(features, tf.constant(3))
    chosen = float(np.asarray(out["masked_lm_weights"]).sum())
    total = float(features["input_mask"].sum())
    assert abs(chosen / total - 0.15) < 0.01  # rounding per sequence only


def test_dataset_new_mask_each_epoch_and_deterministic():
    masking = DynamicMasking(VOCAB_SIZE, MASK, SPECIAL, max_predictions=20)
    base = tf.data.Dataset.from_tensor_slices(_batch(batch=32)).batch(8)

    def epochs(dataset, n=2):
        return [[np.asarray(b["input_ids"]) for b in dataset] for _ in range(n)]

    one = epochs(masking.apply(base, seed=11))
    two = epochs(masking.apply(base, seed=11))
    other = epochs(masking.apply(base, seed=12), 1)
    for a, b in zip(one, two):
        for x, y in zip(a, b):
            np.testing.assert_array_equal(x, y)
    assert any((x != y).any() for x, y in zip(one[0], one[1]))  # new mask in epoch 2
    assert any((x != y).any() for x, y in zip(one[0], other[0]))


def test_unbatched_and_short_sequences():
    masking = DynamicMasking(VOCAB_SIZE, MASK, SPECIAL, max_predictions=20)
    ids = np.array([CLS, 10, 11, 12, SEP], "int32")
    out = masking({"input_ids": ids, "input_mask": np.ones(5, "int32")}, tf.constant(0))
    assert out["masked_lm_positions"].shape == (20,)
    assert float(np.asarray(out["masked_lm_weights"]).sum()) == 1.0
    assert int(np.asarray(out["masked_lm_positions"])[0]) in (1, 2, 3)
