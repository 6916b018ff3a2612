"""XLNet SentencePiece tokenizer (in-graph), matching `transformers`' `XLNetTokenizer` ids.

keras-hub has no XLNet tokenizer. This one runs keras-hub's
`SentencePieceTokenizer` (tensorflow-text, in-graph) after XLNet's text
preprocessing, done with TF string ops the way `transformers` does it:
"``" and "''" become '"', then NFKD and accents removed (the `transformers`
tokenizer strips accents whatever `keep_accents` says; so do we), then
lower-casing for uncased models; SentencePiece's own normalisation follows.

Special tokens of the published vocabulary: `<unk>`=0, `<s>`=1, `</s>`=2,
`<cls>`=3, `<sep>`=4, `<pad>`=5, `<mask>`=6, `<eod>`=7, `<eop>`=8.
Sequences are packed `A <sep> <cls>` / `A <sep> B <sep> <cls>` (the class
token last, segment ids 0 / 1 / 2) and padded on the left
(`XLNetPreprocessor`), so that the last position is always `<cls>`.

Not reproduced: the slow `transformers` tokenizer re-splits pieces ending in
"<digit>," (the fast one, which defines the ids here, does not).
"""

import keras
import keras_hub

from keras_pretrain.models.sentencepiece_text import NONSPACING
from keras_pretrain.models.sentencepiece_text import ReloadsSentencePiece
from keras_pretrain.models.sentencepiece_text import normalize


def preprocess_text(inputs, lowercase=False):
    """XLNet text preprocessing, in-graph (tf.strings ops)."""
    return normalize(
        inputs, lowercase=lowercase, remove_space=False, replace_quotes=True,
        strip_accents=True, accents=NONSPACING,
    )


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetTokenizer(ReloadsSentencePiece, keras_hub.tokenizers.SentencePieceTokenizer):
    """SentencePiece tokenizer for XLNet (`spiece.model`), in-graph.

    Args:
        proto: path to the SentencePiece model or its serialized bytes.
        lowercase: bool. Lower-case first (False for the published cased models).

    Example:
    ```python
    tokenizer = XLNetTokenizer("xlnet-base-cased/spiece.model")
    tokenizer(["Hello world!"])  # ragged ids, no special tokens
    ```
    """

    SPECIAL_TOKENS = {
        "unk_token": "<unk>",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "cls_token": "<cls>",
        "sep_token": "<sep>",
        "pad_token": "<pad>",
        "mask_token": "<mask>",
        "eod_token": "<eod>",
        "eop_token": "<eop>",
    }

    def __init__(self, proto=None, lowercase=False, **kwargs):
        kwargs.setdefault("_allow_python_workflow", False)
        self.lowercase = lowercase
        for name, token in self.SPECIAL_TOKENS.items():
            setattr(self, name, token)
        super().__init__(proto=proto, **kwargs)

    def token_id(self, token):
        """Id of `token`, or None when the vocabulary lacks it."""
        vocabulary = self.get_vocabulary()
        return vocabulary.index(token) if token in vocabulary else None

    def tokenize(self, inputs):
        return super().tokenize(preprocess_text(inputs, self.lowercase))

    def get_config(self):
        config = super().get_config()
        config["lowercase"] = self.lowercase
        return config
