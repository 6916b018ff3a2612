"""SQuAD examples -> ALBERT's SentencePiece SQuAD features (google-research/albert `squad_utils.py`).

Record for record equal to albert's `convert_examples_to_features` written by its `FeatureWriter`, on the
`SquadExample`s (with `paragraph_text`) of albert's reader (`squad.read_squad_examples`, not bert's `run_squad.py` one).
Its features (`squad.SquadFeature`) are built on SentencePiece pieces, aligned to the characters
of the raw context (`preprocess_text` is albert's, `normalize_sentencepiece_text` here):

- the question: `encode_ids(preprocess_text(question))`, cut at `max_query_length` ids; the context:
  `encode_pieces(preprocess_text(context))`;
- the pieces, "▁" read as a space, are concatenated and aligned to the raw context's characters by the
  banded longest-common-subsequence of `_lcs_match` (a raw character matches when `preprocess_text(c,
  remove_space=False)` is the piece character; band `|n - m| + 5`, doubled once if fewer than 80% of the
  characters matched); an example whose alignment still matches fewer than 80% is skipped ("MISMATCH
  DETECTED!"), without using a unique id;
- `tok_start_to_orig_index` / `tok_end_to_orig_index`: each piece's first / last character in the raw
  context, through `_convert_index` (an unaligned character takes its neighbours' positions);
- the answer (training): its first / last raw character -> piece positions; windows as bert's
  (`windows.doc_spans`, `windows.is_max_context`), `[CLS] question [SEP] doc [SEP]`, 0-padded;
  `p_mask` 0 for `[CLS]` and the doc pieces, 1 elsewhere (padding included); a window without the answer
  is impossible (positions 0, 0), so is every window of an impossible question; `example_index` is None
  in training mode (as theirs); unique ids from 1000000000.

Python 3 and the two copies of the original. The PyPI `albert-tensorflow` copy counts each piece's length
in UTF-8 BYTES (`six.ensure_binary(token)`) for the piece -> character offsets while the alignment counts
characters; with any non-ASCII character left after `preprocess_text` (CJK, emoji, curly quotes, dashes)
its offsets drift and it fails with an IndexError once they pass the end. google-research/albert master
counts characters (`six.ensure_text(token)`). `legacy_byte_offsets=False` (default) is master's,
`legacy_byte_offsets=True` the PyPI copy's (the same IndexError included); both are the same on text that is
ASCII after `preprocess_text`.

Feature names of the files (`FeatureWriter`): `unique_ids`, `input_ids`, `input_mask`, `segment_ids`,
`p_mask`, and in training mode `start_positions`, `end_positions`, `is_impossible` (int64).

Tokenizer. The original works on pieces (`SentencePieceProcessor.EncodeAsPieces` + albert's digit-comma
re-split) and their ids (`PieceToId`); so does this module: `encode_pieces` (`text -> list of str pieces`)
and `piece_to_id`. `sentencepiece_functions(processor)` builds them (and `id_to_piece`) from a
`sentencepiece.SentencePieceProcessor`. `keras_pretrain.models.albert.AlbertTokenizer` gives the same ids
(`tokenizer(text) == [piece_to_id(p) for p in encode_pieces(preprocess_text(text))]`, its own
`preprocess_text` and digit-comma re-split included) and can feed the pieces as
`encode_pieces = lambda text: [tokenizer.id_to_token(i) for i in tokenizer(text)]` (batched: a dict of the
preprocessed questions and contexts, `.__getitem__`), `piece_to_id = tokenizer.token_to_id`; but an
unknown character then reads back as "<unk>" instead of its surface piece, which changes the alignment.
For data with unknown pieces give this module a `SentencePieceProcessor` of the same model file.
"""

import unicodedata

from keras_pretrain.data import packing
from keras_pretrain.tasks.question_answering import features_wordpiece
from keras_pretrain.tasks.question_answering import windows
from keras_pretrain.tasks.question_answering.squad import FIRST_UNIQUE_ID
from keras_pretrain.tasks.question_answering.squad import SquadFeature

