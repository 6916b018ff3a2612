"""RoBERTa's byte-level BPE tokenizer: GPT-2's `encoder.py` (what fairseq's RoBERTa runs), in TensorFlow ops.

Why not keras-hub's `BytePairTokenizer` as it is: its in-graph pre-tokenizer approximates GPT-2's regex with RE2
(no lookahead, an ASCII `\\s`, a "६" marker that the Devanagari digit six in the text is taken for) and its
`tensorflow-text` split stops at the first NUL of a string, and its eager calls run another code path (the Rust
`tokenizers` with Llama 3's split regex). Against GPT-2's `encoder.py` on 3,200 fuzzed strings that gave 217
differing strings eagerly and 177 in graphs (tests/models/roberta/test_roberta_tokenizer_fuzz.py). Here every call,
eager, `tf.function`, `tf.data` and the exported SavedModel, runs the same TensorFlow ops (see `tokenize_gpt2`), and
keras-hub's vocabulary tables (`byte2unicode`, `merge_ranks`, `token_to_id_map`) are reused.
"""

import keras
import keras_hub
import numpy as np

from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.models.roberta.gpt2_unicode import LETTERS
from keras_pretrain.models.roberta.gpt2_unicode import NUMBERS
from keras_pretrain.models.roberta.gpt2_unicode import WHITESPACE
from keras_pretrain.models.special_tokens import split_at_special_tokens

# GPT-2's pre-tokenizer, `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`, without its
# lookahead (RE2 has none), in two steps. (1) `PRE_TOKENS`: a run of whitespace is taken together with the letters,
# digits or other characters that follow it when its last character is a space, on its own otherwise. (2) Such a
# piece is cut before the last character of its leading whitespace (`LEADING_WHITESPACE`), except a piece of
# whitespace only that ends the text: that is GPT-2's `\s+(?!\S)` (a run keeps its last character for what follows)
# and ` ?\p{L}+` (the space before a word goes with the word). The classes are the `regex` package's (`gpt2_unicode`).
_SPACE = f"[{WHITESPACE}]"
_NOT_SPACE = f"[^{WHITESPACE}]"
_OTHER = f"[^{WHITESPACE}{LETTERS}{NUMBERS}]"
PRE_TOKENS = (
    r"'s|'t|'re|'ve|'m|'ll|'d"
    f"|(?:{_SPACE}* )?[{LETTERS}]+|(?:{_SPACE}* )?[{NUMBERS}]+|(?:{_SPACE}* )?{_OTHER}+|{_SPACE}+"
)
LEADING_WHITESPACE = f"^({_SPACE}*)({_SPACE}{_NOT_SPACE}*)$"
# Ends each piece: a byte no UTF-8 text holds (texts are made valid UTF-8 first).
_END = b"\xff"


def pre_tokenize(tf, texts, special_tokens=()):
    """GPT-2's pre-tokens of a 1-D string tensor: a `tf.RaggedTensor` [batch, (pre-tokens)].

    Invalid UTF-8 becomes U+FFFD first (GPT-2's encoder takes Python strings). With `special_tokens`, the text is
    cut at each (longest first) and each special token is a pre-token of its own; the text between is
    pre-tokenized piece by piece.
    """
    texts = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace")
    if special_tokens:
        segments, special = split_at_special_tokens(tf, texts, special_tokens)
        text = segments.flat_values
    else:
        segments = tf.RaggedTensor.from_tensor(texts[:, tf.newaxis])
        text = segments.flat_values
        special = tf.zeros_like(text, tf.bool)
    # (1) Each piece ends with `_END`; the empty string after the last is dropped.
    marked = tf.where(special, text + _END, tf.strings.regex_replace(text, PRE_TOKENS, rb"\0" + _END))
    pieces = tf.strings.split(marked, _END)[:, :-1]
    # (2) Cut the leading whitespace before its last character, but not in a piece of whitespace ending the text.
    piece = pieces.flat_values
    index = tf.range(tf.size(piece, out_type=tf.int64))
    last = index == tf.gather(pieces.row_limits(), pieces.value_rowids()) - 1
    spaces_only = tf.strings.regex_full_match(piece, f"{_SPACE}+")
    cut = tf.strings.regex_full_match(piece, f"{_SPACE}+{_NOT_SPACE}*") & ~(spaces_only & last)
    head = tf.where(cut, tf.strings.regex_replace(piece, LEADING_WHITESPACE, r"\1"), "")
    tail = tf.where(cut, tf.strings.regex_replace(piece, LEADING_WHITESPACE, r"\2"), piece)
    kept = tf.stack([head != "", tf.ones_like(cut)], axis=1)
    tokens = tf.boolean_mask(tf.stack([head, tail], axis=1), kept)
    per_segment = tf.math.unsorted_segment_sum(
        tf.reduce_sum(tf.cast(kept, tf.int64), axis=1), pieces.value_rowids(), pieces.nrows()
    )
    tokens = tf.RaggedTensor.from_row_lengths(tokens, per_segment, validate=False)
    return tf.RaggedTensor.from_row_splits(tokens, segments.row_splits, validate=False).merge_dims(1, 2)


