"""The SentencePiece layouts of the question-answering serving SavedModel: albert-tensorflow `squad_utils`'
features and answers (ALBERT's SentencePiece models, `SentencePieceLayout`) and xlnet-tensorflow
`run_squad.py`'s (XLNet, `XLNetLayout`), in-graph (`serving`).

As the Python pipeline (`features_sentencepiece`, `predictions.write_predictions_sentencepiece`,
`predictions.write_predictions_beam`):

- the question and the context are `preprocess_text`-ed (whitespace runs joined, NFKD, combining marks removed,
  lower-cased for uncased models) and cut into SentencePiece pieces (tensorflow-text, surface pieces for unknown
  text as `EncodeAsPieces`), a piece ending in "<digit>," encoded again without its comma and "▁" and followed
  by "," (albert's `encode_pieces`); the question is cut at `max_query_length` pieces;
- the pieces, "▁" read as a space, are aligned to the raw context's characters by albert's banded
  longest-common-subsequence (`_lcs_match`: a raw character matches a piece character when its own
  `preprocess_text` is that character; band `|n - m| + 5`, doubled once when no more than 80% of the characters
  matched; the same recurrence, tie-breaking and back-tracking, a row at a time in a `tf.while_loop`), each
  piece's first / last raw character then taken by `_convert_index` (an unaligned character takes its aligned
  neighbours' positions); an example whose alignment matches fewer than 80% of its characters (their "MISMATCH
  DETECTED!") has no window: its answer is "" (score -inf);
- windows `[CLS] Q [SEP] D [SEP]` as bert's (`serving.windows`), and the answer text the raw context from the
  start piece's first character to the end piece's last, stripped (its offsets those of the stripped text).

v1.1 (`SpanQuestionAnswering`, albert's `write_predictions_v1`): the span selection of `serving.best_spans`
(the same rules). v2.0 (`BeamQuestionAnswering`, albert's answer-class model and `write_predictions_v2`): the
head's beam (`start_n_top` starts x `end_n_top` ends per window), candidates outside the doc or its max-context
window, reversed or longer than `max_answer_length` dropped, the best start + end log-prob over the windows
(ties: the earliest window, then beam order), `no_answer_score` the smallest `cls_logits` over the windows
(1e6 without a window, as theirs), the answer "" when it is at least `null_score_diff_threshold`.

XLNet (`XLNetLayout`, `features_xlnet` + `write_predictions_beam`'s `layout="xlnet"`): the
same reading and alignment (xlnet's copy of albert's, then ported back), with xlnet's `preprocess_text` ("``"
and "''" -> '"' too) and `encode_pieces` (the re-split's first piece loses the "▁" the piece did not have);
windows `P <sep> Q <sep> <cls>` (the doc at offset 0, the `<sep>` / `<cls>` ids the constants 4 / 3, segment
ids 0 / 1 / 2, 3 for the padding, `cls_index` fed to the model); v1.1 and v2.0 the answer-class beam as above,
except that a candidate starting or ending on the window's last paragraph piece is dropped (xlnet's
`>= paragraph_len - 1`) and the answer is always the best span (no threshold; v2.0's `no_answer_score` is the
null odds, `null_odds.json`'s value).

The per-character `preprocess_text` of the alignment is a table made at export time by the Python pipeline's
(`features_sentencepiece.normalize_sentencepiece_text`, on Python's `unicodedata`: the characters whose
`preprocess_text` is not themselves), so the served alignment is the exporting
Python's.
"""

import functools
import sys

import numpy as np

from keras_pretrain.tasks.question_answering import features_xlnet
from keras_pretrain.tasks.question_answering import pipelines
from keras_pretrain.tasks.question_answering.features_sentencepiece import SPIECE_UNDERLINE
from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text


def column(tf, rows, value):
    """A ragged [rows, 1] of `value` (a special token's column of packed windows)."""
    return tf.RaggedTensor.from_tensor(tf.fill([rows, 1], value))


