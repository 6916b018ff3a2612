"""Packing one or two segments into one encoder input: the one implementation.

Every place that builds `[CLS] A [SEP] B [SEP]` (or a family's variant) uses
this module: the pretraining instances (`keras_pretrain.data.instances`, on
token strings), the fine-tuning recipe (`recipes.finetune`, on id lists) and
the exported preprocessors and serving models (`keras_pretrain.export`,
in-graph on ragged id tensors). What a packing looks like is written once,
in `layout`; `pack_lists` and `pack_ragged` follow it.

Packings:

- `bert` (BERT, ALBERT, ERNIE, DistilBERT): `[CLS] A [SEP] (B [SEP])`,
  segment ids 0 / 1, padded on the right.
- `roberta`: `<s> A </s> (</s> B </s>)`, segment ids 0 / 1 (the second
  segment's, its leading `</s>` included; RoBERTa has one token type and its
  backbone ignores them), padded on the right.
- `xlnet`: `A <sep> (B <sep>) <cls>`, segment ids 0 / 1 and 2 for `<cls>`,
  padded on the LEFT (the last position is always `<cls>`).

Segments too long for the input are trimmed round-robin (one token at a
time to each segment in turn), as tensorflow-text's `RoundRobinTrimmer` and
TF-Hub's BERT preprocessors: training and serving pack the same tokens.

Pure Python apart from `pack_ragged`, which takes the `tensorflow` module
(and imports tensorflow-text) when called.
"""

import functools

from keras_pretrain import families

PACKINGS = ("bert", "roberta", "xlnet")
XLNET_CLS_SEGMENT = 2
XLNET_PAD_SEGMENT = 0


def packing_of_family(family):
    """The packing of a family name (`families.get(family).packing`)."""
    return families.get(family).packing


def packing_of(tokenizer):
    """The packing of the family whose tokenizer class `tokenizer` is an instance of (most specific class
    first; a plain byte-level BPE tokenizer packs as RoBERTa), else `bert`."""
    import keras_hub

    by_class = {}
    for family in families.FAMILIES.values():
        if family.packing in PACKINGS:
            by_class.setdefault(family.tokenizer_class, family.packing)
    for cls in type(tokenizer).__mro__:
        if cls in by_class:
            return by_class[cls]
    if isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer):
        return "roberta"
    return "bert"


@functools.lru_cache(maxsize=None)
def layout(packing, num_segments):
    """The parts of a packed input, in order, as `(part, segment id)` pairs.

    `part` is "cls" or "sep" (one special token) or an int `i` (segment i).
    """
    if packing not in PACKINGS:
        raise ValueError(f"packing {packing!r}: expected one of {PACKINGS}.")
    if packing == "xlnet":
        parts = []
        for i in range(num_segments):
            parts += [(i, i), ("sep", i)]
        return tuple(parts + [("cls", XLNET_CLS_SEGMENT)])
    parts = [("cls", 0)]
    for i in range(num_segments):
        if i and packing == "roberta":
            parts.append(("sep", i))
        parts += [(i, i), ("sep", i)]
    return tuple(parts)


def num_special_tokens(packing, num_segments):
    """How many special tokens `layout` adds around `num_segments` segments."""
    return sum(isinstance(part, str) for part, _ in layout(packing, num_segments))


def pads_left(packing):
    """Whether the packing pads on the left (XLNet)."""
    return packing == "xlnet"


def truncate(segments, budget):
    """Keeps at most `budget` tokens, given one at a time to each segment in turn.

    Round-robin, as tensorflow-text's `RoundRobinTrimmer` (used by
    `pack_ragged`): training and serving pack the same tokens.
    """
    keep = [0] * len(segments)
    while budget > 0 and any(k < len(s) for k, s in zip(keep, segments)):
        for i, segment in enumerate(segments):
            if budget > 0 and keep[i] < len(segment):
                keep[i] += 1
                budget -= 1
    return [list(s[:k]) for s, k in zip(segments, keep)]


