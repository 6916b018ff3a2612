"""The text normaliser of the SentencePiece families (ALBERT, XLNet), in-graph.

Both original releases run a Python `preprocess_text` before SentencePiece:
whitespace runs joined to one space and the ends stripped, "``" and "''"
turned into '"' (XLNet), NFKD with the accents (combining marks) removed,
`str.lower()` for uncased models. `normalize` does the same with TF string
ops, so eager calls, `tf.data` and an exported preprocessor give the same
text; `preprocess_text` takes the steps of each family's reference:

- ALBERT (google-research/albert `tokenization.py`): spaces joined, no quote
  replacement, accents = Python's `unicodedata.combining` characters;
- XLNet (xlnet `prepro_utils.py`): the same, and "``" and "''" replaced
  (before NFKD).

`split_digit_comma` is the originals' `encode_pieces` fix for pieces ending
in "<digit>," (ALBERT keeps the re-encoded piece's "▁", XLNet takes it off
when the piece had none); `tokenize_tf` runs SentencePiece and the fix, and,
with a tokenizer's `special_tokens_in_strings=True`, first cuts the raw text
at its special tokens (`keras_pretrain.models.special_tokens`) and
preprocesses and encodes each piece between on its own.
"""

import functools
import sys
import unicodedata

from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.models.special_tokens import tokenize_around_special_tokens

# What counts as an accent to remove after NFKD (see the module docstring).
COMBINING = "combining"  # Python's unicodedata.combining (canonical combining class != 0)
NONSPACING = "nonspacing"  # Unicode general category Mn


def _tf():
    import tensorflow as tf

    return tf


def char_class(predicate):
    """An RE2 character class of the code points where `predicate(chr(cp))` holds (this Python's Unicode
    tables: RE2's own classes follow another Unicode version, and its `\\s` is ASCII only)."""
    ranges, start = [], None
    for cp in range(sys.maxunicode + 2):
        inside = cp <= sys.maxunicode and not 0xD800 <= cp < 0xE000 and predicate(chr(cp))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            ranges.append(f"\\x{{{start:X}}}-\\x{{{cp - 1:X}}}")
            start = None
    return "[" + "".join(ranges) + "]"


@functools.lru_cache(maxsize=None)
def python_classes():
    """Python's (not RE2's) whitespace, combining and digit characters."""
    return {
        "space": char_class(str.isspace),
        "combining": char_class(unicodedata.combining),
        "digit": char_class(str.isdigit),
    }


def lower_utf8(x):
    """`str.lower()` in-graph: `tf.strings.lower` stops at a NUL, so lower each part.

    (String attributes such as a separator stop at a NUL too: NUL is joined as
    tensor data, and the one after the last part cut off.)
    """
    tf = _tf()
    parts = tf.strings.split(x, "\x00")
    parts = tf.ragged.map_flat_values(
        lambda p: tf.strings.join([tf.strings.lower(p, encoding="utf-8"), tf.fill(tf.shape(p), "\x00")]),
        parts,
    )
    joined = tf.strings.reduce_join(parts, axis=-1)
    length = tf.strings.length(joined)
    return tf.strings.substr(joined, tf.zeros_like(length), length - 1)


def normalize(inputs, lowercase=False, remove_space=True, replace_quotes=False, strip_accents=True,
              accents=COMBINING):
    """`preprocess_text` of the SentencePiece families, in-graph.

    Args:
        inputs: strings (a tensor or anything `tf.convert_to_tensor` takes);
            anything else (token ids) is returned unchanged.
        lowercase: `str.lower()` last.
        remove_space: join runs of (Python) whitespace to one space, strip
            the ends.
        replace_quotes: "``" and "''" -> '"'.
        strip_accents: NFKD, then remove the `accents` characters.
        accents: `COMBINING` or `NONSPACING` (see the module docstring).
    """
    import tensorflow_text as tf_text

    tf = _tf()
    x = tf.convert_to_tensor(inputs)
    if x.dtype != tf.string:
        return inputs
    if remove_space:
        x = tf.strings.regex_replace(x, python_classes()["space"] + "+", " ")
        x = tf.strings.regex_replace(x, "^ | $", "")
    if replace_quotes:
        x = tf.strings.regex_replace(x, "``|''", '"')
    if strip_accents:
        x = tf_text.normalize_utf8(x, "NFKD")
        marks = python_classes()["combining"] if accents == COMBINING else r"\p{Mn}"
        x = tf.strings.regex_replace(x, marks, "")
    if lowercase:
        x = lower_utf8(x)
    return x


