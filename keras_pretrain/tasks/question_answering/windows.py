"""THE doc-stride rule of SQuAD's features, written once: how a passage of `length` doc tokens is cut into windows,
which window gives a token its "max context", and which lengths leave room for the passage.

All three authors' pipelines (bert `run_squad.py`, albert `squad_utils`, xlnet `run_squad.py`) share it, and
so do ours: `features_wordpiece`, `features_sentencepiece` and `features_xlnet` call `doc_spans` and
`is_max_context` (`max_context_map`); the recipe and the serving export check their lengths with
`check_lengths`; the serving graph (`serving.windows`) cuts its windows with `graph_windows`, the same rule in
closed form:

    room   = seq_length - query_length - special_tokens     (`max_tokens_for_doc`)
    count  = ceil(max(length - room, 0) / doc_stride) + 1
    start  = i * doc_stride,  span = min(room, length - start)   for i < count

which is `doc_spans(length, room, doc_stride)` for every `length >= 1` once `0 < doc_stride <= room` (what
`check_lengths` demands: a stride longer than the window would skip text, and `doc_spans` then steps by the
window instead). An empty passage has no window in Python and one empty window in the graph (whose answer is
"").
"""

NO_ROOM, STRIDE_TOO_LONG = "no_room", "stride_too_long"  # the problems `check_lengths` names


def max_tokens_for_doc(seq_length, query_length, special_tokens):
    """The doc tokens of a window: the sequence less the question and the special tokens (`[CLS] Q [SEP] D
    [SEP]`: 3; RoBERTa's `<s> Q </s></s> D </s>`: 4; XLNet's `P <sep> Q <sep> <cls>`: 3)."""
    return seq_length - query_length - special_tokens


def doc_spans(length, max_tokens_for_doc, doc_stride):
    """(start, length) windows over `length` doc pieces: at most `max_tokens_for_doc` long, each starting
    `doc_stride` after the previous one (less if the previous was shorter), the last reaching the end (the
    authors' `_DocSpan` loop)."""
    spans, start = [], 0
    while start < length:
        span = min(length - start, max_tokens_for_doc)
        spans.append((start, span))
        if start + span == length:
            break
        start += min(span, doc_stride)
    return spans


def is_max_context(spans, span_index, position):
    """Whether window `span_index` gives piece `position` its largest min(left, right) context (ties: the
    earlier window; window length breaks near ties), as the authors' `_check_is_max_context`."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if start <= position <= end:
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best_index = score, index
    return span_index == best_index


def max_context_map(spans, span_index, offset):
    """`{sequence position: is_max_context}` of the doc pieces of window `span_index`, its first doc piece
    at sequence position `offset` (the features' `token_is_max_context`)."""
    start, length = spans[span_index]
    return {offset + i: is_max_context(spans, span_index, start + i) for i in range(length)}


def check_lengths(seq_length, max_query_length, doc_stride, special_tokens):
    """`(room, problem)`: the doc tokens a window keeps after the longest question, and None, `NO_ROOM` (no doc
    token fits) or `STRIDE_TOO_LONG` (`doc_stride` outside `[1, room]`: windows would skip text)."""
    room = max_tokens_for_doc(seq_length, max_query_length, special_tokens)
    if room <= 0:
        return room, NO_ROOM
    if not 0 < doc_stride <= room:
        return room, STRIDE_TOO_LONG
    return room, None


def window_count(length, room, doc_stride):
    """The number of windows of `doc_spans(length, room, doc_stride)` in closed form (`length >= 1`, `0 <
    doc_stride <= room`); the graph's formula."""
    return (max(length - room, 0) + doc_stride - 1) // doc_stride + 1


def graph_windows(tf, doc_length, room, doc_stride):
    """`doc_spans` of a batch in-graph (the closed form of the module docstring): for int32 `doc_length` [B] and
    `room` [B], `(example, start, length)` int32 [N] of the N windows, example by example."""
    count = (tf.maximum(doc_length - room, 0) + doc_stride - 1) // doc_stride + 1
    example = tf.repeat(tf.range(tf.shape(doc_length)[0]), count)
    start = tf.ragged.range(count).flat_values * doc_stride
    length = tf.minimum(tf.gather(room, example), tf.gather(doc_length, example) - start)
    return example, start, length