def pack_lists(packing, segments, cls, sep, seq_length=None):
    """One row: `(tokens, segment ids)` as lists, unpadded.

    Args:
        packing: "bert", "roberta" or "xlnet".
        segments: one or two lists (token strings or ids).
        cls, sep: the start / class and separator tokens (strings or ids).
        seq_length: int or None. Trim the segments round-robin so the row
            fits in `seq_length` (None: no trimming).
    """
    if seq_length is not None:
        segments = truncate(segments, seq_length - num_special_tokens(packing, len(segments)))
    elif packing == "bert" and len(segments) == 2:  # `layout`'s BERT pair, written out: the builders' hot path
        a, b = segments
        return [cls, *a, sep, *b, sep], [0] * (len(a) + 2) + [1] * (len(b) + 1)
    tokens, types = [], []
    for part, type_id in layout(packing, len(segments)):
        part = list(segments[part]) if isinstance(part, int) else [cls if part == "cls" else sep]
        tokens += part
        types += [type_id] * len(part)
    return tokens, types


def pack_ragged(tf, packing, segments, length, ids):
    """Padded encoder inputs from ragged id segments, in-graph.

    Args:
        tf: the `tensorflow` module.
        packing: "bert", "roberta" or "xlnet".
        segments: one or two int RaggedTensors (or dense tensors) [B, (n)] or
            [B, (words), (pieces)].
        length: int or scalar int tensor, the packed length.
        ids: dict with the `cls`, `sep` and `pad` ids.

    Returns:
        dict of int32 [B, length] `token_ids`, `segment_ids`, `padding_mask`.
    """
    import tensorflow_text as tf_text

    segments = _ragged(tf, segments)
    length = tf.cast(length, tf.int32)
    budget = length - num_special_tokens(packing, len(segments))
    trimmed = tf_text.RoundRobinTrimmer(budget).trim(segments)
    first = trimmed[0]
    tokens, types = [], []
    for part, type_id in layout(packing, len(trimmed)):
        if isinstance(part, int):
            tokens.append(trimmed[part])
            types.append(tf.zeros_like(trimmed[part]) + type_id)
        else:
            tokens.append(_column(tf, first, ids[part]))
            types.append(_column(tf, first, type_id))
    token_ids = tf.concat(tokens, axis=1)
    type_ids = tf.concat(types, axis=1)
    mask = tf.ones_like(token_ids)
    pad = _pad_left if pads_left(packing) else _pad_right
    type_pad = XLNET_PAD_SEGMENT if packing == "xlnet" else 0
    return {
        "token_ids": tf.cast(pad(tf, token_ids, length, ids["pad"]), tf.int32),
        "segment_ids": tf.cast(pad(tf, type_ids, length, type_pad), tf.int32),
        "padding_mask": tf.cast(pad(tf, mask, length, 0), tf.int32),
    }


def _ragged(tf, segments):
    segments = [
        s if isinstance(s, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(s)
        for s in segments
    ]
    return [
        tf.cast(s.merge_dims(1, -1) if s.ragged_rank > 1 else s, tf.int32)
        for s in segments
    ]


def _column(tf, like, value):
    """A ragged [B, 1] column of `value` with `like`'s rows."""
    rows = like.nrows(out_type=tf.int64)
    return tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), tf.constant(value, tf.int32)))


def _pad_right(tf, ragged, length, value):
    shape = tf.stack([ragged.nrows(out_type=tf.int32), length])
    return ragged.to_tensor(default_value=value, shape=shape)


def _pad_left(tf, ragged, length, value):
    right = _pad_right(tf, ragged, length, value)
    shift = length - tf.cast(ragged.row_lengths(), tf.int32)  # (B,)
    index = tf.math.floormod(tf.range(length)[None, :] - shift[:, None], length)
    return tf.gather(right, index, batch_dims=1)