@functools.lru_cache(maxsize=4)
def char_table(lower):
    """(codes, values) int32, sorted by code: the characters whose `preprocess_text(c, remove_space=False,
    lower=lower)` is not `c`; the value is the one character it gives, or -1 (none or several)."""
    codes, values = [], []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp < 0xE000:
            continue
        c = chr(cp)
        out = normalize_sentencepiece_text(c, lower=lower, remove_space=False)
        if out != c:
            codes.append(cp)
            values.append(ord(out) if len(out) == 1 else -1)
    return np.asarray(codes, np.int32), np.asarray(values, np.int32)


def _cumulative_max(tf, x, width):
    """Running maximum along the last axis of [B, W] (log-step doubling)."""
    s = tf.constant(1)

    def cond(s, y):
        return s < width

    def grow(s, y):
        shifted = tf.pad(y, [[0, 0], [s, 0]])[:, :width]
        return s * 2, tf.maximum(y, shifted)

    _, x = tf.while_loop(cond, grow, (s, x), shape_invariants=(s.shape, tf.TensorShape([None, None])))
    return x


def lcs_align(tf, raw, raw_length, tok, tok_length, max_dist):
    """albert's `_lcs_match` + back-tracking on a batch, in-graph.

    Args:
        raw: int32 [B, N], each raw context character's own `preprocess_text` (-1: matches nothing), padded.
        raw_length: int32 [B], n.
        tok: int32 [B, M], the code points of the pieces' text ("▁" as a space), padded.
        tok_length: int32 [B], m.
        max_dist: int32 [B], the band.

    Returns:
        (score int32 [B] (f[n-1, m-1]), chartok_to_orig int32 [B, M] (-1: unaligned), matches int32 [B]).
    """
    batch = tf.shape(raw)[0]
    rows = tf.reduce_max(tf.concat([raw_length, [0]], 0))
    depth = tf.reduce_max(tf.concat([max_dist, [1]], 0))
    width = 2 * depth
    k = tf.range(width)[None, :]
    tok_padded = tf.pad(tok, [[0, 0], [0, 1]], constant_values=-2)
    m_cols = tf.shape(tok_padded)[1]

    def row(i, previous, score, g_rows):
        j = i - depth + k  # [1, W] the column of each band slot
        lo = tf.maximum(i - max_dist, 0)[:, None]
        hi = tf.minimum(i + max_dist, tok_length)[:, None]
        valid = (j >= lo) & (j < hi) & (i < raw_length)[:, None]
        tok_j = tf.gather(tok_padded, tf.clip_by_value(j, 0, m_cols - 1)[0], axis=1)
        raw_i = tf.gather(raw, tf.minimum(i, tf.shape(raw)[1] - 1), axis=1)[:, None]
        match = valid & (raw_i >= 0) & tf.equal(raw_i, tok_j)
        up = tf.pad(previous[:, 1:], [[0, 0], [0, 1]])  # f[i - 1, j]: slot k + 1 of the previous row
        diagonal = previous + 1  # f[i - 1, j - 1] + 1: slot k
        a = tf.where(valid, tf.maximum(up, tf.where(match, diagonal, 0)), 0)
        current = tf.where(valid, _cumulative_max(tf, a, width), 0)
        left = tf.pad(current[:, :-1], [[0, 0], [1, 0]])
        g = tf.where(left > up, 1, tf.where(i > 0, 0, -1))
        g = tf.where(match & (diagonal > tf.maximum(up, left)), 2, g)
        g = tf.where(valid, g, -1)
        last = tf.equal(i, raw_length - 1)
        end_slot = tok_length - 1 - i + depth
        at_end = tf.gather(current, tf.clip_by_value(end_slot, 0, width - 1), batch_dims=1)
        at_end = tf.where((end_slot >= 0) & (end_slot < width) & (tok_length > 0), at_end, 0)
        score = tf.where(last, at_end, score)
        return i + 1, current, score, g_rows.write(i, tf.cast(g, tf.int8))

    _, _, score, g_rows = tf.while_loop(
        lambda i, *_: i < rows, row,
        (tf.constant(0), tf.zeros([batch, width], tf.int32), tf.zeros([batch], tf.int32),
         tf.TensorArray(tf.int8, size=rows, element_shape=tf.TensorShape([None, None]))),
        shape_invariants=(tf.TensorShape([]), tf.TensorShape([None, None]), tf.TensorShape([None]),
                          tf.TensorShape(None)))
    g_all = tf.cond(rows > 0, lambda: g_rows.stack(), lambda: tf.fill([0, batch, width], tf.constant(-1, tf.int8)))

    # Back-tracking from (n - 1, m - 1) while (i, j) has a back-pointer.
    examples = tf.range(batch)

    def active_of(i, j):
        return (i >= 0) & (j >= 0)

    def step(t, i, j, done, record_i, record_j):
        slot = j - i + depth
        inside = active_of(i, j) & ~done & (slot >= 0) & (slot < width)
        index = tf.stack([tf.maximum(i, 0), examples, tf.clip_by_value(slot, 0, width - 1)], axis=1)
        g = tf.where(inside, tf.cast(tf.gather_nd(g_all, index), tf.int32), -1)
        done = done | (g < 0)
        record_i = record_i.write(t, tf.where(g == 2, i, -1))
        record_j = record_j.write(t, tf.where(g == 2, j, -1))
        i = i - tf.cast((g == 2) | (g == 0), tf.int32)
        j = j - tf.cast((g == 2) | (g == 1), tf.int32)
        return t + 1, i, j, done | ~active_of(i, j), record_i, record_j

    i0, j0 = raw_length - 1, tok_length - 1
    arrays = [tf.TensorArray(tf.int32, size=0, dynamic_size=True, element_shape=tf.TensorShape([None]))
              for _ in range(2)]
    t, _, _, _, record_i, record_j = tf.while_loop(
        lambda t, i, j, done, *_: tf.reduce_any(~done), step,
        (tf.constant(0), i0, j0, ~active_of(i0, j0)) + tuple(arrays))
    matched_i = tf.cond(t > 0, lambda: record_i.stack(), lambda: tf.fill([0, batch], -1))
    matched_j = tf.cond(t > 0, lambda: record_j.stack(), lambda: tf.fill([0, batch], -1))
    hit = matched_j >= 0
    where = tf.where(hit)  # (step, example)
    scatter = tf.stack([tf.cast(where[:, 1], tf.int32), tf.gather_nd(matched_j, where)], axis=1)
    chartok_to_orig = tf.tensor_scatter_nd_update(tf.fill([batch, tf.shape(tok)[1]], -1), scatter,
                                                  tf.gather_nd(matched_i, where))
    matches = tf.reduce_sum(tf.cast(hit, tf.int32), axis=0)
    return score, chartok_to_orig, matches


