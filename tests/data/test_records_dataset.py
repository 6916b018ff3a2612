"""`pretraining_dataset` over the TFRecord shards of `create_pretraining_data`: streamed with interleave,
static or masked anew every epoch in the graph, and the same batches through a local tf.data service."""

import random

import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.data import pretraining_dataset
from keras_pretrain.data.tfrecords import shard_paths
from keras_pretrain.errors import ConfigError
from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer
from recipes import create_pretraining_data as recipe

pytestmark = pytest.mark.tf_only

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "."] + [f"w{i}" for i in range(40)]
SEQ, PREDICTIONS = 32, 5


@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("records")
    (tmp / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    rng = random.Random(0)
    docs = ["\n".join(" ".join(f"w{rng.randint(0, 39)}" for _ in range(rng.randint(3, 9))) + " ."
                      for _ in range(rng.randint(2, 6))) for _ in range(40)]
    (tmp / "corpus.txt").write_text("\n\n".join(docs) + "\n")
    pattern = str(tmp / "train-{shard}.tfrecord")
    assert recipe.main(["--input_file", str(tmp / "corpus.txt"), "--vocab_file", str(tmp / "vocab.txt"),
                        "--output_file", pattern, "--num_shards", "3", "--max_seq_length", str(SEQ),
                        "--max_predictions_per_seq", str(PREDICTIONS), "--dupe_factor", "2",
                        "--num_examples_to_print", "0"]) == 0
    return shard_paths(pattern, 3), BertTokenizer(vocabulary=str(tmp / "vocab.txt"), lowercase=True)


def _rows(dataset):
    batches = [{k: v.numpy() for k, v in b.items()} for b in dataset]
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def _restored(rows):
    ids = rows["input_ids"].copy()
    r, s = np.nonzero(rows["masked_lm_weights"])
    ids[r, rows["masked_lm_positions"][r, s]] = rows["masked_lm_ids"][r, s]
    return ids


def _sorted(ids):
    return ids[np.lexsort(ids.T[::-1])]


def test_static_records_stream_as_written(shards):
    files, tokenizer = shards
    written = sum(1 for f in files for _ in tf.data.TFRecordDataset(f))
    rows = _rows(pretraining_dataset(files, tokenizer, seq_length=SEQ, max_predictions=PREDICTIONS,
                                     batch_size=8, seed=1))
    assert len(rows["input_ids"]) == written > 50
    assert rows["input_ids"].dtype == np.int32 and rows["masked_lm_weights"].dtype == np.float32
    assert rows["next_sentence_labels"].shape == (written,)
    plain = _rows(pretraining_dataset(files, tokenizer, seq_length=SEQ, max_predictions=PREDICTIONS,
                                      batch_size=8, shuffle=False))
    np.testing.assert_array_equal(_sorted(rows["input_ids"]), _sorted(plain["input_ids"]))
    assert not np.array_equal(rows["input_ids"], plain["input_ids"])  # shuffled


def test_dynamic_records_are_masked_anew_every_epoch(shards):
    files, tokenizer = shards
    static = _rows(pretraining_dataset(files, tokenizer, seq_length=SEQ, max_predictions=PREDICTIONS,
                                       batch_size=8, shuffle=False))
    dataset = pretraining_dataset(files, tokenizer, seq_length=SEQ, max_predictions=PREDICTIONS,
                                  batch_size=8, shuffle=False, dynamic=True, seed=3)
    first, second = _rows(dataset), _rows(dataset)
    for epoch in (first, second):
        np.testing.assert_array_equal(_restored(epoch), _restored(static))  # the same instances
        lengths = epoch["input_mask"].sum(1)
        expected = np.minimum(PREDICTIONS, np.maximum(1, np.round(lengths * 0.15)))
        np.testing.assert_array_equal(epoch["masked_lm_weights"].sum(1), expected)
        chosen = np.take_along_axis(_restored(epoch), epoch["masked_lm_positions"], 1)[epoch["masked_lm_weights"] > 0]
        assert not np.isin(chosen, [VOCAB.index(t) for t in ("[CLS]", "[SEP]", "[PAD]")]).any()
    assert not np.array_equal(first["masked_lm_positions"], second["masked_lm_positions"])
    assert not np.array_equal(first["masked_lm_positions"], static["masked_lm_positions"])
    again = _rows(pretraining_dataset(files, tokenizer, seq_length=SEQ, max_predictions=PREDICTIONS,
                                      batch_size=8, shuffle=False, dynamic=True, seed=3))
    np.testing.assert_array_equal(again["input_ids"], first["input_ids"])  # deterministic for a seed


def test_a_local_tf_data_service_gives_the_same_batches(shards):
    files, tokenizer = shards
    dispatcher = tf.data.experimental.service.DispatchServer()
    address = dispatcher.target.split("://")[1]
    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=address))
    kwargs = dict(seq_length=SEQ, max_predictions=PREDICTIONS, batch_size=8, dynamic=True, seed=5)
    local = _rows(pretraining_dataset(files, tokenizer, **kwargs))
    served_dataset = pretraining_dataset(files, tokenizer, data_service=dispatcher.target, **kwargs)
    assert b"DataServiceDataset" in served_dataset._as_serialized_graph().numpy()  # read from the service
    served = _rows(served_dataset)
    for name in local:
        np.testing.assert_array_equal(served[name], local[name], err_msg=name)
    del worker, dispatcher


def test_records_refuse_what_they_cannot_do(shards, tmp_path):
    files, tokenizer = shards
    with pytest.raises(ConfigError, match="Dynamic masking of TFRecord shards is token masking"):
        pretraining_dataset(files, tokenizer, masking="ngram", dynamic=True)
    (tmp_path / "c.txt").write_text("w1 w2 .\nw3 .\n")
    with pytest.raises(ConfigError, match="data_service needs TFRecord shards"):
        pretraining_dataset([str(tmp_path / "c.txt")], tokenizer, data_service="grpc://localhost:1")
