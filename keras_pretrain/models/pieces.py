"""How a tokenizer's pieces mark words: the one place that tells a tokenizer's kind.

Three conventions exist among the families' in-graph tokenizers:
- `WORDPIECE` (BERT, ERNIE, DistilBERT): a piece continuing a word starts with `##`;
- `SENTENCEPIECE` (ALBERT, XLNet): a piece starting a word starts with `▁`;
- `BYTE_LEVEL` (RoBERTa, GPT-2's BPE): the space before a word is part of its first piece (`Ġword`), so a word
  inside a text is tokenized after a space (transformers' `add_prefix_space=True`).

`of(tokenizer)` answers with the tokenizer's own declaration (a `piece_convention` class attribute) or, for a
tokenizer that declares none, with keras-hub's base class it derives from. Every other module asks this one
(tagging alignment, word boundaries of the TF-Hub preprocessors, the text preprocessors); a type switch on
tokenizer classes anywhere else is flagged by tests/test_no_name_comparisons.py.
"""

import dataclasses

from keras_pretrain.errors import ConfigError

# SentencePiece's space marker, and the byte-level BPE's (GPT-2 / RoBERTa's byte-to-unicode map: space, tab,
# newline, carriage return, form feed, vertical tab).
SENTENCEPIECE_SPACE = "\u2581"
BPE_SPACES = tuple(chr(256 + b) for b in range(33) if chr(b).isspace()) + ("\u0120",)


@dataclasses.dataclass(frozen=True)
class PieceConvention:
    """How the pieces of one kind of tokenizer mark words.

    Attributes:
        name: for messages.
        continuation: a piece with this prefix continues a word (WordPiece's `##`), or None.
        word_start: a piece with one of these prefixes starts a word (SentencePiece's `▁`, byte-level spaces),
            or None.
        word_prefix: the text a word is tokenized after when it is tokenized alone (`" "` for byte-level BPE).
    """

    name: str
    continuation: str = None
    word_start: tuple = None
    word_prefix: str = ""

    @property
    def byte_level(self):
        return self.word_prefix == " "

    def starts_word(self, piece, continuation=None):
        """Whether `piece` begins a word (`continuation`: the tokenizer's own suffix indicator, if any)."""
        if self.word_start is not None:
            return piece.startswith(self.word_start)
        return not piece.startswith(continuation or self.continuation)


WORDPIECE = PieceConvention("wordpiece", continuation="##")
SENTENCEPIECE = PieceConvention("sentencepiece", word_start=(SENTENCEPIECE_SPACE,))
BYTE_LEVEL = PieceConvention("byte_level", word_start=BPE_SPACES, word_prefix=" ")


def of(tokenizer, default=None):
    """The `PieceConvention` of `tokenizer`: its class's `piece_convention`, else by keras-hub's base class
    (WordPiece, SentencePiece, byte-level BPE); `default` (or a ConfigError) for any other tokenizer."""
    import keras_hub

    declared = getattr(type(tokenizer), "piece_convention", None)
    if isinstance(declared, PieceConvention):
        return declared
    for base, convention in ((keras_hub.tokenizers.WordPieceTokenizer, WORDPIECE),
                             (keras_hub.tokenizers.SentencePieceTokenizer, SENTENCEPIECE),
                             (keras_hub.tokenizers.BytePairTokenizer, BYTE_LEVEL)):
        if isinstance(tokenizer, base):
            return convention
    if default is not None:
        return default
    raise ConfigError(f"{type(tokenizer).__name__}: no words level known (WordPiece, SentencePiece or byte-level "
                      "BPE tokenizers only).")