def convert_index(tf, index, positions, n, is_start):
    """albert's `_convert_index(index, pos, n, is_start)` for each of `positions` (int32 [B, P], in range),
    `index` int32 [B, M] (-1: None; at least one aligned where it is used), n int32 [B]."""
    width = tf.shape(index)[1]
    aligned = index >= 0
    slots = tf.range(width)[None, :]
    # The last aligned slot at or before each slot, the first at or after (-1 / width where none).
    before = tf.cumsum(tf.cast(aligned, tf.int32), axis=1)
    where_aligned = tf.ragged.boolean_mask(tf.broadcast_to(slots, tf.shape(index)), aligned)
    aligned_slots = where_aligned.to_tensor(-1)
    count = tf.shape(aligned_slots)[1]
    b = tf.gather(before, positions, batch_dims=1)
    own = tf.gather(index, positions, batch_dims=1)
    own_aligned = own >= 0
    front_rank = b - 1
    rear_rank = tf.where(own_aligned, b - 1, b)
    total = where_aligned.row_lengths()
    total = tf.cast(total, tf.int32)[:, None]

    def value_at(rank, exists):
        slot = tf.gather(aligned_slots, tf.clip_by_value(rank, 0, tf.maximum(count - 1, 0)), batch_dims=1)
        return tf.where(exists, tf.gather(index, tf.maximum(slot, 0), batch_dims=1), -1)

    front = value_at(front_rank, front_rank >= 0)
    rear = value_at(rear_rank, rear_rank < total)
    n = n[:, None]
    if is_start:
        no_front = tf.where(rear >= 1, 0, rear)
        no_rear = tf.where(front < n - 1, front + 1, front)
        both = tf.where(rear > front + 1, front + 1, rear)
    else:
        no_front = tf.where(rear >= 1, rear - 1, rear)
        no_rear = tf.where(front < n - 1, n - 1, front)
        both = tf.where(rear > front + 1, rear - 1, front)
    value = tf.where(front < 0, no_front, tf.where(rear < 0, no_rear, both))
    return tf.where(own_aligned, own, value)