FEATURE_NAMES = ("unique_ids", "input_ids", "input_mask", "segment_ids", "p_mask")
TRAINING_FEATURE_NAMES = FEATURE_NAMES + ("start_positions", "end_positions", "is_impossible")
SPIECE_UNDERLINE = "\u2581"


# === Tokenization ===

def normalize_sentencepiece_text(inputs, lower=False, remove_space=True, keep_accents=False, xlnet_quotes=False):
    """The text the SentencePiece families' authors tokenize, written once: albert `tokenization.preprocess_text`
    (the defaults) and xlnet `prepro_utils.preprocess_text` (`xlnet_quotes=True`).

    Whitespace runs -> one space and the ends stripped (`remove_space`), "``" and "''" -> '"' (`xlnet_quotes`),
    NFKD and the combining characters removed (unless `keep_accents`, xlnet's option; albert always strips),
    `str.lower()` (`lower`).
    """
    outputs = " ".join(inputs.strip().split()) if remove_space else inputs
    if xlnet_quotes:
        outputs = outputs.replace("``", '"').replace("''", '"')
    if not keep_accents:
        outputs = unicodedata.normalize("NFKD", outputs)
        outputs = "".join(c for c in outputs if not unicodedata.combining(c))
    return outputs.lower() if lower else outputs