def merge_pairs(tf, symbols, words, num_words, ranks, no_rank):
    """GPT-2's BPE loop on many words at once: `symbols` (flat strings) of `words` (their word index, sorted).

    Each step merges, in every word, each occurrence of its lowest-ranked adjacent pair, left to right without
    overlaps (as `encoder.py`'s `bpe`); the loop ends when no word has a ranked pair. `ranks` maps "a b" to the
    rank of the merge of a and b (`no_rank` when none).
    """

    def step(symbols, words, _):
        inside = words[:-1] == words[1:]
        rank = ranks.lookup(tf.strings.join([symbols[:-1], symbols[1:]], separator=" "))
        rank = tf.where(inside, rank, no_rank)
        lowest = tf.math.unsorted_segment_min(rank, words[:-1], num_words)
        best = (rank < no_rank) & (rank == tf.gather(lowest, words[:-1]))
        # In a run of overlapping best pairs (a a a ...), the 1st, 3rd, ... are merged.
        position = tf.range(tf.size(best, out_type=tf.int64))
        starts = best & ~tf.concat([[False], best[:-1]], axis=0)
        run = tf.maximum(tf.cumsum(tf.cast(starts, tf.int64)) - 1, 0)
        run_start = tf.gather(tf.concat([tf.where(starts)[:, 0], [0]], axis=0), run)
        take = best & ((position - run_start) % 2 == 0)
        first = tf.concat([take, [False]], axis=0)
        following = tf.concat([symbols[1:], [""]], axis=0)
        merged = tf.where(first, tf.strings.join([symbols, following]), symbols)
        kept = ~tf.concat([[False], take], axis=0)
        return tf.boolean_mask(merged, kept), tf.boolean_mask(words, kept), tf.reduce_any(take)

    symbols, words, _ = tf.while_loop(
        lambda symbols, words, merging: merging,
        step,
        (symbols, words, tf.size(symbols) > 1),
        shape_invariants=(tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])),
    )
    return symbols, words


def tokenize_gpt2(tokenizer, inputs):
    """GPT-2's `encoder.py` on a string tensor (rank 0 or 1) with the tables of a keras-hub `BytePairTokenizer`.

    The ids (or, for a string `dtype`, the BPE pieces) as keras-hub's `BytePairTokenizer.tokenize` returns them:
    ragged [batch, (ids)], dense with `sequence_length`, one row for a scalar.
    """
    import tensorflow as tf

    tokenizer._maybe_initialized_tf()
    inputs = tf.convert_to_tensor(inputs)
    if inputs.shape.rank not in (0, 1):
        raise ValueError(f"{type(tokenizer).__name__}: expected a string or a 1-D batch of strings, got rank "
                         f"{inputs.shape.rank}.")
    unbatched = inputs.shape.rank == 0
    if unbatched:
        inputs = inputs[tf.newaxis]
    if tokenizer.add_prefix_space:
        inputs = tf.strings.join([" ", inputs])
    specials = tuple(tokenizer.unsplittable_tokens or ())
    words = pre_tokenize(tf, inputs, specials)
    unique, index = tf.unique(words.flat_values)
    # Each word's bytes as GPT-2's byte-to-unicode characters; a special token is one symbol.
    if specials:
        special = tf.reduce_any(unique[:, tf.newaxis] == tf.constant(list(specials))[tf.newaxis, :], axis=1)
        characters = tokenizer.byte2unicode.lookup(tf.strings.bytes_split(tf.where(special, "", unique)))
        whole = tf.RaggedTensor.from_row_lengths(tf.boolean_mask(unique, special), tf.cast(special, tf.int64))
        characters = tf.concat([characters, whole], axis=1)
    else:
        characters = tokenizer.byte2unicode.lookup(tf.strings.bytes_split(unique))
    num_words = tf.size(unique, out_type=tf.int64)
    pieces, word = merge_pairs(tf, characters.flat_values, characters.value_rowids(), num_words,
                               tokenizer.merge_ranks, tokenizer.merge_ranks_lookup_default)
    if tokenizer.compute_dtype != tf.string:
        pieces = tf.cast(tokenizer.token_to_id_map.lookup(pieces), tokenizer.compute_dtype)
    pieces = tf.RaggedTensor.from_value_rowids(pieces, word, nrows=num_words, validate=False)
    tokens = tf.gather(pieces, index)
    tokens = tf.RaggedTensor.from_row_splits(tokens, words.row_splits, validate=False).merge_dims(1, 2)
    if tokenizer.sequence_length:
        tokens = tokens.to_tensor(shape=[None, tokenizer.sequence_length])
    if unbatched:
        tokens = tokens[0]
    return tokens


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaTokenizer(keras_hub.models.RobertaTokenizer):
    """Byte-level BPE from a `vocab.json` and a `merges.txt` (GPT-2 / RoBERTa), ids as GPT-2's `encoder.py`.

    keras-hub's `RobertaTokenizer` (vocabulary, merges, special tokens, detokenizing, saving) with GPT-2's own
    pre-tokenizer and merge loop in TensorFlow ops (`tokenize_gpt2`; see the module docstring), run by every call,
    eager or in a graph. Plus the BERT-style special-token names our data pipeline looks up: `cls_token` = `<s>`,
    `sep_token` = `</s>` (also the document separator of FULL-SENTENCES), `pad_token` = `<pad>`, `mask_token` =
    `<mask>`, `unk_token` = `<unk>`.

    Text is tokenized as text: a literal `<s>`, `</s>`, `<pad>` or `<mask>` in a string becomes its bytes' BPE
    pieces, as GPT-2's encoder and fairseq read it (keras-hub's default makes them special ids, so a user's
    text could inject separators and masks). `special_tokens_in_strings=True` turns that parsing on: the text is
    cut at each special token, which gets its id, and the pieces between are tokenized one by one
    (`keras_pretrain.models.special_tokens`, as BERT's, ALBERT's and XLNet's tokenizers).

    Invalid UTF-8 in a string is read as U+FFFD. The classes `\\s`, `\\p{L}`, `\\p{N}` of GPT-2's regex are the
    `regex` package's (2026.11.19, `gpt2_unicode`).

    Args:
        vocabulary: dict token -> id, or the path of `vocab.json`.
        merges: list of merge rules, or the path of `merges.txt`.
        special_tokens_in_strings: bool, read the special tokens written in the text as their ids.

    Example:
    ```python
    tokenizer = RobertaTokenizer("vocab.json", "merges.txt")
    tokenizer(["Hello world"])
    ```
    """

    squad_pipeline = "byte_level"  # keras_pretrain.tasks.question_answering.pipelines

    cls_token = "<s>"
    sep_token = "</s>"
    unk_token = "<unk>"

    def __init__(self, vocabulary=None, merges=None, special_tokens_in_strings=False, **kwargs):
        kwargs.setdefault("_allow_python_workflow", False)  # one code path (TF ops), eager and in graphs
        self.special_tokens_in_strings = special_tokens_in_strings
        if not special_tokens_in_strings:
            kwargs["unsplittable_tokens"] = []
        else:
            kwargs.pop("unsplittable_tokens", None)
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    @preprocessing_function
    def _tokenize_tf(self, inputs):
        return tokenize_gpt2(self, inputs)

    def get_config(self):
        config = super().get_config()
        config.pop("unsplittable_tokens", None)
        return {**config, "special_tokens_in_strings": self.special_tokens_in_strings}


