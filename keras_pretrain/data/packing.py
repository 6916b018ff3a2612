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

XLNET_CLS_SEGMENT = 2
XLNET_PAD_SEGMENT = 0
# Attribute names looked up on a tokenizer for each special id (`<name>_token_id`, then `<name>_token`).
SPECIAL_NAMES = {"cls": ("cls", "start"), "sep": ("sep", "end"), "pad": ("pad",), "mask": ("mask",)}


class Packing:
    """How one or two segments become one encoder input (a family's `Family.packing`).

    Attributes:
        name: the packing's name (metadata and messages only: code asks the object, never the name).
        pads_left: pad on the left (XLNet: the last position is always `<cls>`).
        pad_segment: the segment id written at padded positions.
        special_names: `cls` / `sep` / `pad` / `mask` -> the tokenizer attribute names of that token.
        tfhub_type_ids: the TF-Hub preprocessor returns the segment ids (False: all zeros, RoBERTa has
            one token type).
        cls_last: the class token comes after the segments (XLNet) instead of before them.
        second_separator: a second segment starts with one more separator (RoBERTa's `</s></s>`).
    """

    name = "bert"
    pads_left = False
    pad_segment = 0
    special_names = SPECIAL_NAMES
    tfhub_type_ids = True
    cls_last = False
    second_separator = False
    in_graph = True  # `pack_ragged` applies (GPT's and ELMo's inputs are built by their preprocessors)

    def __repr__(self):
        return f"{type(self).__name__}()"

    @functools.lru_cache(maxsize=None)
    def layout(self, num_segments):
        """The parts of a packed input, in order, as `(part, segment id)` pairs.

        `part` is "cls" or "sep" (one special token) or an int `i` (segment i).
        """
        parts = [] if self.cls_last else [("cls", 0)]
        for i in range(num_segments):
            if i and self.second_separator:
                parts.append(("sep", i))
            parts += [(i, i), ("sep", i)]
        if self.cls_last:
            parts.append(("cls", XLNET_CLS_SEGMENT))
        return tuple(parts)

    def num_special_tokens(self, num_segments):
        """How many special tokens `layout` adds around `num_segments` segments."""
        return sum(isinstance(part, str) for part, _ in self.layout(num_segments))

    def pack_lists(self, segments, cls, sep, seq_length=None):
        """One row: `(tokens, segment ids)` as lists, unpadded.

        Args:
            segments: one or two lists (token strings or ids).
            cls, sep: the start / class and separator tokens (strings or ids).
            seq_length: int or None. Trim the segments round-robin so the row
                fits in `seq_length` (None: no trimming).
        """
        if seq_length is not None:
            segments = truncate(segments, seq_length - self.num_special_tokens(len(segments)))
        tokens, types = [], []
        for part, type_id in self.layout(len(segments)):
            part = list(segments[part]) if isinstance(part, int) else [cls if part == "cls" else sep]
            tokens += part
            types += [type_id] * len(part)
        return tokens, types

    def pad_rows(self, rows, seq_length, pad_id):
        """NumPy `token_ids`, `segment_ids`, `padding_mask` [N, seq_length] from `(tokens, types)` rows."""
        import numpy as np

        x = {name: np.full((len(rows), seq_length), value, "int32")
             for name, value in (("token_ids", pad_id), ("segment_ids", self.pad_segment), ("padding_mask", 0))}
        for i, (row, types) in enumerate(rows):
            where = slice(seq_length - len(row), None) if self.pads_left else slice(0, len(row))
            x["token_ids"][i, where], x["segment_ids"][i, where], x["padding_mask"][i, where] = row, types, 1
        return x

    def pack_ragged(self, tf, segments, length, ids):
        """Padded encoder inputs from ragged id segments, in-graph.

        Args:
            tf: the `tensorflow` module.
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
        budget = length - self.num_special_tokens(len(segments))
        trimmed = tf_text.RoundRobinTrimmer(budget).trim(segments)
        first = trimmed[0]
        tokens, types = [], []
        for part, type_id in self.layout(len(trimmed)):
            if isinstance(part, int):
                tokens.append(trimmed[part])
                types.append(tf.zeros_like(trimmed[part]) + type_id)
            else:
                tokens.append(_column(tf, first, ids[part]))
                types.append(_column(tf, first, type_id))
        token_ids = tf.concat(tokens, axis=1)
        type_ids = tf.concat(types, axis=1)
        mask = tf.ones_like(token_ids)
        pad = _pad_left if self.pads_left else _pad_right
        return {
            "token_ids": tf.cast(pad(tf, token_ids, length, ids["pad"]), tf.int32),
            "segment_ids": tf.cast(pad(tf, type_ids, length, self.pad_segment), tf.int32),
            "padding_mask": tf.cast(pad(tf, mask, length, 0), tf.int32),
        }


class BertPacking(Packing):
    """`[CLS] A [SEP] (B [SEP])`, segment ids 0 / 1, padded on the right."""

    def pack_lists(self, segments, cls, sep, seq_length=None):
        if seq_length is None and len(segments) == 2:  # `layout`'s pair, written out: the builders' hot path
            a, b = segments
            return [cls, *a, sep, *b, sep], [0] * (len(a) + 2) + [1] * (len(b) + 1)
        return super().pack_lists(segments, cls, sep, seq_length)


class RobertaPacking(Packing):
    """`<s> A </s> (</s> B </s>)`; the TF-Hub preprocessor's type ids are all 0."""

    name = "roberta"
    second_separator = True
    tfhub_type_ids = False


