"""ELMo character ids of 1-D sentences == bilm-tf's on `sentence.split()`, on fuzzed text (issue 43).

The reference is bilm-tf's own `bilm/data.py` (PyPI `bilm`, the `test` extra): its `Batcher` (a
`UnicodeCharsVocabulary` holding `<S>`, `</S>`, `<UNK>` and a few words) on each sentence's Python
`str.split()`, as bilm-tf's `encode_chars` splits. `data.py` is loaded alone (it needs only NumPy): importing
the `bilm` package would import its TF1 model code into this process.

Ours is compared on the seeded strings of `tests.fuzz_text` (`FAST_COUNT` here, `FULL_COUNT` under
`-m large`) on every path a user reaches with sentences: `ElmoCharacterMapper` eagerly, inside a
`tf.function` and in a `tf.data` pipeline, and the exported ELMo encoder SavedModel's string signature
(`default`, TF-Hub's ELMo contract), whose `word_emb` and `sequence_len` must equal those of its `tokens`
signature fed with `str.split()` words. `ElmoPreprocessor` (the classifier's words: `split_words`, not bilm's
split) is held equal to its Python form, `character_ids(split_words(text))`, on the same strings.

Found by this test (REGRESSIONS keeps a minimal example of each): the graph split cut every string at its
first NUL (tensorflow-text's `regex_split` ends strings there; Python keeps "ab\\x00cd" one word): 104 of
3,200 fuzzed sentences; the exported module split on ASCII whitespace only (`tf.strings.split`): U+3000,
U+00A0, U+0085, U+001C..U+001F, ... were inside words; `ElmoPreprocessor`: the NUL cut, U+000B not a space
(RE2's `\\s`), and RE2's newer Unicode letters (unassigned for Python's tables), 331 of 3,200.
"""

import importlib.util
import os
import re

import numpy as np
import pytest

from keras_pretrain.models.elmo import ElmoCharacterMapper
from keras_pretrain.models.elmo import ElmoPreprocessor
from keras_pretrain.models.elmo import character_ids
from keras_pretrain.models.elmo import split_words
from tests.fuzz_text import FAST_COUNT
from tests.fuzz_text import FULL_COUNT
from tests.fuzz_text import with_regressions

pytestmark = pytest.mark.tf_only  # the mapper and the SavedModel are TF-side code (any backend runs the same graph)

# A minimal example of each class of difference found, and the whitespace set at its edges.
REGRESSIONS = [
    ("NUL inside a word", "ab\x00cd ef"),
    ("NUL alone and at the ends", "\x00 a\x00 \x00b"),
    ("U+3000 separates", "a\u3000b"),
    ("U+00A0, U+1680, U+2007, U+202F, U+205F separate", "a\xa0b\u1680c\u2007d\u202fe\u205ff"),
    ("U+2028, U+2029 separate", "a\u2028b\u2029c"),
    ("U+0085 separates", "a\x85b"),
    ("U+000B, U+000C separate", "s\x0b2\x0c3"),
    ("U+001C..U+001F separate", "s\x1c2\x1d3\x1e4\x1f5"),
    ("not whitespace for Python: U+200B, U+FEFF, U+180E, U+2060", "a\u200bb\ufeffc\u180ed\u2060e"),
    ("whitespace runs and ends", "\u3000 a\u2007\u2007b\xa0 "),
    ("only whitespace", "\u2028\u3000\t"),
    ("empty", ""),
    ("the boundary words", "<S> x </S> <UNK>"),
    ("cut at 48 bytes inside a character", "\u00e9" * 30),
]
VOCABULARY = ["<S>", "</S>", "<UNK>", "the", "hello", "World", "<s>"]


