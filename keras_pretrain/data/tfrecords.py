"""TFRecord files with the original BERT/ALBERT pretraining features: writer (static masking) and reader.

Files written here load in the original Google scripts and theirs load here (extra features such as
ALBERT's `token_boundary` are ignored by the reader).
"""

import os
import re
import struct

from keras_pretrain.data.features import FEATURE_NAMES, FLOAT_FEATURES, instance_to_features
from keras_pretrain.errors import ConfigError


def shard_paths(pattern, num_shards):
    """Output file names for `num_shards` shards.

    Args:
        pattern: str. With `{shard}` / `{num_shards}` fields it is formatted
            (e.g. "out/train-{shard:05d}-of-{num_shards:05d}.tfrecord"); otherwise, for more than one shard,
            "-{shard:05d}-of-{num_shards:05d}" is appended.
        num_shards: int.

    Returns:
        A list of `num_shards` paths.
    """
    if "{" in pattern:
        return [pattern.format(shard=i, num_shards=num_shards) for i in range(num_shards)]
    if num_shards == 1:
        return [pattern]
    return [f"{pattern}-{i:05d}-of-{num_shards:05d}" for i in range(num_shards)]


def shard_glob(pattern):
    """A glob matching the files of `shard_paths(pattern, n)` for any `n` (fields become `*`)."""
    if "{" in pattern:
        return re.sub(r"\{(shard|num_shards)(:[^}]*)?\}", "*", pattern)
    return f"{pattern}-*-of-*"


def features_to_example(features):
    """A `tf.train.Example` of a feature dict (int64 lists; float list for `masked_lm_weights`)."""
    import tensorflow as tf

    feature = {}
    for name, values in features.items():
        if name in FLOAT_FEATURES:
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
    return tf.train.Example(features=tf.train.Features(feature=feature))


def _varint(n):
    n &= (1 << 64) - 1  # int64 as protobuf writes it (two's complement for negatives)
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_VARINTS = [_varint(i) for i in range(1 << 17)]  # every id of a BERT-sized vocabulary


def _varints(values):
    if values and (min(values) < 0 or max(values) >= len(_VARINTS)):
        return b"".join(map(_varint, values))
    return b"".join(map(_VARINTS.__getitem__, values))


def _small_varints(values):
    # Segment ids (0, 1, ...): each below 128 is its own one-byte varint.
    return bytes(values) if not values or max(values) < 128 else _varints(values)


def _field(tag, payload):
    n = len(payload)
    return tag + (_VARINTS[n] if n < len(_VARINTS) else _varint(n)) + payload


def _entry(name, feature):
    # One `map<string, Feature>` entry of `Features`.
    return _field(b"\x0a", _field(b"\x0a", name.encode()) + _field(b"\x12", feature))


def _int_feature(packed):
    return _field(b"\x1a", _field(b"\x0a", packed))


def _float_feature(packed):
    return _field(b"\x12", _field(b"\x0a", packed))


def serialize_features(features):
    """The bytes of `features_to_example(features).SerializeToString()`, written directly (several times
    faster): an Example of packed int64 lists, and a packed float list for `masked_lm_weights`."""
    entries = []
    for name, values in features.items():
        values = list(values)
        if name in FLOAT_FEATURES:
            entries.append(_entry(name, _float_feature(struct.pack(f"<{len(values)}f", *values))))
        else:
            entries.append(_entry(name, _int_feature(_varints(values))))
    return _field(b"\x0a", b"".join(entries))


def _int_entry(key, packed):
    # `_entry(name, _int_feature(packed))` with `key` = the name's field, precomputed.
    p = len(packed)
    inner = b"\x0a" + _VARINTS[p] + packed
    feature = b"\x1a" + _VARINTS[len(inner)] + inner
    body = key + b"\x12" + _VARINTS[len(feature)] + feature
    return b"\x0a" + _VARINTS[len(body)] + body


class InstanceSerializer:
    """`TrainingInstance` -> serialized Example of the original features, without building the feature
    lists (the writer's hot loop): equal to `serialize_features(instance_to_features(...))`.

    Args:
        vocabulary: dict token -> id, or list of tokens (index = id).
        max_seq_length: int.
        max_predictions_per_seq: int.
    """

    def __init__(self, vocabulary, max_seq_length, max_predictions_per_seq):
        table = vocabulary if isinstance(vocabulary, dict) else {t: i for i, t in enumerate(vocabulary)}
        if table and (min(table.values()) < 0 or max(table.values()) >= len(_VARINTS)):
            raise ConfigError(f"Token ids must be in [0, {len(_VARINTS)}).")
        self.max_seq_length = max_seq_length
        self.max_predictions = max_predictions_per_seq
        self._token_bytes = {t: _VARINTS[i] for t, i in table.items()}
        self._keys = {name: _field(b"\x0a", name.encode()) for name in FEATURE_NAMES}
        # Entries that only depend on a length or a label, built once.
        self._masks = [_int_entry(self._keys["input_mask"], b"\x01" * n + b"\x00" * (max_seq_length - n))
                       for n in range(max_seq_length + 1)]
        self._weights = [_entry("masked_lm_weights", _float_feature(
            struct.pack(f"<{max_predictions_per_seq}f", *([1.0] * k + [0.0] * (max_predictions_per_seq - k)))))
            for k in range(max_predictions_per_seq + 1)]
        self._labels = [_int_entry(self._keys["next_sentence_labels"], bytes([label])) for label in (0, 1)]

    def _ids(self, tokens):
        try:
            return b"".join(map(self._token_bytes.__getitem__, tokens))
        except KeyError as e:
            raise ConfigError(f"Token {e.args[0]!r} is not in the vocabulary.") from None

    def __call__(self, instance):
        n, k = len(instance.tokens), len(instance.masked_lm_positions)
        if n > self.max_seq_length:
            raise ConfigError(f"Instance of {n} tokens is longer than max_seq_length={self.max_seq_length}.")
        if k > self.max_predictions:
            raise ConfigError(f"Instance has {k} masked positions, more than "
                              f"max_predictions_per_seq={self.max_predictions}.")
        keys = self._keys
        seq_pad, pred_pad = b"\x00" * (self.max_seq_length - n), b"\x00" * (self.max_predictions - k)
        body = b"".join((
            _int_entry(keys["input_ids"], self._ids(instance.tokens) + seq_pad),
            self._masks[n],
            _int_entry(keys["segment_ids"], _small_varints(instance.segment_ids) + seq_pad),
            _int_entry(keys["masked_lm_positions"], _varints(instance.masked_lm_positions) + pred_pad),
            _int_entry(keys["masked_lm_ids"], self._ids(instance.masked_lm_labels) + pred_pad),
            self._weights[k],
            self._labels[1 if instance.is_random_next else 0],
        ))
        return b"\x0a" + (_VARINTS[len(body)] if len(body) < len(_VARINTS) else _varint(len(body))) + body


