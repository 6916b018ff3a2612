"""Word-level data (ELMo): a word vocabulary and a tf.data pipeline for `ElmoBiLM`.

The model code stays backend-neutral; the dataset feeds every backend through `model.fit`.

Sentences are split into words with `split_words`; each sentence becomes one
example `<S> w1 ... wn </S>` (sentences longer than `seq_length - 2` words
are cut into several examples, each with its own boundaries), right-padded to
`seq_length` tokens. bilm-tf instead streams sentences through stateful LSTMs
in windows of 20 steps; our LSTMs start from a zero state in each example.
"""

import collections
import os

import numpy as np

from keras_pretrain.data.corpus import read_documents
from keras_pretrain.errors import ConfigError
from keras_pretrain.text import BOS_TOKEN
from keras_pretrain.text import EOS_TOKEN
from keras_pretrain.text import MAX_CHARACTERS
from keras_pretrain.text import SPECIAL_TOKENS
from keras_pretrain.text import UNK_TOKEN
from keras_pretrain.text import graph_character_ids
from keras_pretrain.text import split_words


def _sentences(paths, lowercase, sentence_split):
    for document in read_documents(paths, sentence_split=sentence_split):
        for sentence in document:
            words = split_words(sentence.lower() if lowercase else sentence)
            if words:
                yield words


def build_word_vocabulary(paths, max_size=None, min_count=1, lowercase=False, sentence_split=False):
    """The softmax vocabulary of a corpus, most frequent words first.

    Args:
        paths: corpus files, folders or globs (`read_documents` format).
        max_size: int or None. Total size including the 4 special tokens.
        min_count: int. Words seen fewer times are left out (they map to
            `<UNK>`).
        lowercase: bool. Lower-case the text first.
        sentence_split: bool. Split lines into sentences (`read_documents`).

    Returns:
        list of str: `["<pad>", "<S>", "</S>", "<UNK>", ...]`, then words by
        decreasing count (ties alphabetically), as the log-uniform sampler of
        the sampled softmax expects. Index = word id; 0 is never a target.
    """
    counts = collections.Counter()
    for words in _sentences(paths, lowercase, sentence_split):
        counts.update(words)
    ordered = sorted(
        (w for w, c in counts.items() if c >= min_count and w not in SPECIAL_TOKENS),
        key=lambda w: (-counts[w], w),
    )
    vocabulary = SPECIAL_TOKENS + ordered
    if max_size is not None:
        vocabulary = vocabulary[:max_size]
    return vocabulary


def _load_vocabulary(vocabulary):
    if isinstance(vocabulary, (str, os.PathLike)):
        with open(vocabulary, encoding="utf-8") as f:
            vocabulary = [line.rstrip("\n") for line in f if line.rstrip("\n")]
    vocabulary = list(vocabulary)
    if vocabulary[: len(SPECIAL_TOKENS)] != SPECIAL_TOKENS:
        raise ConfigError(
            f"ELMo word vocabulary: expected the first entries {SPECIAL_TOKENS} "
            f"(as build_word_vocabulary writes them); found {vocabulary[:4]}."
        )
    return vocabulary


def elmo_examples(paths, vocabulary, seq_length, lowercase=False, sentence_split=False):
    """Words and word ids of every example (NumPy).

    Returns:
        (words, token_ids): str array (N, seq_length - 2) of words ("" pads)
        and int32 array (N, seq_length) of `<S> ids </S>` right-padded with 0.
    """
    if seq_length < 3:
        raise ConfigError(f"seq_length must be at least 3 (<S> w </S>); got {seq_length}.")
    vocabulary = _load_vocabulary(vocabulary)
    index = {w: i for i, w in enumerate(vocabulary)}
    unk, bos, eos = index[UNK_TOKEN], index[BOS_TOKEN], index[EOS_TOKEN]
    span = seq_length - 2
    words_out, ids_out = [], []
    for words in _sentences(paths, lowercase, sentence_split):
        for start in range(0, len(words), span):
            chunk = words[start : start + span]
            words_out.append(chunk + [""] * (span - len(chunk)))
            ids = [bos] + [index.get(w, unk) for w in chunk] + [eos]
            ids_out.append(ids + [0] * (seq_length - len(ids)))
    if not ids_out:
        raise ConfigError(f"ELMo data: no sentence found in {paths!r}.")
    return np.array(words_out, dtype=object), np.array(ids_out, "int32")


def elmo_pretraining_dataset(
    paths,
    vocabulary,
    seq_length,
    batch_size,
    seed=0,
    shuffle=True,
    repeat=False,
    drop_remainder=True,
    lowercase=False,
    sentence_split=False,
    max_characters=MAX_CHARACTERS,
):
    """A batched `tf.data.Dataset` of `ElmoBiLM` features.

    Each element is a dict: `char_ids` int32 (B, seq_length, max_characters)
    (computed in-graph as `ElmoCharacterMapper` does: `graph_character_ids`), `token_ids`,
    `next_token_ids`, `previous_token_ids` int32 (B, seq_length).
    `ElmoBiLM.fit(dataset)` consumes it directly on every backend.

    Args:
        paths: corpus files, folders or globs.
        vocabulary: a word list from `build_word_vocabulary`, or a file with
            one word per line in that order.
        seq_length: int. Tokens per example, boundaries included.
        batch_size: int.
        seed: int. Shuffling seed (same data order on every backend).
        shuffle, repeat, drop_remainder: bool.
        lowercase, sentence_split: as `build_word_vocabulary` (use the same).
        max_characters: int. Characters per token (50).
    """
    import tensorflow as tf

    words, token_ids = elmo_examples(paths, vocabulary, seq_length, lowercase, sentence_split)
    dataset = tf.data.Dataset.from_tensor_slices(
        {"words": tf.constant(words.tolist(), dtype=tf.string), "token_ids": token_ids}
    )
    if shuffle:
        dataset = dataset.shuffle(len(token_ids), seed=seed, reshuffle_each_iteration=True)
    if repeat:
        dataset = dataset.repeat()
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)

    def features(batch):
        ids = batch["token_ids"]
        real = tf.cast(ids != 0, ids.dtype)
        zeros = tf.zeros_like(ids[:, :1])
        return {
            "char_ids": graph_character_ids(batch["words"], max_characters, sequence_length=seq_length),
            "token_ids": ids,
            "next_token_ids": tf.concat([ids[:, 1:], zeros], axis=1) * real,
            "previous_token_ids": tf.concat([zeros, ids[:, :-1]], axis=1) * real,
        }

    return dataset.map(features, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)