def encode_pieces(tf, sentence_piece, text, drop_space=False):
    """albert's (xlnet's with `drop_space`) `encode_pieces` of preprocessed `text` [B]: ragged str pieces
    [B, (P)] (tensorflow-text's surface pieces; "<digit>," pieces encoded again without the comma and "▁",
    then ","; `drop_space`: when the piece had no "▁", the first new piece without its own, dropped if it was
    "▁" alone, as xlnet `prepro_utils`)."""
    from keras_pretrain.models.sentencepiece_text import python_classes

    pieces = sentence_piece.tokenize(text)
    flat = pieces.flat_values
    resplit = tf.strings.regex_full_match(flat, "(?s).*" + python_classes()["digit"] + ",")
    stem = tf.strings.regex_replace(flat, ",$|" + SPIECE_UNDERLINE, "")
    encoded = sentence_piece.tokenize(tf.where(resplit, stem, ""))
    if drop_space:
        rows = resplit & ~tf.strings.regex_full_match(flat, "(?s)" + SPIECE_UNDERLINE + ".*")
        values, row_ids = encoded.flat_values, encoded.value_rowids()
        first = tf.range(tf.size(values, out_type=row_ids.dtype)) == tf.gather(encoded.row_splits, row_ids)
        strip = first & tf.gather(rows, row_ids) & tf.strings.regex_full_match(values, "(?s)" + SPIECE_UNDERLINE
                                                                                + ".*")
        values = tf.where(strip, tf.strings.regex_replace(values, "^" + SPIECE_UNDERLINE, ""), values)
        encoded = tf.ragged.boolean_mask(encoded.with_flat_values(values),
                                         encoded.with_flat_values(~(strip & tf.equal(values, ""))))
    last = tf.where(resplit, ",", flat)[:, None]
    rows = tf.concat([encoded.with_row_splits_dtype(tf.int64), tf.RaggedTensor.from_tensor(last)], axis=1)
    return pieces.with_row_splits_dtype(tf.int64).with_flat_values(rows).merge_dims(-2, -1)


