"""BERT WordPiece tokenizer, giving the ids of Google's `FullTokenizer`.

keras-hub's `BertTokenizer` (tensorflow-text `FastWordpieceTokenizer`,
in-graph) does the splitting and the WordPiece lookup; this subclass first
normalises the text the way the original `BasicTokenizer` does, where
keras-hub / tensorflow-text differ (each of these changes token ids):

- control and format characters (categories Cc, Cf: NUL, \\x07, U+200B,
  U+FEFF, ...) and U+FFFD are deleted (keras-hub splits words on them);
- every Unicode space separator (Zs: U+00A0, U+2009, U+3000, ...), tab,
  newline and U+2028 / U+2029 become a space (keras-hub splits on ASCII
  whitespace only);
- lower-casing is Python's `str.lower` (`tf.strings.lower`, after the NUL
  characters are gone: it stops at the first NUL), not keras-hub's Unicode
  case folding with NFKC, which turns the full-width punctuation common in
  Chinese text ("：", "，") into ASCII and so into [UNK];
- accents are stripped (NFD, then marks removed) exactly when the
  vocabulary is uncased, as the original (keras-hub: always by default);
- a word longer than 200 *characters* is [UNK] (`max_input_chars_per_word`);
  tensorflow-text counts 100 *bytes*, so a 40-character Thai word would be
  [UNK] there.

Literal special tokens in the text (`[CLS]`, `[SEP]`, `[MASK]`, `[PAD]`,
`[UNK]`) are text, as in the original (`[MASK]` -> `[`, `mask`, `]` when
uncased). `special_tokens_in_strings=True` reads them as their ids: the raw
text is cut at each (case-sensitively, before the normalisation, as
`transformers` does; keras-hub's own option matches after its lower-casing
would have turned `[MASK]` into `[mask]`) and each piece between is
tokenized on its own (`keras_pretrain.models.special_tokens`).

The same graph runs eagerly and inside `tf.function` / `tf.data` / the
exported preprocessor SavedModel, so all of them give the same ids.
(Characters added to Unicode after Python's `unicodedata` tables may be
classified differently by TensorFlow's newer tables; none is in a published
vocabulary.)
"""

import keras
import keras_hub

# private API: keras-hub's WordPiece splitting (the pre-tokenizer of its `WordPieceTokenizer`: CJK and
# punctuation split) has no public form; `_tokenize_tf` below runs it after BERT's own normalisation.
from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize

from keras_pretrain.models.preset_preprocessor import PresetPreprocessorMixin
from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.models.special_tokens import present_special_tokens
from keras_pretrain.models.special_tokens import tokenize_around_special_tokens

try:
    import tensorflow as tf
    import tensorflow_text as tf_text
except ImportError:  # pragma: no cover - TF is a hard dependency
    tf = tf_text = None

MAX_INPUT_CHARS_PER_WORD = 200  # the original WordpieceTokenizer's limit
# tensorflow-text's FastWordpieceTokenizer refuses a vocabulary token longer than this (UTF-8 bytes, "##" aside).
MAX_TOKEN_BYTES = 256


def overlong_tokens(tokens, suffix="##"):
    """The tokens of a vocabulary longer than `MAX_TOKEN_BYTES` UTF-8 bytes (without the suffix indicator)."""
    return [t for t in tokens if len((t[len(suffix):] if t.startswith(suffix) else t).encode("utf-8"))
            > MAX_TOKEN_BYTES]
# The original's whitespace after `_clean_text`: Zs, \t \n \r, and what
# Python's `str.split()` also splits on (U+2028, U+2029; the rest of its
# whitespace is Cc, deleted first).
WHITESPACE = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]"
DELETED = r"[\p{Cc}\p{Cf}\x{FFFD}]"  # NUL included


