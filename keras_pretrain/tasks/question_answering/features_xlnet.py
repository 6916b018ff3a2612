"""SQuAD examples -> XLNet's SQuAD features (zihangdai/xlnet `run_squad.py`, the `xlnet-tensorflow` release).

Record for record equal to its `read_squad_examples` + `convert_examples_to_features` written by its
`FeatureWriter`. The reading (`squad.read_squad_examples`), the character alignment (`features_sentencepiece`)
and the windows (`windows`) are ALBERT's (which albert ported from this script: raw context, banded LCS of
the pieces against the raw characters, "MISMATCH DETECTED!" examples skipped); what differs is XLNet's:

- text: `prepro_utils.preprocess_text` (`preprocess_text` here: `normalize_sentencepiece_text(...,
  xlnet_quotes=True)`; also "``" and "''" -> '"'), and its `encode_pieces`, whose digit-comma
  re-split drops the "▁" the new first piece gains when the piece had none (albert's Python 3 copy keeps it);
- layout: the paragraph FIRST, `P <sep> Q <sep> <cls>`, zeros padded on the right; `segment_ids` 0 (P and its
  `<sep>`), 1 (Q and its `<sep>`), 2 (`<cls>`), 3 (padding); `input_mask` inverted (0 = real, 1 = padding);
  `p_mask` 0 for the paragraph and `<cls>`; `cls_index` the `<cls>` position; the `<sep>` / `<cls>` ids are
  `data_utils`' constants (4 / 3 in XLNet's vocabulary), not looked up;
- positions: doc offset 0 (P first); a window without the answer, and every window of an impossible question,
  points at `cls_index`.

Feature names of the files: `unique_ids`, `input_ids`, `input_mask` (float), `p_mask` (float), `segment_ids`,
`cls_index`, and in training mode `start_positions`, `end_positions`, `is_impossible` (float).
"""

import functools

from keras_pretrain.tasks.question_answering import windows
from keras_pretrain.tasks.question_answering.features_sentencepiece import SPIECE_UNDERLINE
from keras_pretrain.tasks.question_answering.features_sentencepiece import align
from keras_pretrain.tasks.question_answering.features_sentencepiece import convert_index
from keras_pretrain.tasks.question_answering.features_sentencepiece import normalize_sentencepiece_text
from keras_pretrain.tasks.question_answering.squad import FIRST_UNIQUE_ID
from keras_pretrain.tasks.question_answering.squad import SentencePieceSquadFeature

SEP_ID, CLS_ID = 4, 3  # xlnet data_utils' special_symbols
SEG_ID_P, SEG_ID_Q, SEG_ID_CLS, SEG_ID_PAD = 0, 1, 2, 3
FEATURE_NAMES = ("unique_ids", "input_ids", "input_mask", "p_mask", "segment_ids", "cls_index")
TRAINING_FEATURE_NAMES = FEATURE_NAMES + ("start_positions", "end_positions", "is_impossible")
FLOAT_FEATURES = ("input_mask", "p_mask", "is_impossible")


# xlnet `prepro_utils.preprocess_text`: the one implementation, with xlnet's quotes.
preprocess_text = functools.partial(normalize_sentencepiece_text, xlnet_quotes=True)


def sentencepiece_functions(processor):
    """`(encode_pieces, piece_to_id)` of a `sentencepiece.SentencePieceProcessor`, as xlnet `prepro_utils`."""

    def encode_pieces(text):
        pieces = []
        for piece in processor.EncodeAsPieces(text):
            if len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit():
                current = list(processor.EncodeAsPieces(piece[:-1].replace(SPIECE_UNDERLINE, "")))
                if piece[0] != SPIECE_UNDERLINE and current[0][0] == SPIECE_UNDERLINE:
                    current = current[1:] if len(current[0]) == 1 else [current[0][1:]] + current[1:]
                pieces += current + [piece[-1]]
            else:
                pieces.append(piece)
        return pieces

    return encode_pieces, processor.PieceToId


def _window(span, spans, span_index, doc, query, max_seq_length):
    """(input ids, segment ids, p_mask, max-context map, paragraph length, cls index, input mask) of one
    window."""
    doc_start, length = span
    tokens, max_context = [], {}
    for position in range(doc_start, doc_start + length):
        max_context[len(tokens)] = windows.is_max_context(spans, span_index, position)
        tokens.append(doc[position])
    paragraph_len = len(tokens)
    tokens += [SEP_ID] + list(query) + [SEP_ID]
    segment_ids = [SEG_ID_P] * (paragraph_len + 1) + [SEG_ID_Q] * (len(query) + 1)
    p_mask = [0] * paragraph_len + [1] * (len(query) + 2)
    cls_index = len(tokens)
    tokens.append(CLS_ID)
    segment_ids.append(SEG_ID_CLS)
    p_mask.append(0)
    padding = max_seq_length - len(tokens)
    return (tokens + [0] * padding, segment_ids + [SEG_ID_PAD] * padding, p_mask + [1] * padding, max_context,
            paragraph_len, cls_index, [0] * len(tokens) + [1] * padding)


