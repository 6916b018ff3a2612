import random

import keras
import numpy as np
import pytest

from keras_pretrain.data.corpus import CorpusStats
from keras_pretrain.data.pipeline import pretraining_dataset

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["the", "cat", "dog", "run", "walk", "house", "tree", "big", "small", "red", "blue", "see"]
VOCAB = SPECIALS + WORDS + ["##s", "##ed", "."]


def _tokenizer(tmp_path):
    import keras_hub

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    return keras_hub.tokenizers.WordPieceTokenizer(vocabulary=str(path), lowercase=True)


def _corpus(tmp_path, num_docs=12, seed=0):
    rng = random.Random(seed)
    lines = []
    for _ in range(num_docs):
        for _ in range(rng.randint(3, 8)):
            words = [rng.choice(WORDS) + rng.choice(["", "", "s", "ed"]) for _ in range(rng.randint(3, 9))]
            lines.append(" ".join(words).capitalize() + ".")
        lines.append("")
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines))
    return str(path)


def _batches(dataset):
    return [{k: np.asarray(v) for k, v in batch.items()} for batch in dataset]


def _original_ids(batches):
    """The input ids before masking: each masked position given back its label (random replacements,
    drawn from the whole vocabulary as the original, may be any token)."""
    out = []
    for b in batches:
        ids = b["input_ids"].copy()
        rows, slots = np.nonzero(b["masked_lm_weights"])
        ids[rows, b["masked_lm_positions"][rows, slots]] = b["masked_lm_ids"][rows, slots]
        out.append(ids)
    return np.concatenate(out)


@pytest.mark.tf_only
@pytest.mark.parametrize("objective", ["nsp", "sop", "full_sentences", "doc_sentences"])
def test_static_dataset(tmp_path, objective):
    stats = CorpusStats()
    ds = pretraining_dataset(
        _corpus(tmp_path), _tokenizer(tmp_path), objective=objective, seq_length=32, max_predictions=5,
        batch_size=8, dupe_factor=2, seed=1, stats=stats,
    )
    batches = _batches(ds)
    assert stats.documents == 12 and stats.check()
    first = batches[0]
    assert first["input_ids"].shape == (8, 32) and first["input_ids"].dtype == np.int32
    assert first["masked_lm_weights"].dtype == np.float32 and first["next_sentence_labels"].shape == (8,)
    ids = np.concatenate([b["input_ids"] for b in batches])
    assert (ids[:, 0] == VOCAB.index("[CLS]")).all()
    assert (ids == VOCAB.index("[MASK]")).any() and not (_original_ids(batches) == VOCAB.index("[UNK]")).any()
    labels = np.concatenate([b["next_sentence_labels"] for b in batches])
    if objective in ("full_sentences", "doc_sentences"):
        assert not labels.any()
    again = _batches(pretraining_dataset(
        _corpus(tmp_path), _tokenizer(tmp_path), objective=objective, seq_length=32, max_predictions=5,
        batch_size=8, dupe_factor=2, seed=1,
    ))
    for a, b in zip(batches, again):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])


@pytest.mark.tf_only
@pytest.mark.parametrize("masking", ["token", "whole_word"])
def test_dynamic_dataset_new_mask_each_epoch(tmp_path, masking):
    ds = pretraining_dataset(
        _corpus(tmp_path), _tokenizer(tmp_path), masking=masking, seq_length=32, max_predictions=5,
        batch_size=8, seed=3, dynamic=True, shuffle=False,
    )
    epoch1, epoch2 = _batches(ds), _batches(ds)
    assert len(epoch1) == len(epoch2)
    for a, b in zip(epoch1, epoch2):
        np.testing.assert_array_equal(a["input_mask"], b["input_mask"])  # same sequences
    assert any((a["masked_lm_positions"] != b["masked_lm_positions"]).any() for a, b in zip(epoch1, epoch2))
    for batch in epoch1:
        restored = batch["input_ids"].copy()
        rows = np.arange(len(restored))[:, None]
        w = batch["masked_lm_weights"] > 0
        row_ids = np.broadcast_to(rows, w.shape)[w]
        restored[row_ids, batch["masked_lm_positions"][w]] = batch["masked_lm_ids"][w]
        assert not (restored == VOCAB.index("[MASK]")).any()


