"""TFRecord files with the original BERT/ALBERT pretraining features: writer (static masking) and reader.

Files written here load in the original Google scripts and theirs load here (extra features such as
ALBERT's `token_boundary` are ignored by the reader).
"""

import tensorflow as tf

from keras_pretrain.data.features import FEATURE_NAMES, FLOAT_FEATURES, instance_to_features


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


def features_to_example(features):
    """A `tf.train.Example` of a feature dict (int64 lists; float list for `masked_lm_weights`)."""
    feature = {}
    for name, values in features.items():
        if name in FLOAT_FEATURES:
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))
    return tf.train.Example(features=tf.train.Features(feature=feature))


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
    if isinstance(output_files, str):
        output_files = [output_files]
    for path in output_files:
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        if parent:
            tf.io.gfile.makedirs(parent)
    writers = [tf.io.TFRecordWriter(path) for path in output_files]
    count = 0
    try:
        for instance in instances:
            features = instance_to_features(instance, vocabulary, max_seq_length, max_predictions_per_seq)
            writers[count % len(writers)].write(features_to_example(features).SerializeToString())
            count += 1
    finally:
        for writer in writers:
            writer.close()
    return count


def feature_spec(max_seq_length, max_predictions_per_seq):
    """The `tf.io.parse_example` spec of the original input function."""
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
    patterns = [file_pattern] if isinstance(file_pattern, str) else list(file_pattern)
    files = []
    for pattern in patterns:
        matched = sorted(tf.io.gfile.glob(pattern))
        if not matched:
            raise FileNotFoundError(f"No TFRecord file matches {pattern!r}")
        files.extend(matched)
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
