"""ELMo's words and character ids (bilm-tf / AllenNLP convention), in NumPy and in-graph.

Text schemes that both `keras_pretrain.data` (the biLM's word vocabulary and dataset) and
`keras_pretrain.models.elmo` (`ElmoCharacterMapper`) use; neither may import the other, so they
live here, below both.

The character scheme of bilm-tf's `UnicodeCharsVocabulary` and AllenNLP's
`ELMoCharacterMapper`, with the +1 shift both apply at inference time so that
0 means "no token here" (the mask):

| what                      | raw value (training) | id (this module)  |
|---------------------------|----------------------|-------------------|
| UTF-8 byte b (0..255)     | b                    | b + 1 (1..256)    |
| begin of sentence `<S>`   | 256                  | 257               |
| end of sentence `</S>`    | 257                  | 258               |
| begin of word             | 258                  | 259               |
| end of word               | 259                  | 260               |
| padding character         | 260                  | 261               |
| padding token (mask)      | -                    | 0                 |

Hence 261 character values in the original training config (`n_characters:
261`) and 262 embedding rows after the shift (`n_characters: 262`, the seed's
count). A token becomes `[bow, bytes[:max_characters - 2], eow]` padded with
the padding character to `max_characters` (50); the UTF-8 bytes are cut, not
the characters (as the original). `<S>` is `[bow, bos, eow, pad...]` and
`</S>` is `[bow, eos, eow, pad...]`, also when the text itself holds the token
`<S>` or `</S>` (bilm-tf's `Batcher` looks words up in its vocabulary, where
these two carry the sentence-boundary patterns; AllenNLP's mapper does the
same). Padding tokens are all zeros.

Empty tokens: bilm-tf's `Batcher` takes lists of tokens and encodes an empty
string like any word, as `[bow, eow, pad...]`; so do we for a ragged or list
input. In a dense `(B, T)` string input the trailing `""` of a row are padding
and every token up to the last non-empty one is kept, `""` included: the row
`["", "c", "d", ""]` is the `Batcher`'s `["", "c", "d"]` (no real token is
dropped, none moves).

This module also holds the word splitter used to build ELMo's word vocabulary
(`split_words`, Python only; the in-graph mapper splits on whitespace) and that
vocabulary's special tokens. TensorFlow is imported only by `graph_character_ids`.
"""

import re

import numpy as np

MAX_CHARACTERS = 50
NUM_CHARACTERS = 262
BOS_CHAR = 257
EOS_CHAR = 258
BOW_CHAR = 259
EOW_CHAR = 260
PAD_CHAR = 261

BOS_TOKEN = "<S>"
EOS_TOKEN = "</S>"
# The word vocabularies of the biLM's softmax: id 0 pads (never a target), then the sentence marks and <UNK>.
PAD_TOKEN = "<pad>"
UNK_TOKEN = "<UNK>"
SPECIAL_TOKENS = [PAD_TOKEN, BOS_TOKEN, EOS_TOKEN, UNK_TOKEN]
_SPECIAL_WORDS = {BOS_TOKEN.encode(): BOS_CHAR, EOS_TOKEN.encode(): EOS_CHAR}

_WORD = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\W\u3400-\u9fff\uf900-\ufaff]+|[^\w\s]")


def split_words(text):
    """Split text into words: runs of word characters, each punctuation mark
    and each CJK ideograph on its own.

    >>> split_words("Gold, surely!")
    ['Gold', ',', 'surely', '!']
    """
    return _WORD.findall(text)


def _special(char, max_characters):
    ids = np.full((max_characters,), PAD_CHAR, "int32")
    ids[:3] = [BOW_CHAR, char, EOW_CHAR]
    return ids


def word_character_ids(word, max_characters=MAX_CHARACTERS):
    """The `max_characters` character ids of one word (str or bytes).

    The words `"<S>"` and `"</S>"` get the sentence-boundary patterns, as in
    bilm-tf's vocabulary lookup.
    """
    data = word.encode("utf-8", "ignore") if isinstance(word, str) else bytes(word)
    if data in _SPECIAL_WORDS:
        return _special(_SPECIAL_WORDS[data], max_characters)
    data = data[: max_characters - 2]
    ids = np.full((max_characters,), PAD_CHAR, "int32")
    ids[0] = BOW_CHAR
    ids[1 : 1 + len(data)] = np.frombuffer(data, np.uint8).astype("int32") + 1
    ids[1 + len(data)] = EOW_CHAR
    return ids


