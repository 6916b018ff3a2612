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
`[SEP]`=3, `[MASK]`=4. Written in the text they are text, as in the original
(SentencePiece never matches its control symbols in the input);
`special_tokens_in_strings=True` reads them as their ids (the text cut at
each, the pieces between preprocessed and encoded one by one).
"""

import functools

import keras
import keras_hub

from keras_pretrain.models import sentencepiece_text
from keras_pretrain.models.preset_preprocessor import PresetPreprocessorMixin
from keras_pretrain.models.sentencepiece_text import PreprocessesSentencePiece
from keras_pretrain.models.sentencepiece_text import lower_utf8  # noqa: F401 - re-exported
from keras_pretrain.models.sentencepiece_text import python_classes  # noqa: F401 - re-exported
from keras_pretrain.models.sentencepiece_text import split_digit_comma  # noqa: F401 - re-exported
from keras_pretrain.models.special_tokens import present_special_tokens

# The published models' unknown piece (keras-hub's ALBERT tokenizer has no attribute for it).
UNKNOWN_PIECE = "<unk>"


# The original `preprocess_text(inputs, lower=lowercase)`, in-graph (what `AlbertTokenizer` runs, through
# `PreprocessesSentencePiece`): `sentencepiece_text.preprocess_text` with ALBERT's options (no quote replacement;
# `keep_accents=True`, the `transformers` option, skips NFKD and the removal of combining characters, which the
# original always does), lower-cased by default as the published models.
preprocess_text = functools.partial(sentencepiece_text.preprocess_text, lowercase=True)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertTokenizer(PreprocessesSentencePiece, keras_hub.models.AlbertTokenizer):
    """SentencePiece tokenizer for ALBERT v2 (`30k-clean.model`), in-graph.

    Gives the ids of the original `encode_ids(sp, preprocess_text(text,
    lower=lowercase))` (see the module docstring).

    Args:
        proto: path to the SentencePiece model file or its serialized bytes.
        lowercase: bool. Lower-case the text first (`do_lower_case`; True for
            the published models).
        keep_accents: bool. Keep accents (False in the original).
        special_tokens_in_strings: bool. False (the default): `[CLS]`,
            `[SEP]`, `[MASK]`, `<pad>`, `<unk>` written in the text are text;
            True: the text is cut at each (those the model holds), which gets
            its id, and each piece between is tokenized as it would be alone.

    Example:
    ```python
    tokenizer = AlbertTokenizer("albert_base/30k-clean.model")
    tokenizer(["Hello world!"])  # ragged ids
    ```
    """

    squad_pipeline = "sentencepiece"  # keras_pretrain.tasks.question_answering.pipelines

    def __init__(self, proto=None, lowercase=True, keep_accents=False, special_tokens_in_strings=False, **kwargs):
        kwargs.setdefault("_allow_python_workflow", False)
        self.lowercase = lowercase
        self.keep_accents = keep_accents
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        super().__init__(proto=proto, **kwargs)

    def _special_ids_in_strings(self):
        """{token: id} of the special tokens `special_tokens_in_strings` reads."""
        return present_special_tokens(
            self, [self.cls_token, self.sep_token, self.mask_token, self.pad_token, UNKNOWN_PIECE])

    def get_config(self):
        config = super().get_config()
        config.update(
            {"lowercase": self.lowercase, "keep_accents": self.keep_accents,
             "special_tokens_in_strings": self.special_tokens_in_strings}
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
