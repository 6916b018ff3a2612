import numpy as np
import pytest

from keras_pretrain.models.elmo.elmo_tokenizer import BOS_CHAR
from keras_pretrain.models.elmo.elmo_tokenizer import BOW_CHAR
from keras_pretrain.models.elmo.elmo_tokenizer import EOS_CHAR
from keras_pretrain.models.elmo.elmo_tokenizer import EOW_CHAR
from keras_pretrain.models.elmo.elmo_tokenizer import PAD_CHAR
from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper
from keras_pretrain.models.elmo.elmo_tokenizer import character_ids
from keras_pretrain.models.elmo.elmo_tokenizer import split_words

SENTENCES = [
    ["Gold", ",", "surely", "力加勝北区", "x" * 60, "naïve"],
    ["Hi"],
    [],
]


def test_character_scheme_matches_bilm_tf():
    # bilm-tf / AllenNLP: raw ids 256..260 for <S>, </S>, bow, eow, pad, then +1.
    assert (BOS_CHAR, EOS_CHAR, BOW_CHAR, EOW_CHAR, PAD_CHAR) == (257, 258, 259, 260, 261)
    ids = character_ids([["Gold"]])
    assert ids.shape == (1, 3, 50)
    assert list(ids[0, 0, :4]) == [259, 257, 260, 261]  # <S>
    assert list(ids[0, 2, :4]) == [259, 258, 260, 261]  # </S>
    assert list(ids[0, 1, :7]) == [259, 72, 112, 109, 101, 260, 261]  # G=71 o l d
    # Multi-byte characters are cut at 48 bytes, not characters.
    long = character_ids([["é" * 30]], add_sentence_boundaries=False)[0, 0]
    assert list(long[1:3]) == [0xC3 + 1, 0xA9 + 1] and long[49] == EOW_CHAR
    # Padding tokens are all zero; real tokens never contain 0.
    batch = character_ids(SENTENCES)
    assert batch.shape == (3, 8, 50)
    assert np.all(batch[1, 3:] == 0) and np.all(batch[0] > 0)
    assert np.all(batch[2, :2] > 0) and np.all(batch[2, 2:] == 0)


def test_split_words():
    assert split_words("Gold, surely! 力加 it's") == ["Gold", ",", "surely", "!", "力", "加", "it", "'", "s"]


@pytest.mark.tf_only
def test_in_graph_character_ids_equal_python():
    import tensorflow as tf

    ragged = tf.ragged.constant(SENTENCES, dtype=tf.string)
    for kwargs in ({}, {"sequence_length": 5}, {"add_sentence_boundaries": False}, {"max_characters": 8}):
        expected = character_ids(SENTENCES, **kwargs)
        mapper = ElmoCharacterMapper(**kwargs)
        np.testing.assert_array_equal(np.asarray(mapper(ragged)), expected)
        # Inside a tf.data graph, from dense right-padded strings.
        width = max(len(s) for s in SENTENCES)
        dense = [s + [""] * (width - len(s)) for s in SENTENCES]
        data = tf.data.Dataset.from_tensor_slices(tf.constant(dense)).batch(3).map(mapper)
        np.testing.assert_array_equal(next(iter(data)).numpy(), expected)
    # Whitespace-split sentences.
    mapper = ElmoCharacterMapper(sequence_length=6)
    got = mapper(tf.constant(["a  bc d", "力加"]))
    np.testing.assert_array_equal(np.asarray(got), character_ids([["a", "bc", "d"], ["力加"]], sequence_length=6))
    restored = ElmoCharacterMapper.from_config(mapper.get_config())
    assert restored.sequence_length == 6


# --- bilm-tf's `Batcher`, written from the original algorithm (bilm/data.py) --------------------
# `UnicodeCharsVocabulary`: raw char ids 0..255 = UTF-8 bytes, 256 <S>, 257 </S>, 258 bow, 259 eow,
# 260 pad; a word is [bow, bytes[:max - 2], eow, pad...]; words of the vocabulary are precomputed, and
# the vocabulary's <S> / </S> get [bow, 256 / 257, eow, pad...]. `Batcher.batch_sentences` adds <S>,
# </S> around each list of tokens and +1 to every id so that 0 is the padding mask.
BILM_VOCAB = ["<S>", "</S>", "<UNK>", "the", "Gold", ",", "力加"]  # the published vocabulary holds <S>, </S>, <UNK>