def character_ids(
    sentences,
    max_characters=MAX_CHARACTERS,
    add_sentence_boundaries=True,
    sequence_length=None,
):
    """Character ids of a batch of tokenized sentences (NumPy reference).

    Args:
        sentences: list of lists of words (str).
        max_characters: int. Characters per token (50 in ELMo).
        add_sentence_boundaries: bool. Wrap each sentence in `<S>` ... `</S>`
            (bilm-tf's `Batcher` always does).
        sequence_length: int or None. Pad (or truncate the words, keeping the
            boundaries) to this many tokens; default the longest sentence.

    Returns:
        int32 array (B, W, max_characters); 0 for padding tokens.
    """
    extra = 2 if add_sentence_boundaries else 0
    if sequence_length is not None:
        sentences = [list(s)[: sequence_length - extra] for s in sentences]
    width = max([len(s) + extra for s in sentences] + [0])
    if sequence_length is not None:
        width = sequence_length
    out = np.zeros((len(sentences), width, max_characters), "int32")
    for b, sentence in enumerate(sentences):
        rows = [word_character_ids(w, max_characters) for w in sentence]
        if add_sentence_boundaries:
            rows = (
                [_special(BOS_CHAR, max_characters)]
                + rows
                + [_special(EOS_CHAR, max_characters)]
            )
        if rows:
            out[b, : len(rows)] = np.stack(rows)
    return out


# Python's `str.split()` whitespace (`str.isspace()`), as an RE2 class: the in-graph word splits use it so that
# 1-D sentences give the words Python's `split()` gives (bilm-tf reads `sentence.split()`).
PY_WHITESPACE = (r"[\t\n\x{0B}\x{0C}\r\x{1C}-\x{1F} \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}"
                 r"\x{205F}\x{3000}]+")


def graph_split(tf, sentences):
    """Ragged words of a 1-D string tensor, split as Python's `str.split()` splits (no empty words)."""
    import tensorflow_text as tf_text

    return tf_text.regex_split(sentences, PY_WHITESPACE)


def graph_character_ids(
    inputs,
    max_characters=MAX_CHARACTERS,
    add_sentence_boundaries=True,
    sequence_length=None,
):
    """`character_ids` with `tf.strings` / `tf.io` ops, in the TensorFlow graph (`tf.data`, SavedModels).

    Args:
        inputs: a `tf.RaggedTensor` of words (B, None); a dense string tensor
            (B, T) whose trailing empty strings are padding (an empty string
            before a real token is an empty token, see the module docstring);
            or a 1-D tensor of sentences, split as Python's `str.split()` splits
            (every Unicode whitespace: U+3000, U+00A0, U+2028, ...).
        max_characters, add_sentence_boundaries, sequence_length: as
            `character_ids`.

    Returns:
        int32 `tf.Tensor` (B, W, max_characters); 0 for padding tokens.
    """
    import tensorflow as tf

    if not isinstance(inputs, tf.RaggedTensor):
        inputs = tf.convert_to_tensor(inputs)
        if inputs.shape.rank == 1:
            inputs = graph_split(tf, inputs)
        else:
            # Up to the last non-empty token of each row (not the count
            # of non-empty ones: an empty token inside the row is kept).
            real = tf.cast(tf.strings.length(inputs) > 0, tf.int64)
            kept = tf.math.cumsum(real, axis=1, reverse=True) > 0
            lengths = tf.reduce_sum(tf.cast(kept, tf.int64), axis=1)
            inputs = tf.RaggedTensor.from_tensor(inputs, lengths=lengths)
    words = inputs
    extra = 2 if add_sentence_boundaries else 0
    if sequence_length is not None:
        words = words[:, : sequence_length - extra]
    n = max_characters
    flat = words.flat_values
    data = tf.io.decode_raw(flat, tf.uint8, fixed_length=n - 2)
    data = tf.cast(data, tf.int32) + 1
    length = tf.minimum(tf.strings.length(flat, unit="BYTE"), n - 2)
    position = tf.range(n - 2)[tf.newaxis, :]
    body = tf.where(position < length[:, tf.newaxis], data, PAD_CHAR)
    size = tf.shape(flat)[0]
    pad_tail = tf.fill([size, 1], PAD_CHAR)
    ids = tf.concat([tf.fill([size, 1], BOW_CHAR), body, pad_tail], axis=1)
    # End of word right after the last byte.
    eow = tf.one_hot(length + 1, n, dtype=tf.int32)
    ids = ids * (1 - eow) + EOW_CHAR * eow
    # The words <S> and </S>: the sentence-boundary patterns (bilm-tf).
    for word, char in _SPECIAL_WORDS.items():
        ids = tf.where((flat == word)[:, tf.newaxis], _tf_special(char, n)[0], ids)
    ids = words.with_flat_values(ids)  # (B, None, n)
    if add_sentence_boundaries:
        batch = words.nrows()
        bos = tf.tile(_tf_special(BOS_CHAR, n), [batch, 1, 1])
        eos = tf.tile(_tf_special(EOS_CHAR, n), [batch, 1, 1])
        bos = tf.RaggedTensor.from_tensor(bos)
        eos = tf.RaggedTensor.from_tensor(eos)
        ids = tf.concat([bos, ids, eos], axis=1)
    if sequence_length is not None:
        shape = [None, sequence_length, n]
    else:
        shape = [None, None, n]
    return ids.to_tensor(default_value=0, shape=shape)


def _tf_special(char, n):
    import tensorflow as tf

    return tf.constant(_special(char, n)[np.newaxis, np.newaxis, :])