@pytest.fixture(scope="module")
def batcher(tmp_path_factory):
    spec = importlib.util.find_spec("bilm")
    if spec is None:
        pytest.skip("bilm (bilm-tf) is not installed (the `test` extra)")
    path = os.path.join(spec.submodule_search_locations[0], "data.py")
    module_spec = importlib.util.spec_from_file_location("bilm_data_reference", path)
    data = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(data)
    vocab = tmp_path_factory.mktemp("bilm") / "vocab.txt"
    vocab.write_text("\n".join(VOCABULARY) + "\n", encoding="ascii")  # bilm opens it in the locale's encoding
    return data.Batcher(str(vocab), 50)


def texts_of(count):
    return with_regressions(REGRESSIONS, count)


def reference(batcher, texts):
    return batcher.batch_sentences([text.split() for text in texts])


def differing_rows(ours, expected, texts):
    """`[(index, text)]` of the rows that differ (arrays padded to one width first)."""
    ours, expected = np.asarray(ours), np.asarray(expected)
    width = max(ours.shape[1], expected.shape[1])
    pad = lambda a: np.pad(a, [(0, 0), (0, width - a.shape[1]), (0, 0)])  # noqa: E731
    ours, expected = pad(ours), pad(expected)
    return [(i, texts[i]) for i in range(len(texts)) if not np.array_equal(ours[i], expected[i])]


def describe(rows, limit=8):
    return f"{len(rows)} sentences differ; first: " + "; ".join(f"#{i} {t!r}" for i, t in rows[:limit])


def check_mapper(batcher, texts):
    import tensorflow as tf

    expected = reference(batcher, texts)
    mapper = ElmoCharacterMapper()
    eager = np.asarray(mapper(tf.constant(texts)))
    rows = differing_rows(eager, expected, texts)
    assert rows == [], "eager: " + describe(rows)
    assert eager.shape == expected.shape
    graph = tf.function(lambda x: mapper(x))(tf.constant(texts)).numpy()
    rows = differing_rows(graph, expected, texts)
    assert rows == [], "tf.function: " + describe(rows)
    # tf.data, in batches of 64 (each batch as wide as its own longest sentence, as the Batcher's).
    data = tf.data.Dataset.from_tensor_slices(texts).batch(64).map(mapper)
    for start, batch in zip(range(0, len(texts), 64), data):
        chunk = texts[start : start + 64]
        rows = differing_rows(batch.numpy(), reference(batcher, chunk), chunk)
        assert rows == [], f"tf.data (batch at {start}): " + describe(rows)


def test_fuzz_exercises_the_classes(batcher):
    import sys

    texts = texts_of(FAST_COUNT)
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    non_ascii = spaces - set(" \t\n\r\x0b\x0c")
    # Words Python keeps whole that hold a NUL, and sentences split on non-ASCII whitespace.
    assert sum(any("\x00" in w for w in t.split()) for t in texts) >= 10
    assert sum(any(c in t.strip() for c in non_ascii) for t in texts) >= 50
    assert max(len(w.encode()) for t in texts for w in t.split()) > 48  # the 48-byte cut
    # The reference differs from an ASCII-whitespace split on many of them: the test can fail.
    ascii_words = [[w for w in re.split("[ \t\n\r\x0b\x0c]+", t) if w] for t in texts]
    assert len(differing_rows(batcher.batch_sentences(ascii_words), reference(batcher, texts), texts)) >= 50


def test_mapper_equals_bilm(batcher):
    check_mapper(batcher, texts_of(FAST_COUNT))


@pytest.mark.large
def test_mapper_equals_bilm_full(batcher):
    check_mapper(batcher, texts_of(FULL_COUNT))


def check_preprocessor(texts, chunk=400):
    import tensorflow as tf

    for first in range(0, len(texts), chunk):
        part = texts[first : first + chunk]
        words = [split_words(t) for t in part]
        length = max(map(len, words)) + 2  # nothing truncated
        preprocessor = ElmoPreprocessor(sequence_length=length)
        expected = character_ids(words, sequence_length=length)
        rows = differing_rows(np.asarray(preprocessor(tf.constant(part))["char_ids"]), expected, part)
        assert rows == [], f"ElmoPreprocessor eager (from {first}): " + describe(rows)
        data = tf.data.Dataset.from_tensor_slices(part).batch(len(part)).map(lambda x: preprocessor(x)["char_ids"])
        rows = differing_rows(next(iter(data)).numpy(), expected, part)
        assert rows == [], f"ElmoPreprocessor in tf.data (from {first}): " + describe(rows)


