"""The serving SavedModel of a span question-answering task: `question` and `context` strings in, the answer
out, bert's `run_squad.py` from the features to the prediction in one graph.

`export_qa_serving(model, path, tokenizer, ...)` writes a SavedModel whose `serving_default` takes
`question` and `context` (string [B]) and returns:

- `answer` string [B]: the answer text, as `run_squad.py`'s `write_predictions` (hence
  `predictions.write_predictions`) gives it: the WordPiece span mapped back onto the context's words by
  `get_final_text`; "" when (v2.0) the null score beats the best span by more than the threshold, or when
  no span is valid (where the Python code answers its "empty" placeholder);
- `start`, `end` int32 [B]: the answer's character offsets in `context` (`context[start:end]`; -1 for "");
- `score` float32 [B]: the best span's start + end logit (-inf when no span is valid);
- v2.0 only, `no_answer_score` float32 [B]: the null score minus `score`, `null_odds.json`'s value.

Inside the graph, as the Python pipeline (`squad.read_squad`, `features_wordpiece`): the context is split into words on
`run_squad`'s whitespace and each word tokenized alone, the question cut at `max_query_length` pieces, the
doc cut into windows `doc_stride` apart (`[CLS] question [SEP] window [SEP]`, segment ids 0 / 1), each doc
token's "max context" window chosen; then for every window the `n_best_size` best start and end positions,
spans outside the doc, not in their max-context window, reversed or longer than `max_answer_length`
dropped, the best span of all windows (ties: the earliest window, then the better-ranked start, then end),
and the null score the smallest `[CLS]` start + end logit over the windows.

The layout is the tokenizer's SQuAD pipeline (`pipelines.for_tokenizer`, as the recipe's). WordPiece families
(BERT, ERNIE, DistilBERT, WordPiece ALBERT and runs: `WordPieceLayout`) and RoBERTa's
byte-level BPE (`ByteLevelLayout`: `<s> Q </s></s> D </s>`, words after a space, spans decoded from their
bytes), as `recipes.finetune --task squad-*` trains them. ALBERT's SentencePiece models take albert
`squad_utils`' pipeline (`serving_sentencepiece.SentencePieceLayout`: pieces of the whole context aligned
to its characters by their LCS, the answer sliced from the raw context; v1.1 the span head, v2.0 the
answer-class model's beam, `BeamQuestionAnswering`). XLNet takes xlnet-tensorflow `run_squad.py`'s
(`serving_sentencepiece.XLNetLayout`: the same alignment, its own text preprocessing, `P <sep> Q <sep>
<cls>` windows with `cls_index`, the answer-class model's beam for v1.1 and v2.0, the answer always the best
span: v2.0's `no_answer_score` is the smallest `cls_logits`, `null_odds.json`'s value, for the caller to
threshold). Tokenizing uses tensorflow-text ops: load `tensorflow_text` before `tf.saved_model.load`; nothing
else is needed.
"""

import functools

import numpy as np

from keras_pretrain.export.tracing import ExportError
from keras_pretrain.export.tracing import require_tensorflow_backend
from keras_pretrain.tasks.question_answering import pipelines
from keras_pretrain.tasks.question_answering import serving_sentencepiece
from keras_pretrain.tasks.question_answering import windows as doc_windows
from keras_pretrain.tasks.question_answering.serving_sentencepiece import column
from keras_pretrain.text import PY_WHITESPACE  # Python's `str.split()` whitespace

OUTPUTS = ("answer", "start", "end", "score")
V2_OUTPUTS = OUTPUTS + ("no_answer_score",)
WHITESPACE = r"[ \t\r\n\x{202F}]+"  # run_squad's `is_whitespace`


