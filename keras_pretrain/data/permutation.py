"""Permutation language modeling data (XLNet): factorization orders, span targets, tf.data streams.

For each sequence the sampler
1. chooses the positions to predict as spans, either the way `transformers`'
   `DataCollatorForPermutationLanguageModeling` does (`span_sampler="hf"`:
   span length uniform in `1..max_span_length`, a context of
   `int(span / plm_probability)` tokens reserved around it, the span placed
   uniformly inside; about `plm_probability` = 1/K of the tokens) or the way the
   original XLNet data script does (`span_sampler="original"`: n-gram length
   `n` with p(n) proportional to 1/n for n <= `max_span_length`, a context of
   `n * mask_alpha // mask_beta` tokens split at random left / right, topped up
   with single tokens to exactly `num_predict`);
2. samples a factorization order (`perm_size` blocks of positions share one
   random permutation, as the reference `_local_perm`; `perm_size = T / 2`
   is what `transformers`' collator does, `perm_size = reuse_len` the original);
3. builds `perm_mask[i, j] = 1` (i may not attend to j) exactly as the
   collator: j is a target and `order[i] <= order[j]`, where every non-target,
   non-special token has order -1 (seen by everyone, sees no target);
4. gathers at most `num_predict` targets into `target_mapping` `(P, T)`,
   `target_ids` and `target_weights` (0 for unused slots).
Unlike the collator the input tokens are left unchanged (the original XLNet:
the query stream never sees a target's own token, so no `<mask>` is needed);
pass `mask_token_id` to replace them as the collator does.

Randomness comes from one `numpy.random.Generator`; the same seed gives the
same data on every backend.
"""

import numpy as np

from keras_pretrain.errors import ConfigError

PLM_FEATURES = ("token_ids", "segment_ids", "padding_mask", "perm_mask", "target_mapping", "target_ids",
                "target_weights")