def align(tf, context, pieces, lowercase):
    """albert's `align` of ragged str `pieces` [B, (P)] to the raw `context` [B]: (piece first raw character,
    piece last raw character) ragged int32 [B, (P)], and `skip` bool [B] (their "MISMATCH DETECTED!")."""
    codes, values = char_table(bool(lowercase))
    raw = tf.strings.unicode_decode(context, "UTF-8", errors="replace").with_row_splits_dtype(tf.int64)
    flat = raw.flat_values
    position = tf.minimum(tf.searchsorted(tf.constant(codes), flat), len(codes) - 1)
    own = tf.where(tf.equal(tf.gather(tf.constant(codes), position), flat), tf.gather(tf.constant(values), position),
                   flat)
    raw_length = tf.cast(raw.row_lengths(), tf.int32)
    raw = raw.with_flat_values(own).to_tensor(-1)
    text = tf.strings.reduce_join(pieces, axis=-1)
    tok = tf.strings.unicode_decode(text, "UTF-8", errors="replace").with_row_splits_dtype(tf.int64)
    tok_length = tf.cast(tok.row_lengths(), tf.int32)
    tok = tok.to_tensor(-2)
    tok = tf.where(tf.equal(tok, ord(SPIECE_UNDERLINE)), ord(" "), tok)
    max_dist = tf.abs(raw_length - tok_length) + 5
    n = tf.cast(raw_length, tf.float64)
    score, index, matches = lcs_align(tf, raw, raw_length, tok, tok_length, max_dist)
    again = ~(tf.cast(score, tf.float64) > 0.8 * n)
    score, index, matches = tf.cond(
        tf.reduce_any(again),
        lambda: lcs_align(tf, raw, raw_length, tok, tok_length, tf.where(again, 2 * max_dist, max_dist)),
        lambda: (score, index, matches))
    skip = tf.equal(matches, 0) | (tf.cast(score, tf.float64) < 0.8 * n)
    lengths = tf.strings.length(pieces, unit="UTF8_CHAR")
    ends = tf.cumsum(lengths.to_tensor(0), axis=1)
    starts = ends - lengths.to_tensor(0)
    mask = tf.sequence_mask(lengths.row_lengths(), tf.shape(ends)[1])
    last = tf.maximum(tf.shape(index)[1] - 1, 0)
    index = tf.pad(index, [[0, 0], [0, 1]], constant_values=-1)  # a column for empty rows
    safe = ~skip[:, None] & mask
    index = tf.where(skip[:, None], 0, index)
    first_char = convert_index(tf, index, tf.clip_by_value(starts, 0, last), raw_length, True)
    last_char = convert_index(tf, index, tf.clip_by_value(ends - 1, 0, last), raw_length, False)
    ragged = lambda x: tf.RaggedTensor.from_tensor(tf.where(safe, x, -1), lengths=lengths.row_lengths())  # noqa
    return ragged(first_char), ragged(last_char), skip