class WordPieceLayout:
    """run_squad's layout: `[CLS] Q [SEP] D [SEP]`, the doc in segment 1, each context word tokenized alone,
    a span's text its pieces joined with the "##" continuations glued, `get_final_text` with the vocabulary's
    casing (`BertTokenizer.basic_words`)."""

    pipeline = pipelines.WORDPIECE
    separators, doc_segment, special = pipeline.separators, pipeline.doc_segment, pipeline.special

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    @classmethod
    def serves(cls, tokenizer):
        """Whether the graph can be built for `tokenizer` (`get_final_text` needs our `BertTokenizer`'s
        `basic_words`)."""
        return hasattr(tokenizer, "basic_words")

    def vocabulary(self):
        return self.tokenizer.get_vocabulary()

    def doc_words(self, tf, words):
        return self.tokenizer(words)

    def span_text(self, tf, pieces):
        text = tf.strings.reduce_join(pieces, axis=-1, separator=" ")
        return tf.strings.regex_replace(tf.strings.regex_replace(text, " ##", ""), "##", "")

    def basic_words(self, tf, text):
        return self.tokenizer.basic_words(text)

    def document(self, tf, question, context, max_query_length):
        """The question's ids [B, (Q)], the doc's [B, (D)], each doc piece's word (flat [sum D]) and what
        `answers` reads: run_squad's words, each tokenized alone."""
        import tensorflow_text as tf_text

        words, word_starts, _ = (t.with_row_splits_dtype(tf.int64) for t in
                                 tf_text.regex_split_with_offsets(context, WHITESPACE))
        pieces = _ragged_ids(tf, self.doc_words(tf, words.flat_values))  # each word alone, as run_squad
        doc = tf.RaggedTensor.from_row_splits(pieces.flat_values, tf.gather(pieces.row_splits, words.row_splits))
        word_of_piece = tf.repeat(tf.ragged.range(words.row_lengths()).flat_values, pieces.row_lengths())
        query = _ragged_ids(tf, self.tokenizer(question))[:, :max_query_length]
        return {"query": query, "doc": doc, "unit": word_of_piece, "words": words, "word_starts": word_starts}

    def answers(self, tf, context, features, window, start, end, ok):
        return answers(tf, self, tf.constant(self.vocabulary()), context, features, window, start, end, ok)


class ByteLevelLayout(WordPieceLayout):
    """RoBERTa's byte-level BPE: `<s> Q </s></s> D </s>`, one segment, each context word tokenized after a
    space (`Ġword`, as the Python pipeline), a span's text its pieces' bytes decoded (GPT-2's byte table,
    invalid UTF-8 replaced by U+FFFD), `get_final_text` cased (BERT's basic tokenizer, nothing lower-cased)."""

    pipeline = pipelines.BYTE_LEVEL
    separators, doc_segment, special = pipeline.separators, pipeline.doc_segment, pipeline.special

    @classmethod
    def serves(cls, tokenizer):
        return True

    def vocabulary(self):
        return [self.tokenizer.id_to_token(i) for i in range(self.tokenizer.vocabulary_size())]

    def doc_words(self, tf, words):
        return self.tokenizer(tf.strings.join([" ", words]))

    def span_text(self, tf, pieces):
        from keras_hub.src.tokenizers.byte_pair_tokenizer import bytes_to_unicode

        byte_strings, characters = bytes_to_unicode()  # the 256 one-byte strings and their characters
        table = np.full(max(ord(c) for c in characters) + 1, -1, np.int32)  # codepoint -> byte, -1: none
        table[[ord(c) for c in characters]] = [b[0] for b in byte_strings]
        text = tf.strings.reduce_join(pieces, axis=-1)
        points = tf.strings.unicode_decode(text, "UTF-8")
        byte = tf.where(points < len(table), tf.gather(tf.constant(table), tf.minimum(points, len(table) - 1)), -1)
        single_bytes = tf.constant([bytes([b]) for b in range(256)])
        # A character outside the table (none in a byte-level vocabulary) stays itself, as the Python code.
        decoded = tf.where(byte >= 0, tf.gather(single_bytes, tf.maximum(byte, 0)),
                           tf.strings.unicode_split(text, "UTF-8"))
        return tf.strings.unicode_transcode(tf.strings.reduce_join(decoded, axis=-1), "UTF-8", "UTF-8",
                                            errors="replace", replacement_char=0xFFFD)

    def basic_words(self, tf, text):
        from keras_hub.src.tokenizers.word_piece_tokenizer import pretokenize

        from keras_pretrain.models.bert.bert_tokenizer import normalize

        return pretokenize(normalize(text, False), False, False, True, True)


