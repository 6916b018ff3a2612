"""ALBERT tokenizers: SentencePiece (v2, English) and WordPiece (zh).

The English models use the SentencePiece model `30k-clean.model`. The
original pipeline (google-research/albert `tokenization.py`) is
`encode_ids(sp, preprocess_text(text, lower=do_lower_case))`:

- `preprocess_text`: whitespace runs (Python's `str.split()`) become one
  space and the ends are stripped; NFKD; combining characters
  (`unicodedata.combining`) removed; `str.lower()` when uncased. It does NOT
  turn "``" or "''" into '"' (XLNet's and `transformers`' do);
- `encode_pieces`: SentencePiece, then every piece ending in "<digit>,"
  (e.g. "▁9,") is encoded again without its comma and any "▁", and followed
  by "," (`"▁9,"` -> `"▁", "9", ","` or `"▁9", ","`, as the model has
  them). The original compares str pieces with a bytes "▁" on Python 3, so
  the leading "▁" of the re-encoded piece is always kept; we do the same
  (the slow `transformers` tokenizer drops it when the piece had none; its
  fast tokenizer does no re-split at all).

keras-hub's `AlbertTokenizer` runs SentencePiece (tensorflow-text, in-graph)
and none of this; this subclass adds both with TF string ops, in-graph, so
eager calls, `tf.data` and the exported preprocessor give the same ids. The
Chinese models use BERT's WordPiece vocabulary:
`keras_pretrain.models.bert.BertTokenizer` (uncased).

Special ids of the published vocabulary: `<pad>`=0, `<unk>`=1, `[CLS]`=2,
`[SEP]`=3, `[MASK]`=4.
"""

import functools
import sys
import unicodedata

import keras
import keras_hub
from keras_hub.src.utils.tensor_utils import preprocessing_function

from keras_pretrain.models.bert.bert_tokenizer import PresetPreprocessorMixin


def _tf():
    import tensorflow as tf

    return tf


def _char_class(predicate):
    """An RE2 character class of the code points where `predicate(chr(cp))` holds."""
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
        "space": _char_class(str.isspace),
        "combining": _char_class(unicodedata.combining),
        "digit": _char_class(str.isdigit),
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


def preprocess_text(inputs, lowercase=True, keep_accents=False):
    """The original `preprocess_text(inputs, lower=lowercase)`, in-graph.

    `keep_accents=True` (the `transformers` option) skips NFKD and the
    removal of combining characters; the original always does both.
    """
    import tensorflow_text as tf_text

    tf = _tf()
    x = tf.convert_to_tensor(inputs)
    if x.dtype != tf.string:
        return inputs
    classes = python_classes()
    x = tf.strings.regex_replace(x, classes["space"] + "+", " ")
    x = tf.strings.regex_replace(x, "^ | $", "")
    if not keep_accents:
        x = tf_text.normalize_utf8(x, "NFKD")
        x = tf.strings.regex_replace(x, classes["combining"], "")
    if lowercase:
        x = lower_utf8(x)
    return x


def split_digit_comma(sentence_piece, ids):
    """`encode_pieces`' re-split of pieces ending in "<digit>," on ragged ids [B, N]."""
    tf = _tf()
    pieces = sentence_piece.id_to_string(ids.flat_values)
    resplit = tf.strings.regex_full_match(pieces, ".*" + python_classes()["digit"] + ",")
    # Each piece becomes a row: its re-encoding + "," if re-split, else itself.
    stem = tf.strings.regex_replace(pieces, ",$|\u2581", "")
    encoded = sentence_piece.tokenize(tf.where(resplit, stem, ""))  # [] where not
    comma = tf.cast(sentence_piece.string_to_id(","), ids.dtype)
    last = tf.where(resplit, comma, ids.flat_values)[:, None]
    rows = tf.concat([tf.cast(encoded, ids.dtype), last], axis=1)
    return ids.with_flat_values(rows).merge_dims(-2, -1)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertTokenizer(keras_hub.models.AlbertTokenizer):
    """SentencePiece tokenizer for ALBERT v2 (`30k-clean.model`), in-graph.

    Gives the ids of the original `encode_ids(sp, preprocess_text(text,
    lower=lowercase))` (see the module docstring).

    Args:
        proto: path to the SentencePiece model file or its serialized bytes.
        lowercase: bool. Lower-case the text first (`do_lower_case`; True for
            the published models).
        keep_accents: bool. Keep accents (False in the original).

    Example:
    ```python
    tokenizer = AlbertTokenizer("albert_base/30k-clean.model")
    tokenizer(["Hello world!"])  # ragged ids
    ```
    """

    def __init__(self, proto=None, lowercase=True, keep_accents=False, **kwargs):
        kwargs.setdefault("_allow_python_workflow", False)
        self.lowercase = lowercase
        self.keep_accents = keep_accents
        super().__init__(proto=proto, **kwargs)

    def tokenize(self, inputs):
        return super().tokenize(
            preprocess_text(inputs, self.lowercase, self.keep_accents)
        )

    @preprocessing_function
    def _tokenize_tf(self, inputs):
        tf = _tf()
        self._maybe_initialized_tf()
        inputs = tf.convert_to_tensor(inputs)
        unbatched = inputs.shape.rank == 0
        if unbatched:
            inputs = tf.expand_dims(inputs, 0)
        tokens = split_digit_comma(self._sentence_piece, self._sentence_piece.tokenize(inputs))
        if self.sequence_length:
            output_shape = tokens.shape.as_list()
            output_shape[-1] = self.sequence_length
            tokens = tokens.to_tensor(shape=output_shape, default_value=self.pad_token_id)
        if unbatched:
            tokens = tf.squeeze(tokens, 0)
        return tokens

    def get_config(self):
        config = super().get_config()
        config.update(
            {"lowercase": self.lowercase, "keep_accents": self.keep_accents}
        )
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertPreprocessor(PresetPreprocessorMixin, keras_hub.models.TextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `segment_ids`, `padding_mask`.

    Packs `[CLS] A [SEP] B [SEP]` (segment ids 0 for `[CLS] A [SEP]`, 1 for
    `B [SEP]`), truncating round-robin, padding with `<pad>` (id 0), in-graph.
    Works with `AlbertTokenizer` and with the WordPiece `BertTokenizer` of the
    zh models (both expose `cls`, `sep` and `pad` special tokens).

    Args:
        tokenizer: an `AlbertTokenizer` or `BertTokenizer`.
        sequence_length: int. Packed length. `from_preset(folder)` defaults
            it to the backbone's `max_sequence_length` (a run's `preset/`
            folder: the model's own positions, not 512).
    """

    backbone_cls = None
    tokenizer_cls = AlbertTokenizer
