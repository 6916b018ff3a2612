"""ELMo's keras-hub preprocessor: strings (one or two segments) -> `char_ids`."""

import functools

import keras
import keras_hub

from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone
from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper
from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.models.preset_preprocessor import sequence_length_property
from keras_pretrain.models.sentencepiece_text import char_class
from keras_pretrain.models.sentencepiece_text import python_classes
from keras_pretrain.text import MAX_CHARACTERS

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - TF is a hard dependency
    tf = None

SEPARATOR = "|||"  # between the words of a pair (`keras_pretrain.data.packing.ELMO.separator`)
_CJK = r"\x{3400}-\x{9fff}\x{f900}-\x{faff}"


@functools.lru_cache(maxsize=None)
def _patterns():
    """`keras_pretrain.text.split_words` in RE2: (delimiters, kept delimiters).

    Each CJK ideograph and each other character that is neither a word
    character nor whitespace is a word alone; runs of word characters are
    words; whitespace separates. Word characters and whitespace are Python's
    own (`re`'s `\\w` = `str.isalnum()` or "_", `\\s` = `str.isspace()`), read
    from this Python's Unicode tables: RE2's `\\s` is ASCII only and lacks
    U+000B, and its `\\p{L}` / `\\p{N}` follow a newer Unicode than Python's.
    """
    word = char_class(lambda c: c.isalnum() or c == "_")[1:-1]
    space = python_classes()["space"][1:-1]
    keep = rf"[{_CJK}]|[^{word}{space}]"
    return rf"[{space}]+|{keep}", keep


def graph_split_words(texts):
    """Ragged words of each string (1-D string tensor), as `keras_pretrain.text.split_words`, in-graph.

    tensorflow-text's `regex_split` ends each string at its first NUL, so the
    strings are cut at their NULs first, each part split, and each NUL (a
    word of its own for `split_words`) put back between its parts' words.
    """
    import tensorflow_text as tf_text

    delimiters, keep = _patterns()
    parts = tf.strings.split(texts, "\x00")  # [B, (parts)]; NUL as a tensor value, not an attribute
    words = tf_text.regex_split(parts.flat_values, delimiters, keep)  # [P, (words)]
    index = tf.range(tf.shape(parts.flat_values, out_type=tf.int64)[0])
    before_nul = index < tf.gather(parts.row_limits(), parts.value_rowids()) - 1  # not its row's last part
    nul = tf.RaggedTensor.from_row_lengths(
        tf.fill(tf.reduce_sum(tf.cast(before_nul, tf.int32))[None], "\x00"), tf.cast(before_nul, tf.int64))
    return parts.with_flat_values(tf.concat([words, nul], axis=1)).merge_dims(1, 2)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoPreprocessor(keras_hub.models.TextClassifierPreprocessor):
    """Strings (one or two segments) -> `char_ids` (B, sequence_length, max_characters), in-graph.

    Words are split as `keras_pretrain.models.elmo.split_words` splits them (runs of letters, digits and
    "_"; each CJK ideograph and each punctuation mark alone; Unicode spaces separate), in RE2
    (`graph_split_words`); a pair becomes one sequence `A ||| B` (the family's packing,
    `keras_pretrain.data.packing.ELMO`); `ElmoCharacterMapper` adds `<S>` / `</S>` and writes each word's
    character ids, truncating to `sequence_length` tokens (boundaries kept).
    These are the inputs of the family's text preprocessor (`keras_pretrain.models.text_preprocessor.
    ElmoTextPreprocessor`), which `ElmoClassifier` reads (its real tokens: rows with any non-zero id).

    Args:
        sequence_length: int. Tokens per row, `<S>` and `</S>` included.
        max_characters: int. Characters per token (the backbone's `max_characters`, 50).
        tokenizer: an `ElmoCharacterMapper` (default: one with the two arguments above).

    Example:
    ```python
    classifier = ElmoClassifier(backbone, num_classes=2, preprocessor=ElmoPreprocessor(sequence_length=32))
    classifier.fit(["a good film", "a bad film"], [1, 0])
    ```
    """

    backbone_cls = ElmoBackbone
    tokenizer_cls = ElmoCharacterMapper

    def __init__(self, tokenizer=None, sequence_length=512, max_characters=MAX_CHARACTERS, **kwargs):
        kwargs.pop("truncate", None)
        if tokenizer is None:
            tokenizer = ElmoCharacterMapper(max_characters=max_characters, sequence_length=sequence_length)
        super().__init__(tokenizer, sequence_length=sequence_length, **kwargs)

    @classmethod
    def _add_missing_kwargs(cls, loader, kwargs):
        """keras-hub's `from_preset`: the backbone's `max_characters` (there is no tokenizer file)."""
        config = loader.config.get("config") or {}
        if "tokenizer" not in kwargs:
            kwargs.setdefault("max_characters", int(config.get("max_characters", MAX_CHARACTERS)))
        return kwargs

    def build(self, input_shape):
        self.built = True

    @preprocessing_function
    def call(self, x, y=None, sample_weight=None):
        x = x if isinstance(x, tuple) else (x,)
        segments = [tf.convert_to_tensor(segment, tf.string) for segment in x]
        unbatched = segments[0].shape.rank == 0
        words = [graph_split_words(tf.reshape(segment, [-1])) for segment in segments]
        if len(words) == 2:
            rows = words[0].nrows()
            separator = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), SEPARATOR))
            words = [tf.concat([words[0], separator, words[1]], axis=1)]
        char_ids = self.tokenizer(words[0])
        if unbatched:
            char_ids = char_ids[0]
        return keras.utils.pack_x_y_sample_weight({"char_ids": char_ids}, y, sample_weight)

    sequence_length = sequence_length_property("tokenizer")

    def get_config(self):
        config = super().get_config()
        config.pop("truncate", None)
        config["max_characters"] = self.tokenizer.max_characters
        return config