# The in-graph layout of each SQuAD pipeline (`pipelines.for_tokenizer` picks the pipeline).
LAYOUTS = {pipelines.WORDPIECE.name: WordPieceLayout, pipelines.BYTE_LEVEL.name: ByteLevelLayout,
           pipelines.SENTENCEPIECE.name: serving_sentencepiece.SentencePieceLayout,
           pipelines.XLNET.name: serving_sentencepiece.XLNetLayout}


def check_tokenizer(tokenizer):
    """The layout of `tokenizer`'s SQuAD pipeline (`pipelines.for_tokenizer`: `WordPieceLayout` for our
    `BertTokenizer`; `ByteLevelLayout`: byte-level BPE, RoBERTa; `serving_sentencepiece.SentencePieceLayout`:
    ALBERT's SentencePiece; `serving_sentencepiece.XLNetLayout`: XLNet's) with its special ids in `.ids`;
    `ExportError` for any other tokenizer or a vocabulary without the special tokens."""
    pipeline = pipelines.for_tokenizer(tokenizer)
    layout_class = None if pipeline is None else LAYOUTS.get(pipeline.name)
    if layout_class is not None and layout_class.serves(tokenizer):
        layout = layout_class(tokenizer)
    else:
        raise ExportError(f"question-answering serving: the tokenizer must be a WordPiece BertTokenizer (BERT, "
                          f"ERNIE, DistilBERT, WordPiece ALBERT), ALBERT's SentencePiece AlbertTokenizer, "
                          f"XLNet's XLNetTokenizer or RoBERTa's byte-level BPE; got {type(tokenizer).__name__}.")
    layout.ids = {**getattr(layout, "fixed_ids", {}),
                  **{name: tokenizer.token_to_id(token) for name, token in layout.special}}
    unknown = getattr(layout, "unknown_id", None)
    missing = [token for (name, token) in layout.special if layout.ids[name] in (None, unknown)]
    if missing:
        raise ExportError(f"question-answering serving: the vocabulary has no {missing}.")
    return layout


def _ragged_ids(tf, ids):
    if not isinstance(ids, tf.RaggedTensor):
        ids = tf.RaggedTensor.from_tensor(ids)
    return tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64)


def pack_cls_first(layout, tf, rows, query_rows, window_ids, query_length, length, seq_length):
    """run_squad's window `[CLS] Q [SEP] D [SEP]` (`layout.separators` `[SEP]`s after Q), 0 / `doc_segment`
    segment ids, padded after: (inputs, doc offset [N], `[CLS]` position [N])."""
    ids = layout.ids
    cls, sep = column(tf, rows, ids["cls"]), column(tf, rows, ids["sep"])
    tokens = tf.concat([cls, query_rows] + [sep] * layout.separators + [window_ids, sep], axis=1)
    offset = query_length + 1 + layout.separators
    total = offset + length + 1
    positions = tf.range(seq_length)[None, :]
    inputs = {
        "token_ids": tokens.to_tensor(ids["pad"], shape=[None, seq_length]),
        "segment_ids": layout.doc_segment * tf.cast((positions >= offset[:, None]) & (positions < total[:, None]),
                                                    tf.int32),
        "padding_mask": tf.cast(positions < total[:, None], tf.int32),
    }
    return inputs, offset, tf.zeros_like(offset)


