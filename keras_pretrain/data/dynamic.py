"""Dynamic masking (RoBERTa) inside the tf.data graph: a new mask every epoch, deterministic for a seed.

Works on whole batches with vectorized TensorFlow ops (no Python per example). The selection is the same
as the static core (`masking.MaskingStrategy`): exactly `min(max_predictions, max(1, round(length * rate)))`
positions per sequence (length = number of real tokens, specials included, as the original), drawn
uniformly without replacement among the non-special real tokens; each chosen position becomes [MASK]
(80%), a random non-special token (10%) or stays (10%).
"""

import tensorflow as tf

from keras_pretrain.errors import ConfigError


class DynamicMasking:
    """Token masking as a batched, stateless tf function.

    Args:
        vocabulary_size: int, ids are in [0, vocabulary_size).
        mask_token_id: int.
        special_token_ids: iterable of int never chosen and never drawn as random tokens (the mask, pad,
            [CLS], [SEP] ... ids).
        rate: float, fraction of the sequence length to predict.
        max_predictions: int, the padded length of the masked-LM features.
        mask_token_rate: float, chosen positions replaced with the mask token.
        random_token_rate: float, chosen positions replaced with a random token.

    Example:
    >>> masking = DynamicMasking(30522, mask_token_id=103, special_token_ids=[0, 101, 102, 103])
    >>> dataset = masking.apply(dataset.batch(32), seed=0)  # dicts with input_ids, input_mask ...
    """

    def __init__(
        self,
        vocabulary_size,
        mask_token_id,
        special_token_ids=(),
        rate=0.15,
        max_predictions=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
    ):
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ConfigError(
                "mask_token_rate and random_token_rate must be >= 0 and sum to at most 1, got "
                f"{mask_token_rate} and {random_token_rate}."
            )
        self.vocabulary_size = int(vocabulary_size)
        self.mask_token_id = int(mask_token_id)
        self.special_token_ids = sorted({int(i) for i in special_token_ids} | {self.mask_token_id})
        self.rate = float(rate)
        self.max_predictions = int(max_predictions)
        self.mask_token_rate = float(mask_token_rate)
        self.random_token_rate = float(random_token_rate)
        special = set(self.special_token_ids)
        table = [i in special for i in range(self.vocabulary_size)] + [True]
        self._special_table = tf.constant(table, tf.bool)
        self._random_ids = [i for i in range(self.vocabulary_size) if i not in special]
        if not self._random_ids:
            raise ConfigError("No non-special token id to draw random replacements from.")

    def __call__(self, features, seed):
        """Mask a batch.

        Args:
            features: dict with `input_ids` and `input_mask` (B, T) (or unbatched (T,)); other entries
                (`segment_ids`, `next_sentence_labels` ...) pass through.
            seed: int tensor, shape () or (2,): the stateless seed of this batch.

        Returns:
            The feature dict with masked `input_ids` and `masked_lm_positions`, `masked_lm_ids` (int32) and
            `masked_lm_weights` (float32), each (B, max_predictions).
        """
        ids = tf.convert_to_tensor(features["input_ids"])
        unbatched = ids.shape.rank == 1
        if unbatched:
            features = {k: tf.expand_dims(v, 0) for k, v in features.items()}
            ids = features["input_ids"]
        out = dict(features)
        out.update(self._mask(tf.cast(ids, tf.int32), features["input_mask"], seed))
        if unbatched:
            out = {k: tf.squeeze(v, 0) for k, v in out.items()}
        return out

    def _mask(self, ids, input_mask, seed):
        seed = tf.cast(tf.reshape(seed, [-1]), tf.int64)
        seed = tf.concat([seed, tf.zeros([2], tf.int64)], 0)[:2]
        seeds = tf.random.experimental.stateless_split(seed, num=3)
        batch, length = tf.shape(ids)[0], tf.shape(ids)[1]
        k = self.max_predictions
        real = tf.cast(input_mask, tf.bool)
        # Ids outside the vocabulary count as special (never chosen).
        special = tf.gather(self._special_table, tf.clip_by_value(ids, 0, self.vocabulary_size))
        candidate = real & ~special
        # Draw num_to_predict candidates uniformly without replacement: top-k of random scores.
        num_tokens = tf.reduce_sum(tf.cast(real, tf.float64), axis=1)
        num_to_predict = tf.cast(tf.round(num_tokens * self.rate), tf.int32)
        num_to_predict = tf.clip_by_value(num_to_predict, 1, k)
        scores = tf.random.stateless_uniform([batch, length], seeds[0])
        scores = tf.where(candidate, scores, -1.0)
        # k columns of padding make top_k valid for sequences shorter than max_predictions.
        scores = tf.pad(scores, [[0, 0], [0, k]], constant_values=-1.0)
        top_scores, top_positions = tf.math.top_k(scores, k=k, sorted=True)
        keep = (tf.range(k)[None, :] < num_to_predict[:, None]) & (top_scores >= 0.0)
        positions = tf.sort(tf.where(keep, top_positions, length), axis=1)  # ascending, unused last
        weights = positions < length
        positions = tf.where(weights, positions, 0)
        labels = tf.where(weights, tf.gather(ids, positions, batch_dims=1), 0)
        # Replacement, decided per chosen position.
        draw = tf.random.stateless_uniform([batch, k], seeds[1])
        random_ids = tf.gather(
            tf.constant(self._random_ids, tf.int32),
            tf.random.stateless_uniform(
                [batch, k], seeds[2], minval=0, maxval=len(self._random_ids), dtype=tf.int32
            ),
        )
        replacement = tf.where(
            draw < self.mask_token_rate,
            self.mask_token_id,
            tf.where(draw < self.mask_token_rate + self.random_token_rate, random_ids, labels),
        )
        # Scatter the replacements of the used slots (their positions are distinct).
        rows = tf.broadcast_to(tf.range(batch)[:, None], [batch, k])
        indices = tf.boolean_mask(tf.stack([rows, positions], axis=-1), weights)
        masked_ids = tf.tensor_scatter_nd_update(ids, indices, tf.boolean_mask(replacement, weights))
        return {
            "input_ids": masked_ids,
            "masked_lm_positions": positions,
            "masked_lm_ids": labels,
            "masked_lm_weights": tf.cast(weights, tf.float32),
        }

    def apply(self, dataset, seed=0, num_parallel_calls=tf.data.AUTOTUNE):
        """Mask every element of a dataset, with a new mask each time the dataset is iterated (epoch).

        The per-element seeds come from `tf.data.Dataset.random(seed, rerandomize_each_iteration=True)`:
        the same `seed` gives the same masks, epoch after epoch, in every run.

        Args:
            dataset: a `tf.data.Dataset` of feature dicts (batch it first: masking is vectorized).
            seed: int.
            num_parallel_calls: passed to `map` (the output order stays deterministic).

        Returns:
            A dataset of the masked feature dicts.
        """
        seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
        zipped = tf.data.Dataset.zip((dataset, seeds))
        return zipped.map(
            lambda features, s: self(features, s),
            num_parallel_calls=num_parallel_calls,
            deterministic=True,
        )
