"""Instances -> the original BERT/ALBERT pretraining features (padded id lists).

Feature names and types as in the original `create_pretraining_data.py`: `input_ids`, `input_mask`,
`segment_ids` (padded to `max_seq_length`), `masked_lm_positions`, `masked_lm_ids`, `masked_lm_weights`
(float, padded to `max_predictions_per_seq`) and `next_sentence_labels` (1 = random next, or swapped for
SOP). Padding is 0.
"""

import collections

from keras_pretrain.errors import ConfigError

INT_FEATURES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "next_sentence_labels",
)
FLOAT_FEATURES = ("masked_lm_weights",)
FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def _converter(vocabulary):
    """`tokens -> ids` (a list), raising `ConfigError` on a token outside the vocabulary."""
    if callable(vocabulary):
        return lambda tokens: [vocabulary(t) for t in tokens]
    if isinstance(vocabulary, dict):
        table = vocabulary
    else:
        table = {token: i for i, token in enumerate(vocabulary)}

    def convert(tokens):
        try:
            return list(map(table.__getitem__, tokens))
        except KeyError as e:
            raise ConfigError(f"Token {e.args[0]!r} is not in the vocabulary.") from None

    return convert


def instance_to_features(instance, vocabulary, max_seq_length, max_predictions_per_seq):
    """Convert one `TrainingInstance` to the original padded features.

    Args:
        instance: `TrainingInstance` (masked).
        vocabulary: dict token -> id, list of tokens (index = id) or a callable token -> id.
        max_seq_length: int, padded length of the sequence features.
        max_predictions_per_seq: int, padded length of the masked-LM features.

    Returns:
        An ordered dict feature name -> list (ints; floats for `masked_lm_weights`); `next_sentence_labels`
        is a list of one int, as in the original files.
    """
    convert = _converter(vocabulary)
    if len(instance.tokens) > max_seq_length:
        raise ConfigError(
            f"Instance of {len(instance.tokens)} tokens is longer than max_seq_length={max_seq_length}."
        )
    if len(instance.masked_lm_positions) > max_predictions_per_seq:
        raise ConfigError(
            f"Instance has {len(instance.masked_lm_positions)} masked positions, more than "
            f"max_predictions_per_seq={max_predictions_per_seq}."
        )
    seq_pad = [0] * (max_seq_length - len(instance.tokens))
    pred_pad = [0] * (max_predictions_per_seq - len(instance.masked_lm_positions))
    features = collections.OrderedDict()
    features["input_ids"] = convert(instance.tokens) + seq_pad
    features["input_mask"] = [1] * len(instance.tokens) + seq_pad
    features["segment_ids"] = list(instance.segment_ids) + seq_pad
    features["masked_lm_positions"] = list(instance.masked_lm_positions) + pred_pad
    features["masked_lm_ids"] = convert(instance.masked_lm_labels) + pred_pad
    features["masked_lm_weights"] = [1.0] * len(instance.masked_lm_positions) + [0.0] * len(pred_pad)
    features["next_sentence_labels"] = [1 if instance.is_random_next else 0]
    return features


def instances_to_arrays(instances, vocabulary, max_seq_length, max_predictions_per_seq):
    """Stack the features of many instances into numpy arrays (int32; float32 weights).

    `next_sentence_labels` has shape (N,). Returns a dict name -> array.
    """
    import numpy as np

    columns = {name: [] for name in FEATURE_NAMES}
    for instance in instances:
        features = instance_to_features(instance, vocabulary, max_seq_length, max_predictions_per_seq)
        for name, value in features.items():
            columns[name].append(value)
    arrays = {}
    for name, rows in columns.items():
        dtype = np.float32 if name in FLOAT_FEATURES else np.int32
        width = max_seq_length if name in ("input_ids", "input_mask", "segment_ids") else (
            1 if name == "next_sentence_labels" else max_predictions_per_seq
        )
        arrays[name] = np.asarray(rows, dtype=dtype).reshape(len(rows), width)
    arrays["next_sentence_labels"] = arrays["next_sentence_labels"][:, 0]
    return arrays