def write_instances(instances, output_files, vocabulary, max_seq_length, max_predictions_per_seq):
    """Write instances round-robin over the output files (as the original script).

    Args:
        instances: iterable of masked `TrainingInstance`s (for static masking, `dupe_factor` differently
            masked copies are simply more instances).
        output_files: str or list of str; see `shard_paths` to build a list.
        vocabulary: dict token -> id, list of tokens, or callable token -> id.
        max_seq_length: int.
        max_predictions_per_seq: int.

    Returns:
        The number of examples written.
    """
    import tensorflow as tf

    if isinstance(output_files, str):
        output_files = [output_files]
    for path in output_files:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        if parent:
            tf.io.gfile.makedirs(parent)
    if callable(vocabulary):
        def serialize(instance):
            return serialize_features(
                instance_to_features(instance, vocabulary, max_seq_length, max_predictions_per_seq))
    else:
        serialize = InstanceSerializer(vocabulary, max_seq_length, max_predictions_per_seq)
    writers = [tf.io.TFRecordWriter(path) for path in output_files]
    count = 0
    try:
        for instance in instances:
            writers[count % len(writers)].write(serialize(instance))
            count += 1
    finally:
        for writer in writers:
            writer.close()
    return count


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of the original input function."""
    import tensorflow as tf

    spec = {}
    for name in FEATURE_NAMES:
        if name in ("input_ids", "input_mask", "segment_ids"):
            length = max_seq_length
        elif name == "next_sentence_labels":
            length = 1
        else:
            length = max_predictions_per_seq
        dtype = tf.float32 if name in FLOAT_FEATURES else tf.int64
        spec[name] = tf.io.FixedLenFeature([length], dtype)
    return spec


def parse_examples(serialized, max_seq_length, max_predictions_per_seq):
    """Parse a batch (or one) serialized example(s) to int32 tensors (float32 weights).

    `next_sentence_labels` loses its length-1 axis (shape (B,) for a batch).
    """
    import tensorflow as tf

    parsed = tf.io.parse_example(serialized, feature_spec(max_seq_length, max_predictions_per_seq))
    out = {}
    for name in FEATURE_NAMES:
        value = parsed[name]
        out[name] = value if name in FLOAT_FEATURES else tf.cast(value, tf.int32)
    out["next_sentence_labels"] = out["next_sentence_labels"][..., 0]
    return out


def read_tfrecords(
    file_pattern,
    max_seq_length,
    max_predictions_per_seq,
    batch_size=None,
    shuffle=False,
    seed=None,
    drop_remainder=False,
):
    """Read pretraining TFRecords as a `tf.data.Dataset` of feature dicts.

    Args:
        file_pattern: str or list of str (globs allowed).
        max_seq_length: int, as written.
        max_predictions_per_seq: int, as written.
        batch_size: optional int; when given, examples are batched (and parsed batch-wise).
        shuffle: bool, shuffle the files and the examples (buffer 10000), deterministic for `seed`.
        seed: optional int.
        drop_remainder: bool, for batching.

    Returns:
        A dataset of dicts with `FEATURE_NAMES` (int32; `masked_lm_weights` float32);
        `next_sentence_labels` has shape () per example.

    Raises:
        FileNotFoundError: the pattern matches no file.
    """
    import tensorflow as tf

    files = matching_files(file_pattern)
    files_ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        files_ds = files_ds.shuffle(len(files), seed=seed)
    dataset = files_ds.interleave(
        tf.data.TFRecordDataset,
        cycle_length=min(len(files), 8),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    if shuffle:
        dataset = dataset.shuffle(10000, seed=seed)

    def parse(serialized):
        return parse_examples(serialized, max_seq_length, max_predictions_per_seq)

    if batch_size:
        dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)


def matching_files(patterns, kind="TFRecord"):
    """The files of one glob pattern (str or path) or a list of them, each pattern's matches sorted;
    `FileNotFoundError` naming a pattern that matches nothing."""
    import tensorflow as tf

    patterns = [os.fspath(patterns)] if isinstance(patterns, (str, os.PathLike)) else [os.fspath(p) for p in patterns]
    files = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"No {kind} file matches {pattern!r}")
        files.extend(matched)
    return files
