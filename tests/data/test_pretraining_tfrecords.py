import random

import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.data.features import FEATURE_NAMES, instance_to_features, instances_to_arrays
from keras_pretrain.data.instances import create_nsp_instances
from keras_pretrain.data.masking import TokenMasking
from keras_pretrain.data.tfrecords import read_tfrecords, shard_paths, write_instances
from keras_pretrain.errors import ConfigError

pytestmark = pytest.mark.tf_only

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]


def _instances(n_docs=12, seed=0):
    rng = random.Random(seed)
    docs = [[[f"w{rng.randint(0, 39)}" for _ in range(rng.randint(2, 6))] for _ in range(8)]
            for _ in range(n_docs)]
    masking = TokenMasking(vocabulary=VOCAB, max_predictions=5)
    return [masking.mask_instance(i, rng) for i in create_nsp_instances(docs, 24, rng)]


def test_features_are_the_original_ones():
    inst = _instances()[0]
    features = instance_to_features(inst, VOCAB, 24, 5)
    assert list(features) == list(FEATURE_NAMES)
    n = len(inst.tokens)
    assert features["input_mask"] == [1] * n + [0] * (24 - n)
    assert features["input_ids"][:n] == [VOCAB.index(t) for t in inst.tokens]
    k = len(inst.masked_lm_positions)
    assert features["masked_lm_weights"] == [1.0] * k + [0.0] * (5 - k)
    assert features["masked_lm_ids"][:k] == [VOCAB.index(t) for t in inst.masked_lm_labels]
    assert features["next_sentence_labels"] == [int(inst.is_random_next)]
    with pytest.raises(ConfigError, match="max_seq_length"):
        instance_to_features(inst, VOCAB, 4, 5)
    with pytest.raises(ConfigError, match="not in the vocabulary"):
        instance_to_features(inst, VOCAB[:6], 24, 5)


def test_round_trip_sharded(tmp_path):
    instances = _instances()
    files = shard_paths(str(tmp_path / "out" / "train-{shard:03d}-of-{num_shards:03d}.tfrecord"), 3)
    assert files[1].endswith("train-001-of-003.tfrecord")
    assert write_instances(instances, files, VOCAB, 24, 5) == len(instances)
    # Types as in the original files: int64 lists, a float list for the weights.
    raw = next(iter(tf.data.TFRecordDataset(files[0])))
    example = tf.train.Example.FromString(raw.numpy())
    kinds = {name: f.WhichOneof("kind") for name, f in example.features.feature.items()}
    assert kinds == {n: "float_list" if n == "masked_lm_weights" else "int64_list" for n in FEATURE_NAMES}

    expected = instances_to_arrays(instances, VOCAB, 24, 5)
    # round-robin: instance i went to shard i % 3
    order = [i for shard in range(3) for i in range(shard, len(instances), 3)]
    got = {name: [] for name in FEATURE_NAMES}
    for files_one in files:
        for example in read_tfrecords(files_one, 24, 5):
            for name in FEATURE_NAMES:
                got[name].append(example[name].numpy())
    for name in FEATURE_NAMES:
        array = np.stack(got[name])
        assert array.dtype == (np.float32 if name == "masked_lm_weights" else np.int32)
        np.testing.assert_array_equal(array, expected[name][order])
    batch = next(iter(read_tfrecords(str(tmp_path / "out" / "*.tfrecord"), 24, 5, batch_size=4)))
    assert batch["input_ids"].shape == (4, 24) and batch["next_sentence_labels"].shape == (4,)


def test_reader_ignores_extra_features_and_reports_missing_files(tmp_path):
    inst = _instances()[0]
    features = instance_to_features(inst, VOCAB, 24, 5)
    example = tf.train.Example()
    for name, values in features.items():
        if name == "masked_lm_weights":
            example.features.feature[name].float_list.value.extend(values)
        else:
            example.features.feature[name].int64_list.value.extend(values)
    example.features.feature["token_boundary"].int64_list.value.extend([1] * 24)  # ALBERT adds this
    path = str(tmp_path / "albert.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(example.SerializeToString())
    got = next(iter(read_tfrecords(path, 24, 5)))
    assert got["input_ids"].numpy().tolist() == features["input_ids"]
    with pytest.raises(FileNotFoundError, match="nothing"):
        read_tfrecords(str(tmp_path / "nothing*.tfrecord"), 24, 5)


def test_direct_serialization_equals_the_protobuf_library():
    """The hand-written Example bytes (the writer's fast path) parse to the message protobuf builds."""
    from keras_pretrain.data.tfrecords import InstanceSerializer, features_to_example, serialize_features

    rng = random.Random(0)
    for _ in range(100):
        features = {
            "input_ids": [rng.randint(0, 300000) for _ in range(rng.randint(0, 40))],
            "masked_lm_weights": [rng.random() for _ in range(rng.randint(0, 5))],
            "wide": [rng.randint(-2**63, 2**63 - 1) for _ in range(3)],
            "next_sentence_labels": [rng.randint(0, 1)],
        }
        assert tf.train.Example.FromString(serialize_features(features)) == features_to_example(features)
    serialize = InstanceSerializer({t: i for i, t in enumerate(VOCAB)}, 24, 5)
    for inst in _instances():
        expected = features_to_example(instance_to_features(inst, VOCAB, 24, 5))
        assert tf.train.Example.FromString(serialize(inst)) == expected
    inst.tokens[1] = "not-in-vocab"
    with pytest.raises(ConfigError, match="not-in-vocab"):
        serialize(inst)
