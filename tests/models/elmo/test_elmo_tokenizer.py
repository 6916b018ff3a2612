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