def preprocess_text(inputs, lowercase=False, keep_accents=False, xlnet_quotes=False):
    """`preprocess_text` of the SentencePiece families' originals, in-graph, written once: albert
    `tokenization.preprocess_text` (the defaults; `AlbertTokenizer`) and xlnet `prepro_utils.preprocess_text`
    (`xlnet_quotes=True`; `XLNetTokenizer`), the in-graph twin of the Python
    `features_sentencepiece.normalize_sentencepiece_text` (same options).

    Args:
        inputs: strings (a tensor or anything `tf.convert_to_tensor` takes); anything else is returned
            unchanged.
        lowercase: bool, `str.lower()` last (the originals' `lower`).
        keep_accents: bool, skip NFKD and the removal of the combining characters (xlnet's option and
            `transformers`'; albert's original always strips them).
        xlnet_quotes: bool, "``" and "''" -> '"' (xlnet's, before NFKD).
    """
    return normalize(inputs, lowercase=lowercase, remove_space=True, replace_quotes=xlnet_quotes,
                     strip_accents=not keep_accents, accents=COMBINING)


def split_digit_comma(sentence_piece, ids, drop_space=False):
    """`encode_pieces`' re-split of pieces ending in "<digit>," on ragged ids [B, N].

    A piece of two or more characters whose last is "," and the one before a
    (Python `str.isdigit`) digit is encoded again without its comma and any
    "▁", and followed by ",". `drop_space=True` is XLNet's `prepro_utils`
    (and `transformers`' slow tokenizer): when the piece had no leading "▁"
    and the first re-encoded piece has one, the "▁" is taken off it (the
    piece dropped when it was "▁" alone, else looked up again without it,
    `<unk>` when the vocabulary lacks it). `drop_space=False` is ALBERT's
    `tokenization.py`, whose comparison of a str piece with a bytes "▁"
    never holds on Python 3: the "▁" is always kept.
    """
    tf = _tf()
    pieces = sentence_piece.id_to_string(ids.flat_values)
    resplit = tf.strings.regex_full_match(pieces, "(?s).*" + python_classes()["digit"] + ",")
    # Each piece becomes a row: its re-encoding + "," if re-split, else itself.
    stem = tf.strings.regex_replace(pieces, ",$|\u2581", "")
    encoded = sentence_piece.tokenize(tf.where(resplit, stem, ""))  # [] where not
    if drop_space:
        encoded = _drop_leading_space(
            sentence_piece, encoded, resplit & ~tf.strings.regex_full_match(pieces, "(?s)\u2581.*"))
    comma = tf.cast(sentence_piece.string_to_id(","), ids.dtype)
    last = tf.where(resplit, comma, ids.flat_values)[:, None]
    rows = tf.concat([tf.cast(encoded, ids.dtype), last], axis=1)
    return ids.with_flat_values(rows).merge_dims(-2, -1)


def _drop_leading_space(sentence_piece, encoded, rows):
    """The first piece of each of `rows` (bool [P]) of ragged ids `encoded` [P, (k)] without its "▁"."""
    tf = _tf()
    flat = encoded.flat_values
    strings = sentence_piece.id_to_string(flat)
    row_ids = encoded.value_rowids()
    first = tf.range(tf.size(flat, out_type=row_ids.dtype)) == tf.gather(encoded.row_splits, row_ids)
    strip = first & tf.gather(rows, row_ids) & tf.strings.regex_full_match(strings, "(?s)\u2581.*")
    stripped = tf.strings.regex_replace(strings, "^\u2581", "")
    flat = tf.where(strip, tf.cast(sentence_piece.string_to_id(stripped), flat.dtype), flat)
    keep = ~(strip & tf.equal(stripped, ""))
    return tf.ragged.boolean_mask(encoded.with_flat_values(flat), encoded.with_flat_values(keep))