def sentencepiece_functions(processor, drop_space=False):
    """`(encode_pieces, piece_to_id, id_to_piece)` of a `sentencepiece.SentencePieceProcessor`, as the
    originals' `encode_pieces(sp, text, return_unicode=False)` runs on Python 3: SentencePiece pieces, and a
    piece ending in "<digit>," encoded again without its comma and its "▁" and followed by ",". albert's
    (`drop_space=False`) compares a str piece with the bytes "▁", so the new first piece keeps its "▁"; xlnet
    `prepro_utils`' (`drop_space=True`) takes it off when the piece had none (the piece dropped when it was
    "▁" alone)."""

    def encode_pieces(text):
        pieces = []
        for piece in processor.EncodeAsPieces(text):
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                current = list(processor.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
                if drop_space and piece[0] != SPIECE_UNDERLINE and current[0][0] == SPIECE_UNDERLINE:
                    current = current[1:] if len(current[0]) == 1 else [current[0][1:]] + current[1:]
                pieces += current + [","]
            else:
                pieces.append(piece)
        return pieces

    return encode_pieces, processor.PieceToId, processor.IdToPiece


# === Alignment ===

def convert_index(index, pos, m=None, is_start=True):
    """albert's `_convert_index`: `index[pos]`, or for an unaligned position one derived from the nearest
    aligned neighbours."""
    if index[pos] is not None:
        return index[pos]
    n = len(index)
    rear = pos
    while rear < n - 1 and index[rear] is None:
        rear += 1
    front = pos
    while front > 0 and index[front] is None:
        front -= 1
    assert index[front] is not None or index[rear] is not None
    if index[front] is None:
        if index[rear] >= 1:
            return 0 if is_start else index[rear] - 1
        return index[rear]
    if index[rear] is None:
        if m is not None and index[front] < m - 1:
            return index[front] + 1 if is_start else m - 1
        return index[front]
    if is_start:
        return index[front] + 1 if index[rear] > index[front] + 1 else index[rear]
    return index[rear] - 1 if index[rear] > index[front] + 1 else index[front]


def _lcs_match(paragraph_text, tok_cat_text, max_dist, lower):
    """albert's banded LCS: (score of the last cell, the back-pointer dict `g`)."""
    n, m = len(paragraph_text), len(tok_cat_text)
    f, g = {}, {}
    chars = [normalize_sentencepiece_text(c, lower=lower, remove_space=False) for c in paragraph_text]
    for i in range(n):
        for j in range(max(i - max_dist, 0), min(i + max_dist, m)):
            value = 0
            if i > 0:
                g[(i, j)] = 0
                value = f.get((i - 1, j), 0)
            if j > 0 and f.get((i, j - 1), 0) > value:
                g[(i, j)] = 1
                value = f[(i, j - 1)]
            f_prev = f.get((i - 1, j - 1), 0) if i > 0 and j > 0 else 0
            if chars[i] == tok_cat_text[j] and f_prev + 1 > value:
                g[(i, j)] = 2
                value = f_prev + 1
            f[(i, j)] = value
    return f.get((n - 1, m - 1), 0), g


def align(paragraph_text, para_tokens, lower=True, legacy_byte_offsets=False):
    """The raw-context characters of each piece, as albert's `convert_examples_to_features`.

    Args:
        paragraph_text: str, the raw context.
        para_tokens: its pieces (of the preprocessed text).
        lower: bool, `do_lower_case`.
        legacy_byte_offsets: bool, count piece lengths in UTF-8 bytes as the PyPI copy (see the module).

    Returns:
        None when the alignment fails (their "MISMATCH DETECTED!"), else `(tok_start_to_orig_index,
        tok_end_to_orig_index, orig_to_chartok_index, chartok_to_tok_index)`.
    """
    chartok_to_tok_index, tok_start_to_chartok_index, tok_end_to_chartok_index = [], [], []
    char_cnt = 0
    for i, token in enumerate(para_tokens):
        if legacy_byte_offsets:
            length = len(token.encode("utf-8").replace(SPIECE_UNDERLINE.encode("utf-8"), b" "))
        else:
            length = len(token)
        chartok_to_tok_index.extend([i] * length)
        tok_start_to_chartok_index.append(char_cnt)
        char_cnt += length
        tok_end_to_chartok_index.append(char_cnt - 1)
    tok_cat_text = "".join(para_tokens).replace(SPIECE_UNDERLINE, " ")
    n, m = len(paragraph_text), len(tok_cat_text)
    max_dist = abs(n - m) + 5
    for _ in range(2):
        score, g = _lcs_match(paragraph_text, tok_cat_text, max_dist, lower)
        if score > 0.8 * n:
            break
        max_dist *= 2
    orig_to_chartok_index, chartok_to_orig_index = [None] * n, [None] * m
    i, j = n - 1, m - 1
    while i >= 0 and j >= 0:
        if (i, j) not in g:
            break
        if g[(i, j)] == 2:
            orig_to_chartok_index[i], chartok_to_orig_index[j] = j, i
            i, j = i - 1, j - 1
        elif g[(i, j)] == 1:
            j -= 1
        else:
            i -= 1
    if all(v is None for v in orig_to_chartok_index) or score < 0.8 * n:
        return None
    starts = [convert_index(chartok_to_orig_index, p, n, is_start=True) for p in tok_start_to_chartok_index]
    ends = [convert_index(chartok_to_orig_index, p, n, is_start=False) for p in tok_end_to_chartok_index]
    return starts, ends, orig_to_chartok_index, chartok_to_tok_index


# === Features ===

def example_pieces(example, encode_pieces, piece_to_id, max_query_length, is_training, lower, xlnet_quotes=False,
                   legacy_byte_offsets=False):
    """One example's pieces, as albert's (and xlnet's, its copy) `convert_examples_to_features` makes them.

    Returns:
        None when the alignment fails ("MISMATCH DETECTED!"), else `(query, doc, tok_start_to_orig_index,
        tok_end_to_orig_index, answer)`: the question's ids (cut at `max_query_length`), the context's ids,
        each context piece's first / last raw character, and (training, answerable question) the first and
        last piece of the answer, else None.
    """
    def pieces(text):
        return list(encode_pieces(normalize_sentencepiece_text(text, lower=lower, xlnet_quotes=xlnet_quotes)))

    query = [piece_to_id(p) for p in pieces(example.question_text)][:max_query_length]
    para_tokens = pieces(example.paragraph_text)
    aligned = align(example.paragraph_text, para_tokens, lower, legacy_byte_offsets)
    if aligned is None:
        return None
    tok_start_to_orig_index, tok_end_to_orig_index, orig_to_chartok_index, chartok_to_tok_index = aligned
    answer = None
    if is_training and not example.is_impossible:
        start = example.start_position
        end = start + len(example.orig_answer_text) - 1
        answer = (chartok_to_tok_index[convert_index(orig_to_chartok_index, start, is_start=True)],
                  chartok_to_tok_index[convert_index(orig_to_chartok_index, end, is_start=False)])
        assert answer[0] <= answer[1]
    return query, [piece_to_id(p) for p in para_tokens], tok_start_to_orig_index, tok_end_to_orig_index, answer


def convert_windows(examples, encode_pieces, piece_to_id, layout, max_seq_length, doc_stride, max_query_length,
                    is_training, lower, xlnet_quotes=False, legacy_byte_offsets=False, on_mismatch=None,
                    output_fn=None):
    """The SentencePiece features of `examples`, albert's and xlnet's `convert_examples_to_features` written once,
    in their order (example by example, window by window); what differs is the `layout` of a window.

    Args:
        examples, encode_pieces, piece_to_id, max_seq_length, doc_stride, max_query_length, is_training,
            output_fn: as `convert_examples_to_features`.
        layout: callable `(query ids, the window's doc ids, max_seq_length) -> (fields, doc offset, null
            position)`: the `SquadFeature` fields of the padded sequence (`input_ids`, `input_mask`,
            `segment_ids`, `p_mask`, `paragraph_len`, ...), the position of the window's first doc piece, and
            where a window without the answer (or an impossible question) points.
        lower: bool, the texts and the alignment lower-cased (albert's `do_lower_case`, xlnet's `uncased`).
        xlnet_quotes, legacy_byte_offsets: `normalize_sentencepiece_text`'s and `align`'s options.
        on_mismatch: callable or None, called for an example skipped by the alignment (xlnet prints).
    """
    features = []
    unique_id = FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        pieces = example_pieces(example, encode_pieces, piece_to_id, max_query_length, is_training, lower,
                                xlnet_quotes, legacy_byte_offsets)
        if pieces is None:
            if on_mismatch is not None:
                on_mismatch()
            continue
        query, doc, tok_start_to_orig_index, tok_end_to_orig_index, answer = pieces
        max_tokens_for_doc = windows.max_tokens_for_doc(max_seq_length, len(query), 3)
        if max_tokens_for_doc <= 0:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the doc after a "
                             f"{len(query)}-piece question and 3 special pieces.")
        spans = windows.doc_spans(len(doc), max_tokens_for_doc, doc_stride)
        for span_index, (doc_start, length) in enumerate(spans):
            fields, offset, null_position = layout(query, doc[doc_start:doc_start + length], max_seq_length)
            impossible, start_position, end_position = example.is_impossible, None, None
            if is_training and not impossible:
                if answer[0] >= doc_start and answer[1] <= doc_start + length - 1:
                    start_position, end_position = answer[0] - doc_start + offset, answer[1] - doc_start + offset
                else:
                    impossible = True
            if is_training and impossible:
                start_position = end_position = null_position
            feature = SquadFeature(
                unique_id=unique_id, example_index=None if is_training else example_index,
                doc_span_index=span_index,
                tok_start_to_orig_index=tuple(tok_start_to_orig_index[doc_start:doc_start + length]),
                tok_end_to_orig_index=tuple(tok_end_to_orig_index[doc_start:doc_start + length]),
                token_is_max_context=windows.max_context_map(spans, span_index, offset),
                start_position=start_position, end_position=end_position, is_impossible=impossible, **fields)
            if output_fn is not None:
                output_fn(feature)
            features.append(feature)
            unique_id += 1
    return features