def windows(tf, layout, question, context, seq_length, doc_stride, max_query_length):
    """run_squad's features of each (question, context), in-graph, in `layout`'s token layout (its `pack`,
    else `pack_cls_first`), windows cut by `windows.graph_windows` (the Python features' `doc_spans`).

    Returns a dict: `inputs` (token_ids, segment_ids, padding_mask int32 [N, seq_length] for the N windows),
    `example` int32 [N] (the window's row in the batch), `offset` [N] (the first doc position: question
    length + 2; XLNet's 0), `length` [N] (doc tokens in the window), `cls_index` [N] (the class token's
    position), `doc_mask` / `max_context` bool [N, seq_length] (a doc token / in its max-context window; none
    for an example the layout `skip`s), `p_mask` float32 [N, seq_length] (0: the class token and the doc
    tokens, the authors'), `skipped` bool [N], `word` int32 [N,
    seq_length] (its word in the context (SentencePiece: its piece), -1 elsewhere), and what the layout's
    `document` adds for its `answers` (WordPiece: the context's `words` with their byte `word_starts`).
    """
    document = layout.document(tf, question, context, max_query_length)
    query, doc, word_of_piece = document.pop("query"), document.pop("doc"), document.pop("unit")
    doc_length = tf.cast(doc.row_lengths(), tf.int32)
    query_length = tf.cast(query.row_lengths(), tf.int32)
    room = doc_windows.max_tokens_for_doc(seq_length, query_length, 2 + layout.separators)
    skip = document.pop("skip", None)  # no answer (albert's "MISMATCH DETECTED!")
    example, start, length = doc_windows.graph_windows(tf, doc_length, room, doc_stride)
    rows = tf.shape(example)[0]
    # Global indices of each window's doc pieces in `doc.flat_values`.
    index = tf.ragged.range(length) + (tf.cast(tf.gather(doc.row_splits, example), tf.int32) + start)[:, None]
    window_ids = tf.gather(doc.flat_values, index)
    query_rows = tf.gather(query, example)
    pack = getattr(layout, "pack", None) or functools.partial(pack_cls_first, layout)
    inputs, offset, cls_index = pack(tf, rows, query_rows, window_ids, tf.gather(query_length, example), length,
                                     seq_length)
    positions = tf.range(seq_length)[None, :]
    # `_check_is_max_context`: min(left, right) + 0.01 * length, the first best window of each doc piece.
    within = tf.ragged.range(length)
    score = tf.cast(tf.minimum(within, length[:, None] - 1 - within), tf.float64) + 0.01 * tf.cast(
        length, tf.float64)[:, None]
    slots = tf.size(doc.flat_values)
    best = tf.math.unsorted_segment_max(score.flat_values, index.flat_values, slots)
    window = tf.repeat(tf.range(rows), length)
    first = tf.math.unsorted_segment_min(tf.where(score.flat_values == tf.gather(best, index.flat_values), window,
                                                  rows), index.flat_values, slots)
    is_max = tf.equal(window, tf.gather(first, index.flat_values))

    def on_doc(values, outside):  # ragged doc values [N, (length)] -> dense [N, seq_length] at their positions
        head = tf.RaggedTensor.from_row_lengths(tf.fill([tf.reduce_sum(offset)], outside), tf.cast(offset, tf.int64))
        return tf.concat([head, values], axis=1).to_tensor(outside, shape=[None, seq_length])

    doc_mask = on_doc(tf.ones_like(window_ids, tf.bool), False)
    skipped = tf.zeros([rows], tf.bool) if skip is None else tf.gather(skip, example)
    doc_mask &= ~skipped[:, None]
    return {"inputs": inputs, "example": example, "skipped": skipped, "offset": offset, "length": length,
            "doc_mask": doc_mask, "cls_index": cls_index,
            "p_mask": tf.where(doc_mask | (positions == cls_index[:, None]), 0.0, 1.0),
            "max_context": on_doc(window_ids.with_flat_values(is_max), False),
            "word": on_doc(tf.gather(tf.cast(word_of_piece, tf.int32), index), -1), **document}