class XLNetPacking(Packing):
    """`A <sep> (B <sep>) <cls>`, segment ids 0 / 1 and 2 for `<cls>`, padded on the LEFT."""

    name = "xlnet"
    pads_left = True
    cls_last = True
    pad_segment = XLNET_PAD_SEGMENT
    special_names = {"cls": ("cls",), "sep": ("sep",), "pad": ("pad",), "mask": ("mask",)}


class GPTPacking(Packing):
    """GPT-1's input transformations: `start A (delimiter B) extract`, padded on the right.

    The extract token is the last real token; the three special tokens are added to the vocabulary at
    fine-tuning (`special_tokens`). Built by the GPT preprocessor (its BPE runs in Python), not in-graph.
    """

    name = "gpt"
    in_graph = False
    special_tokens = ("_start_", "_delimiter_", "_classify_")


class ElmoPacking(Packing):
    """ELMo reads words as characters: a pair is `A ||| B` (one sequence, no special ids)."""

    name = "elmo"
    in_graph = False
    separator = "|||"


BERT = BertPacking()
ROBERTA = RobertaPacking()
XLNET = XLNetPacking()
GPT = GPTPacking()
ELMO = ElmoPacking()
# By name, for callers holding a name (metadata, older code): the in-graph packings.
PACKINGS = {p.name: p for p in (BERT, ROBERTA, XLNET)}


def get(packing):
    """The `Packing` object of `packing` (an object, or the name of an in-graph packing)."""
    if isinstance(packing, Packing):
        return packing
    if packing not in PACKINGS:
        raise ValueError(f"packing {packing!r}: expected one of {tuple(PACKINGS)}.")
    return PACKINGS[packing]


def layout(packing, num_segments):
    """`get(packing).layout(num_segments)`."""
    return get(packing).layout(num_segments)


def num_special_tokens(packing, num_segments):
    return get(packing).num_special_tokens(num_segments)


def pads_left(packing):
    """Whether the packing pads on the left (XLNet)."""
    return get(packing).pads_left


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
    """`get(packing).pack_lists(...)`: one row `(tokens, segment ids)`, unpadded."""
    return get(packing).pack_lists(segments, cls, sep, seq_length=seq_length)


def pack_ragged(tf, packing, segments, length, ids):
    """`get(packing).pack_ragged(...)`: padded encoder inputs from ragged id segments, in-graph."""
    return get(packing).pack_ragged(tf, segments, length, ids)


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