class PermutationLanguageModeling:
    """Samples XLNet permutation-LM targets for batches of token ids.

    Args:
        seq_length: int, T.
        num_predict: int, P, the target slots per sequence (extra sampled
            targets are dropped, last positions first; fewer leave slots with
            weight 0). None: T.
        plm_probability: float, 1/K, for `span_sampler="hf"`.
        max_span_length: int, longest span (`max_gram` of the original).
        span_sampler: "hf" or "original".
        mask_alpha, mask_beta: int, context ratio of the original sampler
            (`n * mask_alpha // mask_beta` context tokens per n-gram).
        perm_size: int or None, size of the blocks sharing one permutation
            (must divide T); None: one permutation of all T positions.
        special_token_ids: ids never predicted (`<cls>`, `<sep>`, ...): they
            keep their place in the factorization order, as in the collator.
        mask_token_id: int or None, replace target tokens in the input by it.
    """

    def __init__(
        self,
        seq_length,
        num_predict=None,
        plm_probability=1 / 6,
        max_span_length=5,
        span_sampler="hf",
        mask_alpha=6,
        mask_beta=1,
        perm_size=None,
        special_token_ids=(),
        mask_token_id=None,
    ):
        if span_sampler not in ("hf", "original"):
            raise ConfigError(f"span_sampler must be 'hf' or 'original', got {span_sampler!r}.")
        perm_size = perm_size or seq_length
        if seq_length % perm_size:
            raise ConfigError(f"perm_size {perm_size} must divide seq_length {seq_length}.")
        if max_span_length < 1 or not 0 < plm_probability <= 1:
            raise ConfigError("max_span_length must be >= 1 and plm_probability in (0, 1].")
        self.seq_length = seq_length
        self.num_predict = num_predict or seq_length
        self.plm_probability = plm_probability
        self.max_span_length = max_span_length
        self.span_sampler = span_sampler
        self.mask_alpha = mask_alpha
        self.mask_beta = mask_beta
        self.perm_size = perm_size
        self.special_token_ids = np.asarray(sorted(set(special_token_ids)), dtype=np.int64)
        self.mask_token_id = mask_token_id

    # --- 1. span targets ---------------------------------------------------

    def sample_spans(self, length, rng):
        """Boolean `(length,)`: the sampled span positions (before special tokens are removed)."""
        masked = np.zeros(length, dtype=bool)
        if self.span_sampler == "hf":
            cur = 0
            while cur < length:
                span = int(rng.integers(1, self.max_span_length + 1))
                context = int(span / self.plm_probability)
                start = cur + int(rng.integers(0, context - span + 1))
                masked[start:start + span] = True
                cur += context
            return masked
        ngrams = np.arange(1, self.max_span_length + 1)
        pvals = 1.0 / ngrams
        pvals = pvals / pvals.sum()
        goal = min(self.num_predict, length)
        count = 0
        cur = 0
        while cur < length and count < goal:
            n = int(rng.choice(ngrams, p=pvals))
            n = min(n, goal - count)
            context = (n * self.mask_alpha) // self.mask_beta
            left = int(rng.integers(context)) if context > 0 else 0
            beg = cur + left
            end = beg + n
            if end >= length:
                break
            masked[beg:end] = True
            count += n
            cur = end + (context - left)
        while count < goal:  # top up with single tokens, as the original
            i = int(rng.integers(length))
            if not masked[i]:
                masked[i] = True
                count += 1
        return masked

    # --- 2. factorization order --------------------------------------------

    def sample_order(self, rng):
        """`(T,)` position -> rank in the factorization order (the reference `_local_perm`)."""
        shuffled = rng.permutation(self.perm_size)
        blocks = self.seq_length // self.perm_size
        return (shuffled[None, :] + self.perm_size * np.arange(blocks)[:, None]).reshape(-1)

    # --- 3./4. one sequence ------------------------------------------------

    def sample(self, token_ids, padding_mask, rng):
        """PLM features of one sequence (numpy), plus its `factorization_order`.

        Returns a dict: `token_ids`, `perm_mask` (T, T) float32, `target_mapping`
        (P, T) float32, `target_ids` (P,) int32, `target_weights` (P,) float32,
        `is_target` (T,) bool, `factorization_order` (T,) int (-1 for
        non-target ordinary tokens, which everyone sees).
        """
        token_ids = np.asarray(token_ids)
        length = token_ids.shape[0]
        if length != self.seq_length:
            raise ConfigError(f"Expected sequences of {self.seq_length} tokens, got {length}.")
        pad = ~np.asarray(padding_mask, dtype=bool)
        special = np.isin(token_ids, self.special_token_ids)
        non_func = ~(pad | special)
        is_target = self.sample_spans(length, rng) & non_func
        positions = np.flatnonzero(is_target)
        if len(positions) > self.num_predict:
            is_target[positions[self.num_predict:]] = False
            positions = positions[: self.num_predict]
        order = self.sample_order(rng).astype(np.int64)
        order[~is_target & non_func] = -1
        perm_mask = ((order[:, None] <= order[None, :]) & is_target[None, :]).astype(np.float32)
        target_mapping = np.zeros((self.num_predict, length), np.float32)
        target_mapping[np.arange(len(positions)), positions] = 1.0
        target_ids = np.zeros(self.num_predict, np.int32)
        target_ids[: len(positions)] = token_ids[positions]
        weights = np.zeros(self.num_predict, np.float32)
        weights[: len(positions)] = 1.0
        inputs = token_ids.astype(np.int32).copy()
        if self.mask_token_id is not None:
            inputs[is_target] = self.mask_token_id
        return {
            "token_ids": inputs,
            "perm_mask": perm_mask,
            "target_mapping": target_mapping,
            "target_ids": target_ids,
            "target_weights": weights,
            "is_target": is_target,
            "factorization_order": order,
        }

    def __call__(self, token_ids, padding_mask=None, segment_ids=None, rng=None, details=False):
        """PLM features of a batch `(B, T)` (numpy), the `PLM_FEATURES` dict.

        With `details=True` also `is_target` and `factorization_order` (see `sample`).
        """
        token_ids = np.asarray(token_ids)
        rng = rng if rng is not None else np.random.default_rng()
        if padding_mask is None:
            padding_mask = np.ones_like(token_ids, dtype=np.int32)
        if segment_ids is None:
            segment_ids = np.zeros_like(token_ids, dtype=np.int32)
        rows = [self.sample(t, p, rng) for t, p in zip(token_ids, padding_mask)]
        names = [n for n in rows[0] if n in PLM_FEATURES or details]
        batch = {name: np.stack([r[name] for r in rows]) for name in names}
        batch["segment_ids"] = np.asarray(segment_ids, np.int32)
        batch["padding_mask"] = np.asarray(padding_mask, np.int32)
        return batch


def stream_windows(stream, batch_size, seq_length, step=None):
    """Batches of windows over `batch_size` parallel sub-streams (Transformer-XL `batchify`).

    The stream is cut into `batch_size` equal contiguous parts; batch `s` holds,
    in row `b`, tokens `[s * step, s * step + seq_length)` of part `b`, so row
    `b` of consecutive batches continues the same text and the memories of
    one batch precede the next (with `step = reuse_len`, the cached states
    are exactly the `reuse_len` tokens before the next window).

    Returns: int32 array `(num_batches, batch_size, seq_length)`.
    """
    step = step or seq_length
    stream = np.asarray(stream, dtype=np.int32)
    part = len(stream) // batch_size
    if part < seq_length:
        raise ConfigError(
            f"The token stream ({len(stream)} tokens) is too short for {batch_size} rows of {seq_length} tokens."
        )
    parts = stream[: part * batch_size].reshape(batch_size, part)
    count = (part - seq_length) // step + 1
    return np.stack([parts[:, s * step: s * step + seq_length] for s in range(count)])