def best_spans(tf, start_logits, end_logits, features, n_best_size, max_answer_length, batch):
    """run_squad's best span and null score per example from the windows' logits [N, T].

    Returns (window int32 [B], start, end positions in it [B], score float64 [B] (-inf: no valid span),
    null score float64 [B]).
    """
    start_logits, end_logits = tf.cast(start_logits, tf.float64), tf.cast(end_logits, tf.float64)
    length = start_logits.shape[-1]
    k = min(n_best_size, length)
    start_values, starts = tf.math.top_k(start_logits, k)  # ties: the lower index first, as sorted()
    end_values, ends = tf.math.top_k(end_logits, k)
    doc, max_context = features["doc_mask"], features["max_context"]
    valid = (tf.gather(doc, starts, batch_dims=1) & tf.gather(max_context, starts, batch_dims=1))[:, :, None]
    valid &= tf.gather(doc, ends, batch_dims=1)[:, None, :]
    span = ends[:, None, :] - starts[:, :, None]
    valid &= (span >= 0) & (span + 1 <= max_answer_length)
    scores = tf.where(valid, start_values[:, :, None] + end_values[:, None, :], float("-inf"))
    flat = tf.reshape(scores, [-1, k * k])
    pick = tf.argmax(flat, axis=-1, output_type=tf.int32)  # the first best: start rank, then end rank
    # unsorted_segment_max starts from the lowest float64, not -inf: no valid span scores that.
    window_best = tf.maximum(tf.reduce_max(flat, axis=-1), tf.float64.min)
    example, rows = features["example"], tf.shape(flat)[0]
    window_index = tf.range(rows)

    def first_window(values, reduce):
        target = reduce(values, example, batch)
        return tf.math.unsorted_segment_min(tf.where(values == tf.gather(target, example), window_index, rows),
                                            example, batch), target

    window, score = first_window(window_best, tf.math.unsorted_segment_max)
    score = tf.where(score > tf.float64.min, score, float("-inf"))
    null = start_logits[:, 0] + end_logits[:, 0]
    _, null_score = first_window(null, tf.math.unsorted_segment_min)
    pick = tf.gather(pick, window)
    start = tf.gather(tf.gather(starts, window), pick // k, batch_dims=1)
    end = tf.gather(tf.gather(ends, window), pick % k, batch_dims=1)
    return window, start, end, score, null_score


def final_text(tf, layout, pred_text, orig_text):
    """`get_final_text` in-graph: (text, first, last character of it in `orig_text`), each [B]."""
    tok_text = tf.strings.reduce_join(layout.basic_words(tf, orig_text), axis=-1, separator=" ")

    def find(args):
        haystack, needle = args
        parts = tf.strings.split(haystack, sep=needle, maxsplit=1)
        found = (tf.size(parts) > 1) & (tf.strings.length(needle) > 0)
        return tf.where(found, tf.strings.length(parts[0], unit="UTF8_CHAR"), -1)

    found = tf.map_fn(find, (tok_text, pred_text), fn_output_signature=tf.int32)
    orig_chars = tf.strings.unicode_split(orig_text, "UTF-8").to_tensor(" ")
    tok_chars = tf.strings.unicode_split(tok_text, "UTF-8").to_tensor(" ")
    orig_kept, tok_kept = tf.cast(orig_chars != " ", tf.int32), tf.cast(tok_chars != " ", tf.int32)
    orig_count = tf.reduce_sum(orig_kept, axis=-1)
    ok = (found >= 0) & (tf.reduce_sum(tok_kept, axis=-1) == orig_count) & (orig_count > 0)
    # A kept character's rank among the kept ones; orig_text's position of each rank.
    tok_rank = tf.cumsum(tok_kept, axis=-1, exclusive=True)
    orig_rank = tf.cumsum(orig_kept, axis=-1, exclusive=True)
    orig_length = tf.strings.length(orig_text, unit="UTF8_CHAR")
    safe = tf.where(ok, found, 0)
    pred_length = tf.strings.length(pred_text, unit="UTF8_CHAR")

    def orig_index(position):  # tok_text position -> the orig_text position of the same kept character
        position = tf.minimum(position, tf.shape(tok_rank)[1] - 1)  # in range where `ok` is False
        rank = tf.gather(tok_rank, position[:, None], batch_dims=1)
        # The first orig_text position whose kept rank is `rank` and which is kept.
        hit = tf.cast(tf.equal(orig_rank, rank) & (orig_kept > 0), tf.int32)
        return tf.argmax(hit, axis=-1, output_type=tf.int32)

    first = tf.where(ok, orig_index(safe), 0)
    last = tf.where(ok, orig_index(tf.maximum(safe + pred_length - 1, 0)), orig_length - 1)
    text = tf.where(ok, tf.strings.substr(orig_text, first, last - first + 1, unit="UTF8_CHAR"), orig_text)
    return text, first, last


def answers(tf, layout, vocabulary, context, features, window, start, end, ok):
    """The answer text and its character span in `context` for each example's best (window, start, end)."""
    token_ids = tf.gather(features["inputs"]["token_ids"], window)
    positions = tf.ragged.range(start, tf.maximum(end + 1, start))
    pieces = tf.gather(vocabulary, tf.gather(token_ids, positions, batch_dims=1))
    pred_text = tf.strings.regex_replace(layout.span_text(tf, pieces), PY_WHITESPACE, " ")  # " ".join(split())
    pred_text = tf.strings.regex_replace(pred_text, "^ | $", "")
    word_map = tf.gather(features["word"], window)
    first_word = tf.maximum(tf.gather(word_map, start[:, None], batch_dims=1)[:, 0], 0)
    last_word = tf.maximum(tf.gather(word_map, end[:, None], batch_dims=1)[:, 0], first_word)
    span_words = tf.gather(features["words"], tf.ragged.range(first_word, last_word + 1), batch_dims=1)
    orig_text = tf.strings.reduce_join(span_words, axis=-1, separator=" ")
    text, first, last = final_text(tf, layout, pred_text, orig_text)
    # orig_text is the words joined by one space: a character index there -> (word, index in the word).
    word_lengths = tf.strings.length(span_words, unit="UTF8_CHAR").to_tensor(0)
    word_offsets = tf.cumsum(word_lengths + 1, axis=-1, exclusive=True)
    real = tf.sequence_mask(last_word - first_word + 1, tf.shape(word_offsets)[1])
    word_starts = tf.cast(features["word_starts"].to_tensor(0), tf.int32)

    def in_context(index):
        word = tf.reduce_sum(tf.cast((word_offsets <= index[:, None]) & real, tf.int32), axis=-1) - 1
        inside = index - tf.gather(word_offsets, word[:, None], batch_dims=1)[:, 0]
        byte = tf.gather(word_starts, (first_word + word)[:, None], batch_dims=1)[:, 0]
        before = tf.strings.substr(context, tf.zeros_like(byte), byte)
        return tf.strings.length(before, unit="UTF8_CHAR") + inside

    begin, finish = in_context(first), in_context(last) + 1
    return (tf.where(ok, text, ""), tf.where(ok, begin, -1), tf.where(ok, finish, -1))


def export_qa_serving(model, path, tokenizer, seq_length=384, doc_stride=128, max_query_length=64, n_best_size=20,
                      max_answer_length=30, version_2_with_negative=False, null_score_diff_threshold=0.0):
    """Writes the serving SavedModel of a `SpanQuestionAnswering` `model` (the answer-class
    `BeamQuestionAnswering`: ALBERT's for v2.0 with its SentencePiece tokenizer, XLNet's for v1.1 and v2.0;
    see the module docstring; TF backend: `hub_modules.exporting.export_qa_serving` runs it from any backend).
    Returns `path`."""
    from keras_pretrain.export import contracts
    from keras_pretrain.export.serving import save_serving_model

    tf = require_tensorflow_backend()
    layout = check_tokenizer(tokenizer)
    beam = check_model(model, layout, version_2_with_negative)
    limit = getattr(model.backbone, "max_sequence_length", None)
    if limit and seq_length > limit:
        raise ExportError(f"seq_length {seq_length} exceeds the model's {limit} positions.")
    special = 2 + layout.separators
    if doc_windows.check_lengths(seq_length, max_query_length, doc_stride, special)[1] is not None:
        raise ExportError(f"doc_stride {doc_stride} must be in [1, {seq_length - max_query_length - special}] "
                          f"(seq_length {seq_length} - max_query_length {max_query_length} - {special}).")
    names = contracts.input_names(model) or ["padding_mask", "segment_ids", "token_ids"]
    root = tf.train.Checkpoint()
    root.model = model
    root.tokenizer = tokenizer
    if hasattr(layout, "build"):
        root.layout = layout.build(tf)  # its tensorflow-text resources, tracked
    specs = [tf.TensorSpec([None], tf.string, name="question"), tf.TensorSpec([None], tf.string, name="context")]

    def serve(question, context):
        features = windows(tf, layout, question, context, seq_length, doc_stride, max_query_length)
        x = dict(features["inputs"])
        if "task_type_ids" in names:  # ERNIE 2.0 task embeddings: task 0
            x["task_type_ids"] = tf.zeros_like(x["token_ids"])
        x = {name: x[name] for name in names}
        batch = tf.shape(question)[0]
        if beam:
            x["p_mask"] = features["p_mask"]
            if getattr(layout, "cls_index_input", False):  # XLNet: the class token ends each window
                x["cls_index"] = features["cls_index"]
            outputs = model(x, training=False)
            window, start, end, score, null = serving_sentencepiece.beam_best_spans(tf, outputs, features, max_answer_length, batch,
                                                              model.start_n_top, model.end_n_top,
                                                              layout.last_excluded)
            found = score > float("-inf")
            result = {"score": tf.cast(score, tf.float32)}
            if version_2_with_negative:
                result["no_answer_score"] = tf.cast(null, tf.float32)
            if layout.null_threshold:  # albert write_predictions_v2 (xlnet's: always the best span)
                found &= null < null_score_diff_threshold
        else:
            outputs = model(x, training=False)
            window, start, end, score, null = best_spans(tf, outputs["start_logits"], outputs["end_logits"],
                                                         features, n_best_size, max_answer_length, batch)
            found = score > float("-inf")
            result = {"score": tf.cast(score, tf.float32)}
            if version_2_with_negative:
                no_answer = null - score
                result["no_answer_score"] = tf.cast(no_answer, tf.float32)
                found &= ~(no_answer > null_score_diff_threshold)
        result["answer"], result["start"], result["end"] = layout.answers(
            tf, context, features, window, start, end, found)
        return result

    return save_serving_model(tf, root, model, serve, specs, path)


def check_model(model, layout, version_2_with_negative):
    """True for the answer-class (beam) head; `ExportError` where the task and the layout do not go together
    (albert: the span head for v1.1, the answer-class model for v2.0; xlnet: the answer-class model)."""
    from keras_pretrain.tasks.question_answering.beam_head import BeamQuestionAnswering

    beam = isinstance(model, BeamQuestionAnswering)
    if beam and not getattr(layout, "answer_class", False):
        raise ExportError(f"question-answering serving: the answer-class (beam) head is served with ALBERT's "
                          f"SentencePiece and XLNet's layouts only; got {type(layout.tokenizer).__name__}.")
    if not getattr(layout, "span_head", True):
        if not beam:
            raise ExportError(f"question-answering serving: XLNet's pipeline (xlnet run_squad.py) serves the "
                              f"answer-class model (BeamQuestionAnswering), v1.1 and v2.0; got "
                              f"{type(model).__name__}.")
        return beam
    if getattr(layout, "answer_class", False) and beam != bool(version_2_with_negative):
        raise ExportError("question-answering serving: ALBERT's SentencePiece pipeline (albert squad_utils) "
                          "serves the span head (SpanQuestionAnswering) for SQuAD v1.1 and the answer-class "
                          f"model (BeamQuestionAnswering) for v2.0; got {type(model).__name__} with "
                          f"version_2_with_negative={bool(version_2_with_negative)}.")
    return beam


def write_from_spec(model, tokenizer, spec, family=None):
    """The serving SavedModel that `spec` describes (`export_qa_serving` with its `options`)."""
    return export_qa_serving(model, spec["path"], tokenizer, **spec["options"])