class SentencePieceLayout:
    """albert `squad_utils`' layout: `[CLS] Q [SEP] D [SEP]`, the doc in segment 1, 0-padded, the whole
    preprocessed context cut into pieces and aligned to the raw characters (see the module docstring)."""

    pipeline = pipelines.SENTENCEPIECE
    separators, doc_segment, special = pipeline.separators, pipeline.doc_segment, pipeline.special
    answer_class = True  # albert's v2.0 model is served too
    span_head = True  # and its v1.1 span head (SpanQuestionAnswering)
    drop_space = False  # albert's `encode_pieces` (`encode_pieces(..., drop_space=...)`)
    xlnet_quotes = False  # albert's `preprocess_text` (`sentencepiece_text.preprocess_text(..., xlnet_quotes=...)`)
    last_excluded = 0  # beam spans reaching the window's last doc piece are kept
    null_threshold = True  # v2.0: "" when the null odds reach the threshold (write_predictions_v2)

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.lowercase = bool(getattr(tokenizer, "lowercase", True))
        self.unknown_id = tokenizer.token_to_id("<unk>")
        self.sentence_piece = None

    @classmethod
    def serves(cls, tokenizer):
        return True

    def build(self, tf):
        import tensorflow_text as tf_text

        proto = self.tokenizer.proto
        if isinstance(proto, str):
            with open(proto, "rb") as f:
                proto = f.read()
        self.sentence_piece = tf_text.SentencepieceTokenizer(model=proto, out_type=tf.string)
        self.ids["pad"] = 0  # albert pads with id 0
        return self.sentence_piece

    def preprocess(self, tf, text):
        from keras_pretrain.models.sentencepiece_text import preprocess_text

        # albert's preprocess_text always strips the accents (the tokenizer's keep_accents is transformers').
        return preprocess_text(text, lowercase=self.lowercase, xlnet_quotes=self.xlnet_quotes)

    def _pieces(self, tf, text):
        return encode_pieces(tf, self.sentence_piece, self.preprocess(tf, text), self.drop_space)

    def _ids(self, tf, pieces):
        return pieces.with_flat_values(tf.cast(self.sentence_piece.string_to_id(pieces.flat_values), tf.int32))

    def document(self, tf, question, context, max_query_length):
        query = self._ids(tf, self._pieces(tf, question))[:, :max_query_length]
        pieces = self._pieces(tf, context)
        first, last, skip = align(tf, context, pieces, self.lowercase)
        return {"query": query, "doc": self._ids(tf, pieces), "unit": tf.ragged.range(pieces.row_lengths()).flat_values,
                "skip": skip, "first_char": tf.pad(first.to_tensor(0), [[0, 0], [0, 1]]),
                "last_char": tf.pad(last.to_tensor(0), [[0, 0], [0, 1]])}

    def answers(self, tf, context, features, window, start, end, ok):
        """The raw context from the start piece's first character to the end piece's last, stripped, and its
        character offsets (albert's `paragraph_text[begin:end + 1].strip()`)."""
        from keras_pretrain.models.sentencepiece_text import python_classes

        word_map = tf.gather(features["word"], window)
        first_piece = tf.maximum(tf.gather(word_map, start[:, None], batch_dims=1)[:, 0], 0)
        last_piece = tf.maximum(tf.gather(word_map, end[:, None], batch_dims=1)[:, 0], 0)
        begin = tf.gather(features["first_char"], first_piece[:, None], batch_dims=1)[:, 0]
        finish = tf.gather(features["last_char"], last_piece[:, None], batch_dims=1)[:, 0] + 1
        begin = tf.where(ok, begin, 0)
        text = tf.strings.substr(context, begin, tf.maximum(tf.where(ok, finish, 0) - begin, 0), unit="UTF8_CHAR")
        space = python_classes()["space"]
        lead = tf.strings.length(tf.strings.regex_replace(text, "^" + space + "+", ""), unit="UTF8_CHAR")
        stripped = tf.strings.regex_replace(text, "^" + space + "+|" + space + "+$", "")
        begin += tf.strings.length(text, unit="UTF8_CHAR") - lead
        finish = begin + tf.strings.length(stripped, unit="UTF8_CHAR")
        ok &= tf.strings.length(stripped) > 0
        return tf.where(ok, stripped, ""), tf.where(ok, begin, -1), tf.where(ok, finish, -1)


class XLNetLayout(SentencePieceLayout):
    """xlnet-tensorflow `run_squad.py`'s layout (`features_xlnet`): the paragraph first,
    `P <sep> Q <sep> <cls>`, 0-padded after; segment ids 0 (P and its `<sep>`), 1 (Q and its `<sep>`), 2
    (`<cls>`), 3 (padding); `p_mask` 0 for P and `<cls>`, `cls_index` the `<cls>` position; the `<sep>` /
    `<cls>` ids xlnet `data_utils`' constants (4 / 3), as the Python features, not looked up. The text is
    xlnet's `preprocess_text` ("``" and "''" -> '"' too) and `encode_pieces` (the digit-comma re-split drops
    the "▁" the first new piece gains); the alignment is albert's (xlnet's copy of it). The answer-class model
    (`BeamQuestionAnswering`) for v1.1 and v2.0, xlnet's `write_predictions`: a beam span reaching the
    window's last paragraph piece dropped, the answer always the best span (v2.0's `no_answer_score`, the
    smallest `cls_logits`, is for the caller's threshold, as `null_odds.json`)."""

    pipeline = pipelines.XLNET
    special = pipeline.special
    span_head = False
    drop_space = True
    xlnet_quotes = True
    last_excluded = 1  # xlnet: `start >= paragraph_len - 1 or end >= paragraph_len - 1` is dropped
    null_threshold = False
    cls_index_input = True  # the model reads `<cls>` at `cls_index` (the recipe's inputs)

    def __init__(self, tokenizer):
        super().__init__(tokenizer)
        self.lowercase = bool(getattr(tokenizer, "lowercase", False))
        self.fixed_ids = {"cls": features_xlnet.CLS_ID, "sep": features_xlnet.SEP_ID}

    def pack(self, tf, rows, query_rows, window_ids, query_length, length, seq_length):
        """`P <sep> Q <sep> <cls>` (see the class): (inputs, doc offset 0 [N], `cls_index` [N])."""
        segment = features_xlnet  # SEG_ID_P, SEG_ID_Q, SEG_ID_CLS, SEG_ID_PAD
        sep = column(tf, rows, self.ids["sep"])
        tokens = tf.concat([window_ids, sep, query_rows, sep, column(tf, rows, self.ids["cls"])], axis=1)
        cls_index = length + query_length + 2
        positions = tf.range(seq_length)[None, :]
        segment_ids = tf.where(positions <= length[:, None], segment.SEG_ID_P,
                               tf.where(positions < cls_index[:, None], segment.SEG_ID_Q,
                                        tf.where(positions == cls_index[:, None], segment.SEG_ID_CLS,
                                                 segment.SEG_ID_PAD)))
        inputs = {"token_ids": tokens.to_tensor(self.ids["pad"], shape=[None, seq_length]),
                  "segment_ids": segment_ids, "padding_mask": tf.cast(positions <= cls_index[:, None], tf.int32)}
        return inputs, tf.zeros_like(length), cls_index


