"""BERT WordPiece tokenizer with BERT's basic tokenization.

keras-hub's `BertTokenizer` (tensorflow-text WordPiece, in-graph) does the
work; this subclass fixes two differences from the original `BasicTokenizer`
that change token ids:
- keras-hub strips accents always unless told otherwise; BERT strips them
  exactly when the vocabulary is uncased;
- keras-hub lower-cases with Unicode case folding (NFKC), which turns the
  full-width punctuation common in Chinese text ("：", "，") into ASCII and
  so into [UNK]; BERT uses plain lower-casing. We lower-case first, in-graph,
  with `tf.strings.lower(..., encoding="utf-8")` and let keras-hub do the rest.
"""

import keras
import keras_hub
from keras_hub.src.utils.tensor_utils import preprocessing_function

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - TF is a hard dependency
    tf = None


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertTokenizer(keras_hub.models.BertTokenizer):
    """WordPiece tokenizer for BERT-style vocabularies.

    Args:
        vocabulary: a `vocab.txt` path or a list of tokens.
        lowercase: bool. True for uncased vocabularies (lower-cases and strips
            accents), False for cased ones (keeps both).
        strip_accents: bool or None. None follows `lowercase`, as the
            original `BasicTokenizer`.
    """

    def __init__(self, vocabulary=None, lowercase=False, strip_accents=None, **kwargs):
        if strip_accents is None:
            strip_accents = lowercase
        kwargs.pop("split_on_cjk", None)
        super().__init__(
            vocabulary=vocabulary,
            lowercase=False,  # done in `tokenize`, the way BERT does it
            strip_accents=strip_accents,
            split_on_cjk=True,
            **kwargs,
        )
        self.bert_lowercase = lowercase

    @preprocessing_function
    def tokenize(self, inputs):
        if self.bert_lowercase:
            inputs = tf.strings.lower(inputs, encoding="utf-8")
        return super().tokenize(inputs)

    def get_config(self):
        config = super().get_config()
        config["lowercase"] = self.bert_lowercase
        return config


def preset_sequence_length(preset):
    """The backbone's `max_sequence_length` in a preset folder (None if it has none)."""
    from keras_hub.src.utils.preset_utils import get_preset_loader

    config = get_preset_loader(preset).config
    return (config.get("config") or {}).get("max_sequence_length")


class PresetPreprocessorMixin:
    """`from_preset` for our preprocessors: the model's own length by default.

    keras-hub builds a preprocessor from a preset that holds no
    `preprocessor.json` with its class default (`sequence_length=512`), and
    looks for a keras-hub subclass matching the backbone class (there is none
    for our backbones). Here the preprocessor is built from the preset's
    tokenizer with `sequence_length` = the backbone's `max_sequence_length`
    (its position count), unless given; a saved `preprocessor.json` keeps
    its own length.
    """

    @classmethod
    def from_preset(cls, preset, config_file="preprocessor.json", **kwargs):
        from keras_hub.src.utils.preset_utils import check_file_exists
        from keras_hub.src.utils.preset_utils import get_preset_loader

        loader = get_preset_loader(preset)
        if "sequence_length" not in kwargs and not check_file_exists(preset, config_file):
            length = preset_sequence_length(preset)
            if length:
                kwargs["sequence_length"] = int(length)
        return loader.load_preprocessor(cls, config_file, **kwargs)


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