def test_fit_on_backend(tmp_path):
    """One fit step of a tiny masked-LM model on the dataset, on the current Keras backend."""
    vocab_size, seq_length, max_predictions = len(VOCAB), 32, 5
    ds = pretraining_dataset(
        _corpus(tmp_path), _tokenizer(tmp_path), seq_length=seq_length, max_predictions=max_predictions,
        batch_size=4, seed=0, dynamic=True, drop_remainder=True,
    )
    ds = ds.map(lambda f: (
        {"input_ids": f["input_ids"], "masked_lm_positions": f["masked_lm_positions"]},
        f["masked_lm_ids"],
        f["masked_lm_weights"],
    ))
    input_ids = keras.Input((seq_length,), dtype="int32", name="input_ids")
    positions = keras.Input((max_predictions,), dtype="int32", name="masked_lm_positions")
    hidden = keras.layers.Embedding(vocab_size, 8)(input_ids)
    gathered = keras.layers.Lambda(
        lambda t: keras.ops.take_along_axis(t[0], keras.ops.expand_dims(t[1], -1), axis=1),
        output_shape=(max_predictions, 8),
    )([hidden, positions])
    logits = keras.layers.Dense(vocab_size)(gathered)
    model = keras.Model({"input_ids": input_ids, "masked_lm_positions": positions}, logits)
    model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(ds, steps_per_epoch=1, epochs=1, verbose=0, shuffle=False)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.tf_only
def test_select_keeps_whole_documents_apart(tmp_path):
    """`select` splits by document: held-out documents never reach the training instances."""
    tokenizer = _tokenizer(tmp_path)
    lines = []
    for i in range(30):  # documents 0..29; the odd ones use "cat", the even ones "dog"
        word = "cat" if i % 2 else "dog"
        lines += [f"the {word} see the {word} .", f"big {word} run .", f"small {word} walk .", ""]
    path = tmp_path / "split.txt"
    path.write_text("\n".join(lines))
    kwargs = dict(objective="sop", masking="token", seq_length=16, max_predictions=3, batch_size=4, seed=1)
    vocab = tokenizer.get_vocabulary()
    cat, dog = vocab.index("cat"), vocab.index("dog")
    train = _original_ids(_batches(
        pretraining_dataset([str(path)], tokenizer, select=lambda i: i % 2 == 0, **kwargs)))
    held = _original_ids(_batches(
        pretraining_dataset([str(path)], tokenizer, select=lambda i: i % 2 == 1, **kwargs)))
    assert (train == dog).any() and not (train == cat).any()
    assert (held == cat).any() and not (held == dog).any()


@pytest.mark.tf_only
def test_unigram_baseline_counts_weighted_targets():
    import tensorflow as tf

    from keras_pretrain.data import target_counts
    from keras_pretrain.data import unigram_accuracy

    features = {
        "masked_lm_ids": np.array([[7, 7, 5], [7, 9, 0], [5, 5, 0]], "int32"),
        "masked_lm_weights": np.array([[1, 1, 1], [1, 1, 0], [1, 1, 0]], "float32"),
    }
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(2)
    counts = target_counts(dataset)
    assert counts == {7: 3, 5: 3, 9: 1}  # padded predictions (weight 0) are not targets
    assert unigram_accuracy(dataset, 7) == pytest.approx(3 / 7)
    assert unigram_accuracy(dataset, 5) == pytest.approx(3 / 7)
    assert unigram_accuracy(dataset, 0) == 0.0
    assert target_counts(dataset, max_batches=1) == {7: 3, 5: 1, 9: 1}