def plm_stream_dataset(stream, sampler, batch_size, reuse_len=None, seed=0):
    """A `tf.data.Dataset` of PLM batches over a token stream, for segment recurrence.

    Args:
        stream: 1-D token ids (documents joined, e.g. with `<eod>` between).
        sampler: a `PermutationLanguageModeling` (its `seq_length` is the window).
        batch_size: int, rows (parallel sub-streams); every batch is full.
        reuse_len: int or None, window step (the backbone's `reuse_len`).
        seed: int. Epoch `e` draws from `numpy.random.default_rng([seed, e])`:
            new targets and orders each epoch, the same on every run. Each
            iteration over the dataset is one epoch (use `.repeat()` for more).

    Returns: a dataset of `PLM_FEATURES` dicts, batches in stream order (do
    not shuffle: row b of consecutive batches continues the same text).
    """
    import tensorflow as tf

    windows = stream_windows(stream, batch_size, sampler.seq_length, reuse_len)
    epoch = [0]

    def generate():
        rng = np.random.default_rng([seed, epoch[0]])
        epoch[0] += 1
        for window in windows:
            yield sampler(window, rng=rng)

    t, p = sampler.seq_length, sampler.num_predict
    spec = {
        "token_ids": tf.TensorSpec((batch_size, t), tf.int32),
        "segment_ids": tf.TensorSpec((batch_size, t), tf.int32),
        "padding_mask": tf.TensorSpec((batch_size, t), tf.int32),
        "perm_mask": tf.TensorSpec((batch_size, t, t), tf.float32),
        "target_mapping": tf.TensorSpec((batch_size, p, t), tf.float32),
        "target_ids": tf.TensorSpec((batch_size, p), tf.int32),
        "target_weights": tf.TensorSpec((batch_size, p), tf.float32),
    }
    return tf.data.Dataset.from_generator(generate, output_signature=spec)


def xlnet_pretraining_dataset(
    paths,
    tokenizer,
    seq_length=128,
    batch_size=16,
    num_predict=None,
    reuse_len=None,
    perm_size=None,
    plm_probability=1 / 6,
    max_span_length=5,
    span_sampler="hf",
    mask_alpha=6,
    mask_beta=1,
    separator=None,
    seed=0,
    sentence_split=False,
    strict=False,
    stats=None,
):
    """Corpus files -> a PLM `tf.data.Dataset` for `XLNetPretrainer.fit` (the `recipes.pretrain` entry).

    Documents are read (`read_documents`), tokenized, joined into one stream
    with `separator` (default: `<eod>`, else `[SEP]`, else none, whichever the
    vocabulary has) after each document, and cut into windows by
    `plm_stream_dataset`.

    Args:
        paths: corpus files, folders or globs.
        tokenizer: a keras-hub tokenizer with `get_vocabulary()` (e.g.
            `XLNetTokenizer`, or the recipe's WordPiece `BertTokenizer`).
        seq_length, batch_size, num_predict, reuse_len, perm_size,
        plm_probability, max_span_length, span_sampler, mask_alpha, mask_beta:
            see `PermutationLanguageModeling` and `plm_stream_dataset`
            (`num_predict` None: `ceil(seq_length * plm_probability * 1.5)`).
        separator: str or None, token appended after each document.
        seed: int.
        sentence_split, strict, stats: see `read_documents`.

    Returns: `(dataset, info)` with info a dict: `num_batches` per epoch,
    `num_tokens` in the stream, `vocabulary_size`.
    """
    from keras_pretrain.data.corpus import CorpusStats
    from keras_pretrain.data.corpus import read_documents
    from keras_pretrain.data.pipeline import tokenize_documents
    from keras_pretrain.data.pipeline import tokenizer_vocabulary

    vocabulary = tokenizer_vocabulary(tokenizer)
    if vocabulary is None:
        raise ConfigError("xlnet_pretraining_dataset needs a keras-hub tokenizer with get_vocabulary().")
    token_to_id = {t: i for i, t in enumerate(vocabulary)}
    if separator is None:
        separator = next((t for t in ("<eod>", "[SEP]") if t in token_to_id), None)
    stats = stats if stats is not None else CorpusStats()
    documents = tokenize_documents(
        read_documents(paths, strict=strict, sentence_split=sentence_split, stats=stats), tokenizer
    )
    stream = []
    for document in documents:
        for sentence in document:
            stream.extend(token_to_id[t] for t in sentence)
        if separator is not None:
            stream.append(token_to_id[separator])
    if not stream:
        raise ConfigError(f"No tokens in {paths!r} ({stats}).")
    special = [token_to_id[t] for t in ("<cls>", "<sep>", "<pad>", "[CLS]", "[SEP]", "[PAD]") if t in token_to_id]
    if num_predict is None:
        num_predict = int(np.ceil(seq_length * plm_probability * 1.5))
    sampler = PermutationLanguageModeling(
        seq_length,
        num_predict=num_predict,
        plm_probability=plm_probability,
        max_span_length=max_span_length,
        span_sampler=span_sampler,
        mask_alpha=mask_alpha,
        mask_beta=mask_beta,
        perm_size=perm_size,
        special_token_ids=special,
    )
    dataset = plm_stream_dataset(stream, sampler, batch_size, reuse_len=reuse_len, seed=seed)
    info = {
        "num_batches": len(stream_windows(stream, batch_size, seq_length, reuse_len)),
        "num_tokens": len(stream),
        "vocabulary_size": len(vocabulary),
    }
    return dataset, info