def albert_layout(cls_id, sep_id, id_to_piece=None):
    """albert's window (a `convert_windows` layout): `[CLS] question [SEP] doc [SEP]` (`packing.BERT`), the doc
    in segment 1, 0-padded; `p_mask` 0 for `[CLS]` and the doc pieces, 1 elsewhere (padding included);
    `paragraph_len` the unpadded length; `tokens` the pieces of all `input_ids` (None without `id_to_piece`);
    the answer positions after `[CLS] question [SEP]`, 0 without it."""

    def layout(query, doc, max_seq_length):
        tokens, segment_ids = packing.BERT.pack_lists([query, doc], cls_id, sep_id)
        padding = max_seq_length - len(tokens)
        input_ids = tokens + [0] * padding
        fields = dict(
            input_ids=tuple(input_ids), input_mask=tuple([1] * len(tokens) + [0] * padding),
            segment_ids=tuple(segment_ids + [0] * padding), paragraph_len=len(tokens),
            p_mask=tuple([0] + [1] * (len(query) + 1) + [0] * len(doc) + [1] + [1] * padding),
            tokens=None if id_to_piece is None else tuple(id_to_piece(t) for t in input_ids))
        return fields, len(query) + 2, 0

    return layout


def convert_examples_to_features(examples, encode_pieces, piece_to_id, max_seq_length=384, doc_stride=128,
                                 max_query_length=64, is_training=False, do_lower_case=True, id_to_piece=None,
                                 cls_piece="[CLS]", sep_piece="[SEP]", legacy_byte_offsets=False,
                                 output_fn=None):
    """albert's `convert_examples_to_features`, in its order (example by example, window by window).

    Args:
        examples: iterable of `SquadExample` with `paragraph_text` (`squad.read_squad_examples`).
        encode_pieces: callable `preprocessed text -> list of str pieces` (albert's `encode_pieces`;
            `sentencepiece_functions(processor)[0]`). It is called on `normalize_sentencepiece_text(text,
            lower=do_lower_case)`.
        piece_to_id: callable `piece -> int` (`SentencePieceProcessor.PieceToId`).
        max_seq_length, doc_stride, max_query_length: ints, as the script's flags.
        is_training: bool, compute the answer positions (examples read with `is_training=True`).
        do_lower_case: bool, `normalize_sentencepiece_text(..., lower=do_lower_case)` of the texts and of each
            raw context character in the alignment.
        id_to_piece: callable `int -> piece` for `SquadFeature.tokens` (None: `tokens` is None).
        cls_piece, sep_piece: the pieces of `[CLS]` / `[SEP]`.
        legacy_byte_offsets: bool, the PyPI copy's byte-length offsets (see the module docstring).
        output_fn: optional callable, called with each feature as it is made (theirs), e.g. a writer.

    Returns:
        A list of `SquadFeature`.

    Example:
    ```python
    import sentencepiece as spm
    processor = spm.SentencePieceProcessor(model_file="30k-clean.model")
    encode_pieces, piece_to_id, id_to_piece = sentencepiece_functions(processor)
    examples = read_squad_examples("train-v2.0.json", is_training=True)
    features = convert_examples_to_features(examples, encode_pieces, piece_to_id, 384, 128, 64,
                                            is_training=True, id_to_piece=id_to_piece)
    write_features(features, "train.tfrecord", is_training=True)
    ```
    """
    layout = albert_layout(piece_to_id(cls_piece), piece_to_id(sep_piece), id_to_piece)
    return convert_windows(examples, encode_pieces, piece_to_id, layout, max_seq_length, doc_stride,
                           max_query_length, is_training, do_lower_case, legacy_byte_offsets=legacy_byte_offsets,
                           output_fn=output_fn)


# === Files and arrays ===

def feature_record(feature, is_training):
    """The ordered dict feature name -> list of ints `FeatureWriter` writes for one feature (with `p_mask`)."""
    return features_wordpiece.feature_record(feature, is_training, extra=("p_mask",))


def write_features(features, path, is_training):
    """Writes features as `FeatureWriter`'s TFRecord file; returns the number of records. Records are
    serialized deterministically; they equal the original's as parsed `tf.train.Example`s."""
    return features_wordpiece.write_records((feature_record(f, is_training) for f in features), path)