def tokenize_tf(layer, inputs, drop_space=False, preprocess=None):
    """A keras-hub `SentencePieceTokenizer._tokenize_tf` with the digit-comma re-split (ALBERT, XLNet).

    `inputs` are strings, one or a batch. By default `layer`'s text preprocessing has been done (`tokenize`).
    With `layer.special_tokens_in_strings`, they are the raw text: it is cut at `layer`'s special tokens
    (`layer._special_ids_in_strings()`, {token: id}), which get their ids, and each piece between is
    preprocessed (`preprocess`) and encoded on its own, as the original pipeline would that piece alone.
    """
    tf = _tf()
    layer._maybe_initialized_tf()
    inputs = tf.convert_to_tensor(inputs)
    unbatched = inputs.shape.rank == 0
    if unbatched:
        inputs = tf.expand_dims(inputs, 0)

    def encode(texts):
        return split_digit_comma(layer._sentence_piece, layer._sentence_piece.tokenize(texts), drop_space)

    if getattr(layer, "special_tokens_in_strings", False):
        tokens = tokenize_around_special_tokens(tf, inputs, layer._special_ids_in_strings(),
                                                lambda texts: encode(preprocess(texts)))
    else:
        tokens = encode(inputs)
    if layer.sequence_length:
        output_shape = tokens.shape.as_list()
        output_shape[-1] = layer.sequence_length
        tokens = tokens.to_tensor(shape=output_shape, default_value=getattr(layer, "pad_token_id", 0))
    if unbatched:
        tokens = tf.squeeze(tokens, 0)
    return tokens


class ReloadsSentencePiece:
    """Mixin for keras-hub `SentencePieceTokenizer` subclasses (ALBERT, XLNet): an eager call after
    `tf.random.set_seed` (which `keras.utils.set_random_seed` calls) still tokenizes.

    Setting TensorFlow's global seed eagerly drops the resource that tensorflow-text's `SentencepieceOp`
    created for the model, and the next eager `tokenize` failed with `NotFoundError: Resource ...
    SentencepieceResource does not exist`. On that error, eagerly, the op is rebuilt from `proto` (keras-hub
    does it when `_sentence_piece` is None) and the call made again; graphs (`tf.data`, exported
    preprocessors) build their own op and are not affected.
    """

    def tokenize(self, inputs):
        return self._with_live_model(super().tokenize, inputs)

    def detokenize(self, inputs):
        return self._with_live_model(super().detokenize, inputs)

    def _with_live_model(self, function, inputs):
        tf = _tf()
        try:
            return function(inputs)
        except tf.errors.NotFoundError:
            if not tf.executing_eagerly() or getattr(self, "_sentence_piece", None) is None:
                raise
            self._sentence_piece = None  # rebuilt from `self.proto` by keras-hub on the next call
            return function(inputs)


class PreprocessesSentencePiece(ReloadsSentencePiece):
    """Mixin for the SentencePiece families' tokenizers (ALBERT, XLNet): the original pipeline in-graph,
    `preprocess_text` before keras-hub's SentencePiece and the digit-comma re-split (`split_digit_comma`)
    after it; with `special_tokens_in_strings`, the raw text cut at the special tokens first and each piece
    between preprocessed alone (`tokenize_tf`).

    A subclass sets its family's options: `drop_space` (`split_digit_comma`'s) and `xlnet_quotes`
    (`preprocess_text`'s) as class attributes, `lowercase` (and `keep_accents`) on the instance.
    """

    drop_space = False
    xlnet_quotes = False
    keep_accents = False

    def tokenize(self, inputs):
        if self.special_tokens_in_strings:  # preprocessed piece by piece in `_tokenize_tf`
            return super().tokenize(inputs)
        return super().tokenize(self._preprocess_text(inputs))

    @preprocessing_function
    def _tokenize_tf(self, inputs):
        return tokenize_tf(self, inputs, drop_space=self.drop_space, preprocess=self._preprocess_text)

    def _preprocess_text(self, inputs):
        return preprocess_text(inputs, lowercase=self.lowercase, keep_accents=self.keep_accents,
                               xlnet_quotes=self.xlnet_quotes)
