"""BERT WordPiece tokenizer with BERT's basic tokenization.

keras-hub's `BertTokenizer` (tensorflow-text WordPiece, in-graph) does the
work; this subclass only fixes the defaults so that the pre-tokenization is
the original one: accents are stripped exactly when the vocabulary is uncased
(keras-hub strips them always unless told otherwise), punctuation is split and
each CJK character is its own token.
"""

import keras
import keras_hub


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
            lowercase=lowercase,
            strip_accents=strip_accents,
            split_on_cjk=True,
            **kwargs,
        )


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertPreprocessor(keras_hub.models.BertTextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `segment_ids`, `padding_mask`.

    Packs `[CLS] A [SEP] B [SEP]`, truncating the longer segment first
    (`truncate="round_robin"`), in-graph.
    """