class BilmBatcher:
    bos_char, eos_char, bow_char, eow_char, pad_char = 256, 257, 258, 259, 260

    def __init__(self, vocab, max_token_length=50):
        self.max_word_length = max_token_length
        self.word_to_id = {w: i for i, w in enumerate(vocab)}
        self.word_char_ids = np.zeros([len(vocab), max_token_length], np.int32)
        for i, word in enumerate(vocab):
            self.word_char_ids[i] = self.convert_word_to_char_ids(word)
        self.bos_chars = self.make_bos_eos(self.bos_char)
        self.eos_chars = self.make_bos_eos(self.eos_char)
        self.word_char_ids[self.word_to_id["<S>"]] = self.bos_chars
        self.word_char_ids[self.word_to_id["</S>"]] = self.eos_chars

    def make_bos_eos(self, c):
        r = np.full([self.max_word_length], self.pad_char, np.int32)
        r[0], r[1], r[2] = self.bow_char, c, self.eow_char
        return r

    def convert_word_to_char_ids(self, word):
        code = np.full([self.max_word_length], self.pad_char, np.int32)
        word_encoded = word.encode("utf-8", "ignore")[: (self.max_word_length - 2)]
        code[0] = self.bow_char
        for k, chr_id in enumerate(word_encoded, start=1):
            code[k] = chr_id
        code[len(word_encoded) + 1] = self.eow_char
        return code

    def word_to_char_ids(self, word):
        if word in self.word_to_id:
            return self.word_char_ids[self.word_to_id[word]]
        return self.convert_word_to_char_ids(word)

    def batch_sentences(self, sentences):
        max_length = max(len(sentence) for sentence in sentences) + 2
        out = np.zeros((len(sentences), max_length, self.max_word_length), np.int64)
        for k, sent in enumerate(sentences):
            chars = np.vstack([self.bos_chars] + [self.word_to_char_ids(w) for w in sent] + [self.eos_chars])
            out[k, : len(sent) + 2, :] = chars + 1
        return out


TRICKY = [
    ["", "c", "d"],                       # an empty token first: "d" must stay
    ["a", "", "", "b", ""],               # empty tokens inside (a trailing "" in a list is a token too)
    ["Gold", ",", "<S>", "</S>", "<UNK>", "<s>"],  # the boundary words of the vocabulary
    ["力加勝北区", "naïve", "🙂🙂", "\u3000", "x" * 48, "y" * 49, "é" * 25, "the"],  # cuts at 48 bytes
    ["力加"],
]


@pytest.mark.tf_only
def test_character_ids_equal_bilm_batcher():
    import tensorflow as tf

    batcher = BilmBatcher(BILM_VOCAB)
    expected = batcher.batch_sentences(TRICKY)
    identical = 0
    np.testing.assert_array_equal(character_ids(TRICKY), expected)
    mapper = ElmoCharacterMapper()
    np.testing.assert_array_equal(np.asarray(mapper(tf.ragged.constant(TRICKY, dtype=tf.string))), expected)
    for sentence in TRICKY:  # one row at a time: each row's own width
        identical += np.array_equal(np.asarray(mapper(tf.ragged.constant([sentence]))), batcher.batch_sentences([sentence]))
    assert identical == len(TRICKY)
    print(f"ELMo character ids: {identical}/{len(TRICKY)} tricky sentences identical to bilm-tf's Batcher")


@pytest.mark.tf_only
def test_dense_input_keeps_every_real_token():
    """Dense (B, T) strings: trailing "" are padding; a "" before a real token is the Batcher's empty token."""
    import tensorflow as tf

    batcher = BilmBatcher(BILM_VOCAB)
    mapper = ElmoCharacterMapper()
    dense = tf.constant([["", "c", "d", ""], ["a", "", "b", ""], ["Gold", "", "", ""], ["", "", "", ""]])
    rows = [["", "c", "d"], ["a", "", "b"], ["Gold"], []]  # what the Batcher is given
    np.testing.assert_array_equal(np.asarray(mapper(dense)), batcher.batch_sentences(rows))
    got = np.asarray(mapper(tf.constant([["", "c", "d"]])))
    assert got.shape == (1, 5, 50) and list(got[0, 3, :3]) == [259, ord("d") + 1, 260]  # "d" is kept
    # In tf.data, with a fixed length, and with no token column at all.
    data = tf.data.Dataset.from_tensor_slices(dense).batch(4).map(ElmoCharacterMapper(sequence_length=6))
    np.testing.assert_array_equal(next(iter(data)).numpy(), character_ids(rows, sequence_length=6))
    assert np.asarray(mapper(tf.zeros((2, 0), tf.string))).shape == (2, 2, 50)


@pytest.mark.tf_only
def test_one_dimensional_sentences_split_as_python(tmp_path):
    """1-D sentences are split on every whitespace Python's `str.split()` knows (U+3000, U+00A0, U+2028, U+0085,
    U+001C..U+001F, ...), in-graph and in the exported preprocessor's graph alike: bilm-tf's ids of `s.split()`."""
    import sys

    import tensorflow as tf

    spaces = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert len(spaces) == 29
    rng = np.random.default_rng(0)
    sentences = []
    for _ in range(200):
        parts = [str(rng.choice(["Gold", "力加", "naïve", "a", "x" * 55, "\u200b", "é", ","]))
                 for _ in range(int(rng.integers(0, 6)))]
        text = "".join(p + "".join(rng.choice(spaces, int(rng.integers(1, 3)))) for p in parts)
        sentences.append(str(rng.choice(spaces)) + text if rng.random() < 0.3 else text)
    batcher = BilmBatcher(BILM_VOCAB)
    mapper = ElmoCharacterMapper()

    @tf.function
    def graph(texts):
        return mapper(texts)

    for sentence in sentences:
        expected = batcher.batch_sentences([sentence.split()])
        np.testing.assert_array_equal(np.asarray(mapper(tf.constant([sentence]))), expected, err_msg=repr(sentence))
        np.testing.assert_array_equal(graph(tf.constant([sentence])).numpy(), expected, err_msg=repr(sentence))