@keras.saving.register_keras_serializable(package="keras_pretrain")
class FairseqRobertaTokenizer(RobertaTokenizer):
    """`RobertaTokenizer` for a fairseq dictionary that lacks some GPT-2 tokens.

    fairseq encodes a BPE token whose GPT-2 id is not in `dict.txt` as
    `<unk>` (3). keras-hub's lookup tables need one id per token, so such
    tokens get ids from `num_ids` on in `vocabulary`, and `tokenize` turns
    those into the `<unk>` id. The published RoBERTa dictionaries hold every
    GPT-2 id and get a plain `RobertaTokenizer`.

    Args:
        vocabulary: dict token -> id (ids >= `num_ids` stand for `<unk>`).
        merges: list of merge rules, or the path of `vocab.bpe`.
        num_ids: int. The size of the fairseq dictionary (the model's
            vocabulary size).
    """

    def __init__(self, vocabulary=None, merges=None, num_ids=None, **kwargs):
        self.num_ids = num_ids
        super().__init__(vocabulary=vocabulary, merges=merges, **kwargs)

    def vocabulary_size(self):
        return self.num_ids

    def tokenize(self, inputs, *args, **kwargs):
        ids = super().tokenize(inputs, *args, **kwargs)
        if "int" not in str(self.compute_dtype):
            return ids
        return _unknown_to_unk(ids, self.num_ids, self.vocabulary["<unk>"])

    def get_config(self):
        return {**super().get_config(), "num_ids": self.num_ids}


def _unknown_to_unk(ids, num_ids, unk):
    """Ids >= `num_ids` -> `unk`, in whatever `tokenize` returned."""
    if isinstance(ids, list):
        return [_unknown_to_unk(x, num_ids, unk) for x in ids]
    if isinstance(ids, int):
        return unk if ids >= num_ids else ids
    if isinstance(ids, np.ndarray):
        return np.where(ids >= num_ids, unk, ids).astype(ids.dtype)
    module = type(ids).__module__
    if module.startswith("tensorflow"):
        import tensorflow as tf

        def replace(x):
            return tf.where(x >= num_ids, tf.cast(unk, x.dtype), x)

        return tf.ragged.map_flat_values(replace, ids) if isinstance(ids, tf.RaggedTensor) else replace(ids)
    return keras.ops.where(ids >= num_ids, unk, ids)  # a backend tensor