def beam_best_spans(tf, outputs, features, max_answer_length, batch, start_n_top, end_n_top, last_excluded=0):
    """albert's `accumulate_predictions_v2` (xlnet's `write_predictions`, `last_excluded=1`: spans reaching
    the window's last doc piece dropped) best candidate and null odds from the beam of each window.

    Returns (window, start, end positions [B], score float64 [B] (start + end log-prob, -inf: no valid span),
    null odds float64 [B] (the smallest `cls_logits`, 1e6 without a window))."""
    starts = tf.cast(outputs["start_top_index"], tf.int32)  # [N, S]
    ends = tf.cast(outputs["end_top_index"], tf.int32)  # [N, S * E], start-major
    start_values = tf.cast(outputs["start_top_log_probs"], tf.float64)
    end_values = tf.cast(outputs["end_top_log_probs"], tf.float64)
    starts = tf.repeat(starts, end_n_top, axis=1)
    start_values = tf.repeat(start_values, end_n_top, axis=1)
    doc, max_context = features["doc_mask"], features["max_context"]
    offset, length = features["offset"], features["length"]
    valid = tf.gather(doc, starts, batch_dims=1) & tf.gather(max_context, starts, batch_dims=1)
    valid &= ends - offset[:, None] < length[:, None] - last_excluded
    valid &= starts - offset[:, None] < length[:, None] - last_excluded
    valid &= (ends >= starts) & (ends - starts + 1 <= max_answer_length)
    scores = tf.where(valid, start_values + end_values, float("-inf"))
    pick = tf.argmax(scores, axis=-1, output_type=tf.int32)  # the first best, in beam order
    window_best = tf.maximum(tf.reduce_max(scores, axis=-1), tf.float64.min)
    example, rows = features["example"], tf.shape(scores)[0]
    score = tf.math.unsorted_segment_max(window_best, example, batch)
    window = tf.math.unsorted_segment_min(tf.where(window_best == tf.gather(score, example), tf.range(rows), rows),
                                          example, batch)
    score = tf.where(score > tf.float64.min, score, float("-inf"))
    cls = tf.cast(outputs["cls_logits"], tf.float64)
    cls = tf.where(features["skipped"], tf.constant(float("inf"), tf.float64), cls)
    null = tf.minimum(tf.math.unsorted_segment_min(cls, example, batch), 1000000.0)
    pick = tf.gather(pick, window)
    start = tf.gather(tf.gather(starts, window), pick[:, None], batch_dims=1)[:, 0]
    end = tf.gather(tf.gather(ends, window), pick[:, None], batch_dims=1)[:, 0]
    return window, start, end, score, null