def normalize(inputs, lowercase):
    """`BasicTokenizer._clean_text` (+ `str.lower`), in-graph."""
    x = tf.strings.regex_replace(inputs, WHITESPACE, " ")
    x = tf.strings.regex_replace(x, DELETED, "")
    if lowercase:
        x = tf.strings.lower(x, encoding="utf-8")
    return x


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertTokenizer(keras_hub.models.BertTokenizer):
    """WordPiece tokenizer for BERT-style vocabularies (ids of `FullTokenizer`).

    Args:
        vocabulary: a `vocab.txt` path or a list of tokens.
        lowercase: bool. True for uncased vocabularies (lower-cases and strips
            accents, `do_lower_case=True`), False for cased ones (keeps both).
        strip_accents: bool or None. None follows `lowercase`, as the
            original `BasicTokenizer`.
        special_tokens_in_strings: bool. False (the default): `[CLS]`,
            `[SEP]`, `[MASK]`, ... written in the text are text; True: the
            text is cut at each special token the vocabulary holds (`[PAD]`,
            `[UNK]`, `[CLS]`, `[SEP]`, `[MASK]`, and keras-hub's
            `special_tokens` if given), which gets its id, and the pieces
            between are tokenized one by one.

    Example:
    ```python
    tokenizer = BertTokenizer("uncased_L-12_H-768_A-12/vocab.txt", lowercase=True)
    tokenizer(["Hello\u3000world!"])  # ragged ids, in-graph
    ```
    """

    squad_pipeline = "wordpiece"  # keras_pretrain.tasks.question_answering.pipelines

    def __init__(self, vocabulary=None, lowercase=False, strip_accents=None, special_tokens_in_strings=False,
                 **kwargs):
        if strip_accents is None:
            strip_accents = lowercase
        kwargs.pop("split_on_cjk", None)
        # One code path (TF ops) eagerly and in graphs: the ids cannot differ.
        kwargs.setdefault("_allow_python_workflow", False)
        self.bert_lowercase = lowercase
        self._vocabulary_source = vocabulary if isinstance(vocabulary, str) else "the vocabulary"
        super().__init__(
            vocabulary=vocabulary,
            lowercase=False,  # done in `normalize`, the way BERT does it
            strip_accents=strip_accents,
            split_on_cjk=True,
            special_tokens_in_strings=bool(special_tokens_in_strings),  # saved by keras-hub's `get_config`
            **kwargs,
        )

    def _set_vocabulary_tf(self):
        from keras_pretrain.errors import ConfigError

        long = overlong_tokens(self.vocabulary, self.suffix_indicator)
        if long:
            token = long[0]
            size = len(token.removeprefix(self.suffix_indicator).encode("utf-8"))
            raise ConfigError(
                f"{getattr(self, '_vocabulary_source', 'the vocabulary')}: the token {token[:40]!r}... is "
                f"{size} UTF-8 bytes ({self.suffix_indicator!r} aside); tensorflow-text's WordPiece tokenizer holds tokens of "
                f"at most {MAX_TOKEN_BYTES} bytes ({len(long)} such token(s)). Remove them (the words they spell "
                "are then split into pieces or [UNK]) or learn the vocabulary again: recipes.pretrain never "
                "writes one.")
        # Words are limited by characters in `_tokenize_tf`; any word of at
        # most 200 characters fits in 4 * 200 UTF-8 bytes.
        self._fast_word_piece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary,
            token_out_type=self.compute_dtype,
            suffix_indicator=self.suffix_indicator,
            unknown_token=self.oov_token,
            max_bytes_per_word=4 * MAX_INPUT_CHARS_PER_WORD,
            no_pretokenization=True,
            support_detokenization=True,
        )

    @preprocessing_function
    def _tokenize_tf(self, inputs):
        self._maybe_initialized_tf()
        inputs = tf.convert_to_tensor(inputs)
        unbatched = inputs.shape.rank == 0
        if unbatched:
            inputs = tf.expand_dims(inputs, 0)
        if self.special_tokens_in_strings:
            tokens = tokenize_around_special_tokens(tf, inputs, self._special_ids_in_strings(), self._word_pieces)
        else:
            tokens = self._word_pieces(inputs)
        if self.sequence_length:
            output_shape = tokens.shape.as_list()
            output_shape[-1] = self.sequence_length
            tokens = tokens.to_tensor(shape=output_shape)
        if unbatched:
            tokens = tf.squeeze(tokens, 0)
        return tokens

    def _word_pieces(self, inputs):
        """The WordPiece ids (ragged `[B, (ids)]`) of a 1-D string tensor, special tokens as text."""
        words = self.basic_words(inputs)
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > MAX_INPUT_CHARS_PER_WORD
        words = words.with_flat_values(tf.where(too_long, self.oov_token, words.flat_values))
        return self._fast_word_piece.tokenize(words).merge_dims(-2, -1)

    def _special_ids_in_strings(self):
        """{token: id} of the special tokens `special_tokens_in_strings` reads."""
        tokens = [self.pad_token, self.oov_token, self.cls_token, self.sep_token, self.mask_token]
        return present_special_tokens(self, tokens + list(self._init_special_tokens or []))

    def basic_words(self, inputs, special_tokens_pattern=None):
        """The words of the original `BasicTokenizer` (cleaned, lower-cased and accents stripped as the
        vocabulary's casing says, split on whitespace, punctuation and CJK ideographs), ragged `[B, (words)]`
        strings, in-graph; special tokens matching `special_tokens_pattern` kept whole."""
        text = normalize(inputs, self.bert_lowercase)
        return pretokenize(text, False, self.strip_accents, True, True, special_tokens_pattern)

    def get_config(self):
        config = super().get_config()
        config["lowercase"] = self.bert_lowercase
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertPreprocessor(PresetPreprocessorMixin, keras_hub.models.BertTextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `segment_ids`, `padding_mask`.

    Packs `[CLS] A [SEP] B [SEP]`, truncating the longer segment first
    (`truncate="round_robin"`), in-graph. Call it on one batch of strings,
    or on a pair as `preprocessor((first, second), y=None)` (keras-hub reads
    a bare 2-tuple as `(x, y)`). `BertPreprocessor.from_preset(folder)` (a
    BERT, ERNIE or DistilBERT preset) packs to the backbone's
    `max_sequence_length` unless `sequence_length` is given.
    """