def test_preprocessor_words_equal_split_words():
    extra = ["ab\x00cd ef", "s\x0b2", "\x00", "x\x00\x00y", "a\U00011f02b", "a\u0e31b"]
    check_preprocessor(extra + [chr(c) for c in range(0x80)] + texts_of(FAST_COUNT))


@pytest.mark.large
def test_preprocessor_words_equal_split_words_full():
    # Each code point between two letters (Python's and RE2's Unicode tables differ), and the fuzzed strings.
    import sys

    points = [*range(0x80, 0x32400), *range(0x32400, sys.maxunicode + 1, 97)]  # planes 0-3 (all assigned ones)
    singles = ["a" + chr(c) + "b" for c in points if not 0xD800 <= c < 0xE000]
    check_preprocessor(singles, chunk=50000)
    check_preprocessor(texts_of(FULL_COUNT))


# --- the exported ELMo encoder SavedModel (TF-Hub's ELMo signatures) ------------------------------


@pytest.fixture(scope="module")
def module(tmp_path_factory):
    import keras
    import tensorflow as tf

    from keras_pretrain.export import export_encoder
    from keras_pretrain.models.elmo import ElmoBackbone

    if keras.config.backend() != "tensorflow":
        pytest.skip("SavedModels are written from the TensorFlow backend")
    keras.utils.set_random_seed(3)
    backbone = ElmoBackbone(num_layers=1, hidden_dim=8, lstm_dim=8, filters=[[1, 4], [2, 8]], num_highway=1,
                            char_embedding_dim=4)
    path = str(tmp_path_factory.mktemp("elmo_module") / "encoder")
    export_encoder(backbone, path)
    return tf.saved_model.load(path)


def check_module(module, texts):
    import tensorflow as tf

    words = [t.split() for t in texts]
    width = max(len(w) for w in words)
    tokens = tf.constant([w + [""] * (width - len(w)) for w in words])
    lengths = tf.constant([len(w) for w in words], tf.int32)
    by_strings = module.signatures["default"](strings=tf.constant(texts))
    by_tokens = module.signatures["tokens"](tokens=tokens, sequence_len=lengths)
    got_lengths = by_strings["sequence_len"].numpy()
    rows = [(i, texts[i]) for i in np.flatnonzero(got_lengths != lengths.numpy())]
    assert rows == [], "module word counts: " + describe(rows)
    ours, expected = by_strings["word_emb"].numpy(), by_tokens["word_emb"].numpy()
    error = np.abs(ours - expected).max(axis=(1, 2))
    rows = [(i, texts[i]) for i in np.flatnonzero(error > 1e-6)]
    assert rows == [], "module word_emb: " + describe(rows)


def test_module_strings_equal_bilm_split(module):
    texts = texts_of(FAST_COUNT)
    check_module(module, texts)
    # The check can fail: words split on ASCII whitespace only differ in count or in their embeddings.
    import tensorflow as tf

    wrong = module.signatures["tokens"](
        tokens=tf.constant([["a\u3000b", ""]]), sequence_len=tf.constant([1], tf.int32))["word_emb"].numpy()
    right = module.signatures["default"](strings=tf.constant(["a\u3000b"]))["word_emb"].numpy()
    assert right.shape[1] == 2 and np.abs(right[:, :1] - wrong[:, :1]).max() > 1e-3


@pytest.mark.large
def test_module_strings_equal_bilm_split_full(module):
    check_module(module, texts_of(FULL_COUNT))
