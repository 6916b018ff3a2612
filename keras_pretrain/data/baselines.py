"""Reference points for a masked-LM accuracy: what guessing from token counts alone achieves."""

import collections

import numpy as np


def target_counts(dataset, max_batches=None):
    """How often each token id is a masked-LM target (`masked_lm_ids` with weight > 0).

    The unigram distribution of the maskable tokens, as the training data presents it.

    Args:
        dataset: a batched dataset of pretraining features (`masked_lm_ids`, `masked_lm_weights`).
        max_batches: optional int, read at most this many batches.
    """
    counts = collections.Counter()
    for k, batch in enumerate(dataset.as_numpy_iterator()):
        if max_batches is not None and k >= max_batches:
            break
        ids = np.asarray(batch["masked_lm_ids"])[np.asarray(batch["masked_lm_weights"]) > 0]
        counts.update(ids.tolist())
    return counts


def unigram_accuracy(dataset, token_id):
    """Accuracy of always predicting `token_id` at the masked positions of a batched feature dataset.

    Positions are weighted by `masked_lm_weights`, as the masked-LM accuracy of the pretrainers.
    """
    hits = total = 0.0
    for batch in dataset.as_numpy_iterator():
        weights = np.asarray(batch["masked_lm_weights"], "float64")
        hits += float((weights * (np.asarray(batch["masked_lm_ids"]) == token_id)).sum())
        total += float(weights.sum())
    return hits / total if total else float("nan")
