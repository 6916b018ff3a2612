"""Special tokens written in the text, read as their ids on request (`special_tokens_in_strings=True`), in-graph.

By default every tokenizer reads `<s>`, `[MASK]`, ... in a string as text, as the original tokenizers do (a
user's text cannot inject separators or masks). With `special_tokens_in_strings=True` (RoBERTa, GPT-1, BERT
and its WordPiece families, ALBERT, XLNet) the text is cut at each special token (matched exactly, case
included, the longest first, before any normalisation); each gets its id and each piece between is
tokenized on its own, exactly as that piece alone would be. `split_at_special_tokens` does the cut (TF ops:
eager calls, `tf.function`, `tf.data` and exported preprocessors cut alike), `tokenize_around_special_tokens`
the whole step for tokenizers that map strings to ragged ids.
"""

import re

# Ends each segment: a byte no UTF-8 text holds.
_END = b"\xff"


def special_tokens_pattern(special_tokens):
    """An RE2 alternation of `special_tokens`, the longest first (so `<s>` never cuts `<sep>` short)."""
    return "|".join(re.escape(t) for t in sorted(special_tokens, key=len, reverse=True))


def split_at_special_tokens(tf, texts, special_tokens):
    """Cut each string of the 1-D string tensor `texts` at the `special_tokens`.

    Returns the segments, a `tf.RaggedTensor` [batch, (segments)] of strings in text order (the special
    tokens, and the non-empty text between them), and a flat bool tensor, True at the special tokens. A string
    holding a 0xFF byte (not UTF-8) is left whole. `special_tokens` must not be empty.
    """
    tokens = list(special_tokens)
    marked = tf.strings.regex_replace(texts, special_tokens_pattern(tokens), _END + rb"\0" + _END)
    whole = tf.strings.split(texts, _END).row_lengths() > 1  # a 0xFF byte of its own: not cut
    segments = tf.strings.split(tf.where(whole, tf.constant(b""), marked), _END)
    # Such a string's single (empty) segment becomes the string.
    starts = tf.boolean_mask(segments.row_starts(), whole)
    text = tf.tensor_scatter_nd_update(segments.flat_values, starts[:, tf.newaxis], tf.boolean_mask(texts, whole))
    special = tf.reduce_any(text[:, tf.newaxis] == tf.constant(tokens)[tf.newaxis, :], axis=1)
    special = special & ~tf.gather(whole, segments.value_rowids())
    kept = special | (text != "")
    segments = tf.ragged.boolean_mask(segments.with_flat_values(text), segments.with_flat_values(kept))
    return segments, tf.boolean_mask(special, kept)


def tokenize_around_special_tokens(tf, texts, special_ids, tokenize):
    """Ragged tokens [batch, (tokens)] of the 1-D string tensor `texts`, the special tokens read as their ids.

    Args:
        tf: the TensorFlow module.
        texts: 1-D string tensor.
        special_ids: dict special token -> its id.
        tokenize: a function of a 1-D string tensor (the pieces between the special tokens) to its ragged
            tokens [pieces, (tokens)]: ids, or strings (then a special token is its own string).
    """
    if not special_ids:  # a vocabulary without special tokens
        return tokenize(texts)
    segments, special = split_at_special_tokens(tf, texts, special_ids)
    flat = segments.flat_values
    plain = tokenize(tf.boolean_mask(flat, ~special))
    if not isinstance(plain, tf.RaggedTensor):
        plain = tf.RaggedTensor.from_tensor(plain)
    plain = plain.with_row_splits_dtype(tf.int64)
    tokens = list(special_ids)
    which = tf.argmax(tf.cast(flat[:, tf.newaxis] == tf.constant(tokens)[tf.newaxis, :], tf.int32), axis=1)
    values = tokens if plain.dtype == tf.string else [special_ids[t] for t in tokens]
    values = tf.gather(tf.constant(values, plain.dtype), tf.boolean_mask(which, special))
    both = tf.concat([plain, tf.RaggedTensor.from_tensor(values[:, tf.newaxis], row_splits_dtype=tf.int64)], 0)
    # Each segment's row in `both`: the plain pieces first, then the special tokens, each in text order.
    order = tf.where(special, plain.nrows() + tf.cumsum(tf.cast(special, tf.int64)) - 1,
                     tf.cumsum(tf.cast(~special, tf.int64)) - 1)
    rows = tf.gather(both, order)
    return tf.RaggedTensor.from_row_splits(rows, segments.row_splits, validate=False).merge_dims(1, 2)


def present_special_tokens(tokenizer, tokens):
    """{token: id} of those of `tokens` (None ones skipped) the tokenizer's vocabulary holds, in order."""
    found = {}
    for token in tokens:
        if not isinstance(token, str) or token in found:
            continue
        try:
            i = tokenizer.token_to_id(token)
        except (KeyError, ValueError):
            continue
        if i is not None and tokenizer.id_to_token(int(i)) == token:  # not the unknown id of a missing token
            found[token] = int(i)
    return found
