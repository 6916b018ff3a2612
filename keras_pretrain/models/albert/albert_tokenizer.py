"""ALBERT tokenizers: SentencePiece (v2, English) and WordPiece (zh).

The English models use the SentencePiece model `30k-clean.model` with the
original text preprocessing (`tokenization.preprocess_text`): "``" and "''"
become '"', accents are removed (NFKD, then combining marks dropped) and the
text is lower-cased, all before SentencePiece's own normalisation. keras-hub's
`AlbertTokenizer` runs SentencePiece (tensorflow-text, in-graph) but does no
such preprocessing, so this subclass adds it with TF string ops. The Chinese
models use BERT's WordPiece vocabulary: `keras_pretrain.models.bert.BertTokenizer`.

Special ids of the published vocabulary: `<pad>`=0, `<unk>`=1, `[CLS]`=2,
`[SEP]`=3, `[MASK]`=4.

Not reproduced: the original code (and the slow `transformers` tokenizer)
re-splits a piece ending in "<digit>," (e.g. "9,"), which can change the ids
of such numbers; `transformers`' fast tokenizer does not do it either.
"""

import keras
import keras_hub

from keras_pretrain.models.bert.bert_tokenizer import PresetPreprocessorMixin


def _tf():
    import tensorflow as tf

    return tf


def preprocess_text(inputs, lowercase=True, keep_accents=False):
    """The original ALBERT text preprocessing, in-graph (tf.strings ops)."""
    import tensorflow_text as tf_text

    tf = _tf()
    x = tf.convert_to_tensor(inputs)
    if x.dtype != tf.string:
        return inputs
    x = tf.strings.regex_replace(x, "``|''", '"')
    if not keep_accents:
        x = tf_text.normalize_utf8(x, "NFKD")
        x = tf.strings.regex_replace(x, r"\p{Mn}", "")
    if lowercase:
        x = tf.strings.lower(x, encoding="utf-8")
    return x


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertTokenizer(keras_hub.models.AlbertTokenizer):
    """SentencePiece tokenizer for ALBERT v2 (`30k-clean.model`), in-graph.

    Args:
        proto: path to the SentencePiece model file or its serialized bytes.
        lowercase: bool. Lower-case the text first (True for the published
            uncased models).
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
