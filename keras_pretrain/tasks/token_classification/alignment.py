"""How a tokenizer's pieces align to words for token classification: the one place that decides it.

Each word is tokenized alone. WordPiece and SentencePiece mark a word's first piece themselves (no `##`; `▁`), so
a word is tokenized as it is. Byte-level BPE (RoBERTa, GPT-2) carries the space before a word in the piece (`Ġword`):
a word inside a text reads after a space, so each word is tokenized after one (transformers'
`is_split_into_words` with `add_prefix_space=True`). `word_prefix(tokenizer)` says which; the Python features
(`features.word_tokenizer`) and the serving graph (`serving.export_tagging_serving`) both ask it.
"""

from keras_pretrain.models import pieces


def word_prefix(tokenizer):
    """The text each word is tokenized after: `" "` for a byte-level BPE tokenizer, `""` otherwise (what the
    tokenizer's pieces declare, `keras_pretrain.models.pieces`)."""
    return pieces.of(tokenizer, default=pieces.WORDPIECE).word_prefix


def prefix_space(tokenizer):
    """Whether each word is tokenized after a space (`word_prefix`)."""
    return word_prefix(tokenizer) == " "


def graph_words(tf, tokenizer, words):
    """The strings the tokenizer reads for `words` (a string tensor), in a TensorFlow graph."""
    prefix = word_prefix(tokenizer)
    return tf.strings.join([prefix, words]) if prefix else words


def word_tokenizer(tokenizer, sentences):
    """`word -> list of ids` for the words of `sentences` (lists of words), tokenized as `word_prefix` says
    (`features.word_tokenizer`)."""
    from keras_pretrain.tasks.token_classification.features import word_tokenizer as tokenize_words

    return tokenize_words(tokenizer, sentences, prefix_space=prefix_space(tokenizer))