def convert_examples_to_features(examples, encode_pieces, piece_to_id, max_seq_length=512, doc_stride=128,
                                 max_query_length=64, is_training=False, uncased=False, output_fn=None):
    """xlnet run_squad's `convert_examples_to_features` (`uncased`: its `FLAGS.uncased`), in its order.

    `encode_pieces` / `piece_to_id` as `sentencepiece_functions(processor)` gives them. Returns the list of
    `squad.SentencePieceSquadFeature` (with `cls_index`; also passed one by one to `output_fn`, when given).
    """
    features, unique_id = [], FIRST_UNIQUE_ID
    for example_index, example in enumerate(examples):
        query = [piece_to_id(p) for p in encode_pieces(preprocess_text(example.question_text, lower=uncased))]
        query = query[:max_query_length]
        para_tokens = list(encode_pieces(preprocess_text(example.paragraph_text, lower=uncased)))
        aligned = align(example.paragraph_text, para_tokens, uncased)
        if aligned is None:
            print("MISMATCH DETECTED!")
            continue
        tok_start_to_orig_index, tok_end_to_orig_index, orig_to_chartok_index, chartok_to_tok_index = aligned
        answer = None
        if is_training and not example.is_impossible:
            start = example.start_position
            end = start + len(example.orig_answer_text) - 1
            answer = (chartok_to_tok_index[convert_index(orig_to_chartok_index, start, is_start=True)],
                      chartok_to_tok_index[convert_index(orig_to_chartok_index, end, is_start=False)])
            assert answer[0] <= answer[1]
        doc = [piece_to_id(p) for p in para_tokens]
        max_tokens_for_doc = windows.max_tokens_for_doc(max_seq_length, len(query), 3)
        if max_tokens_for_doc <= 0:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the paragraph after a "
                             f"{len(query)}-piece question and 3 special pieces.")
        spans = windows.doc_spans(len(doc), max_tokens_for_doc, doc_stride)
        for span_index, span in enumerate(spans):
            input_ids, segment_ids, p_mask, max_context, paragraph_len, cls_index, input_mask = _window(
                span, spans, span_index, doc, query, max_seq_length)
            impossible, start_position, end_position = example.is_impossible, None, None
            if is_training and not impossible:
                doc_start, doc_end = span[0], span[0] + span[1] - 1
                if answer[0] >= doc_start and answer[1] <= doc_end:
                    start_position, end_position = answer[0] - doc_start, answer[1] - doc_start
                else:
                    impossible = True
            if is_training and impossible:
                start_position = end_position = cls_index
            feature = SentencePieceSquadFeature(
                unique_id=unique_id, example_index=None if is_training else example_index,
                doc_span_index=span_index,
                tok_start_to_orig_index=tuple(tok_start_to_orig_index[span[0]:span[0] + span[1]]),
                tok_end_to_orig_index=tuple(tok_end_to_orig_index[span[0]:span[0] + span[1]]),
                token_is_max_context=max_context, input_ids=tuple(input_ids), input_mask=tuple(input_mask),
                p_mask=tuple(p_mask), segment_ids=tuple(segment_ids), paragraph_len=paragraph_len,
                cls_index=cls_index, start_position=start_position, end_position=end_position,
                is_impossible=impossible)
            if output_fn is not None:
                output_fn(feature)
            features.append(feature)
            unique_id += 1
    return features


def feature_record(feature, is_training):
    """The ordered dict feature name -> list of numbers xlnet's `FeatureWriter` writes (floats where its are)."""
    record = {"unique_ids": [feature.unique_id], "input_ids": list(feature.input_ids),
              "input_mask": [float(x) for x in feature.input_mask], "p_mask": [float(x) for x in feature.p_mask],
              "segment_ids": list(feature.segment_ids), "cls_index": [feature.cls_index]}
    if is_training:
        record.update(start_positions=[feature.start_position], end_positions=[feature.end_position],
                      is_impossible=[float(feature.is_impossible)])
    return record


def write_features(features, path, is_training):
    """Writes features as xlnet's `FeatureWriter`'s TFRecord file; returns the number of records."""
    import tensorflow as tf

    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for feature in features:
            fields = {}
            for name, values in feature_record(feature, is_training).items():
                if name in FLOAT_FEATURES:
                    fields[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                else:
                    fields[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            writer.write(tf.train.Example(features=tf.train.Features(feature=fields)).SerializeToString())
            count += 1
    return count
