"""XLNet SentencePiece tokenizer (in-graph), with the ids of the original XLNet code.

keras-hub has no XLNet tokenizer. This one runs keras-hub's
`SentencePieceTokenizer` (tensorflow-text, in-graph) between the two steps of
the original pipeline (zihangdai/xlnet `prepro_utils.py`,
`encode_ids(sp, preprocess_text(text, lower=...))`), done with TF string ops
(`keras_pretrain.models.sentencepiece_text`), so eager calls, `tf.data` and
an exported preprocessor run the same ops:

- `preprocess_text`: runs of Python whitespace (`str.split()`: U+0085,
  U+000B, U+001C..U+001F, U+3000 ... included) joined to one space and the
  ends stripped; "``" and "''" become '"'; NFKD, then the characters with a
  canonical combining class (`unicodedata.combining`) removed, so spacing
  marks of class 0 (Devanagari, Bengali and Thai vowel signs, U+FE0F) stay;
  `str.lower()` for uncased models;
- `encode_pieces`: a piece ending in "<digit>," is encoded again without the
  comma and any "▁", followed by ","; when the piece had no "▁", the
  first new piece loses its own (`"£3,"` -> `▁ £ 3 ,` where the model has
  those pieces).

`transformers`' slow `XLNetTokenizer` does the same; its fast tokenizer
(`tokenizers`) does no digit-comma re-split, removes the Unicode category Mn
instead of the combining characters and does not split words at U+000B, so
its ids differ on such text. SentencePiece itself is tensorflow-text's, which
breaks exact score ties (a repeated word cut into the same pieces in another
order) as sentencepiece 0.1.99, the line the releases ran on; pip
sentencepiece 0.2.x breaks some of them the other way.

Literal special tokens in the text (`<cls>`, `<sep>`, `<mask>`, ...) are
text, as in the original: SentencePiece never matches its control symbols in
the input (only the model's user-defined symbols, such as the release's
`<eop>`, as SentencePiece itself does). `special_tokens_in_strings=True`
reads them as their ids: the text is cut at each special token
(`SPECIAL_TOKENS`, those the model holds), and each piece between is
preprocessed and encoded on its own.

Special tokens of the published vocabulary: `<unk>`=0, `<s>`=1, `</s>`=2,
`<cls>`=3, `<sep>`=4, `<pad>`=5, `<mask>`=6, `<eod>`=7, `<eop>`=8.
Sequences are packed `A <sep> <cls>` / `A <sep> B <sep> <cls>` (the class
token last, segment ids 0 / 1 / 2) and padded on the left
(`XLNetPreprocessor`), so that the last position is always `<cls>`.
"""

import functools

import keras
import keras_hub

from keras_pretrain.models import sentencepiece_text
from keras_pretrain.models.sentencepiece_text import PreprocessesSentencePiece
from keras_pretrain.models.special_tokens import present_special_tokens


# The original `preprocess_text(inputs, lower=lowercase)`, in-graph (what `XLNetTokenizer` runs, through
# `PreprocessesSentencePiece`): `sentencepiece_text.preprocess_text` with XLNet's quotes.
preprocess_text = functools.partial(sentencepiece_text.preprocess_text, xlnet_quotes=True)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetTokenizer(PreprocessesSentencePiece, keras_hub.tokenizers.SentencePieceTokenizer):
    """SentencePiece tokenizer for XLNet (`spiece.model`), in-graph.

    Gives the ids of the original `encode_ids(sp, preprocess_text(text,
    lower=lowercase))` (see the module docstring).

    Args:
        proto: path to the SentencePiece model or its serialized bytes.
        lowercase: bool. Lower-case first (False for the published cased models).
        special_tokens_in_strings: bool. False (the default): `<s>`, `</s>`,
            `<cls>`, `<sep>`, `<pad>`, `<mask>`, `<unk>`, `<eod>`, `<eop>`
            written in the text are text (as SentencePiece reads them);
            True: the text is cut at each (those the model holds), which gets
            its id, and each piece between is tokenized as it would be alone.

    Example:
    ```python
    tokenizer = XLNetTokenizer("xlnet-base-cased/spiece.model")
    tokenizer(["Hello world!"])  # ragged ids, no special tokens
    ```
    """

    squad_pipeline = "xlnet"  # keras_pretrain.tasks.question_answering.pipelines
    drop_space = True  # `split_digit_comma`: prepro_utils takes the "▁" off (see the module docstring)
    xlnet_quotes = True  # `preprocess_text`: "``" and "''" -> '"'

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

    def __init__(self, proto=None, lowercase=False, special_tokens_in_strings=False, **kwargs):
        kwargs.setdefault("_allow_python_workflow", False)
        self.lowercase = lowercase
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        for name, token in self.SPECIAL_TOKENS.items():
            setattr(self, name, token)
        super().__init__(proto=proto, **kwargs)

    def token_id(self, token):
        """Id of `token`, or None when the vocabulary lacks it."""
        vocabulary = self.get_vocabulary()
        return vocabulary.index(token) if token in vocabulary else None

    def _special_ids_in_strings(self):
        """{token: id} of the special tokens `special_tokens_in_strings` reads."""
        return present_special_tokens(self, [getattr(self, name) for name in self.SPECIAL_TOKENS])

    def get_config(self):
        config = super().get_config()
        config["lowercase"] = self.lowercase
        config["special_tokens_in_strings"] = self.special_tokens_in_strings
        return config
