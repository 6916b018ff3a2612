"""SQuAD examples -> XLNet's SQuAD features (zihangdai/xlnet `run_squad.py`, the `xlnet-tensorflow` release).

Record for record equal to its `read_squad_examples` + `convert_examples_to_features` written by its
`FeatureWriter`. The reading (`squad.read_squad_examples`), the character alignment (`features_sentencepiece`)
and the windows (`windows`) are ALBERT's (which albert ported from this script: raw context, banded LCS of
the pieces against the raw characters, "MISMATCH DETECTED!" examples skipped); what differs is XLNet's:

- text: `prepro_utils.preprocess_text` (`normalize_sentencepiece_text(..., xlnet_quotes=True)`: also "``" and
  "''" -> '"'), and its `encode_pieces`, whose digit-comma re-split drops the "▁" the new first piece gains
  when the piece had none (albert's Python 3 copy keeps it);
- layout: the paragraph FIRST, `P <sep> Q <sep> <cls>`, zeros padded on the right; `segment_ids` 0 (P and its
  `<sep>`), 1 (Q and its `<sep>`), 2 (`<cls>`), 3 (padding); `input_mask` inverted (0 = real, 1 = padding);
  `p_mask` 0 for the paragraph and `<cls>`; `cls_index` the `<cls>` position; the `<sep>` / `<cls>` ids are
  `data_utils`' constants (4 / 3 in XLNet's vocabulary), not looked up;
- positions: doc offset 0 (P first); a window without the answer, and every window of an impossible question,
  points at `cls_index`.

Feature names of the files: `unique_ids`, `input_ids`, `input_mask` (float), `p_mask` (float), `segment_ids`,
`cls_index`, and in training mode `start_positions`, `end_positions`, `is_impossible` (float).
"""

from keras_pretrain.data import packing
from keras_pretrain.tasks.question_answering import features_sentencepiece
from keras_pretrain.tasks.question_answering import features_wordpiece

SEP_ID, CLS_ID = 4, 3  # xlnet data_utils' special_symbols
SEG_ID_P, SEG_ID_Q, SEG_ID_CLS, SEG_ID_PAD = 0, 1, 2, 3  # P, Q and <cls> are `packing.XLNET`'s segments
FEATURE_NAMES = ("unique_ids", "input_ids", "input_mask", "p_mask", "segment_ids", "cls_index")
TRAINING_FEATURE_NAMES = FEATURE_NAMES + ("start_positions", "end_positions", "is_impossible")
FLOAT_FEATURES = ("input_mask", "p_mask", "is_impossible")


def sentencepiece_functions(processor):
    """`(encode_pieces, piece_to_id)` of a `sentencepiece.SentencePieceProcessor`, as xlnet `prepro_utils`
    (`features_sentencepiece.sentencepiece_functions` with xlnet's "▁" drop)."""
    return features_sentencepiece.sentencepiece_functions(processor, drop_space=True)[:2]


def xlnet_layout(query, doc, max_seq_length):
    """xlnet's window (a `features_sentencepiece.convert_windows` layout): `P <sep> Q <sep> <cls>`
    (`packing.XLNET`), zeros padded on the right in segment `SEG_ID_PAD`; `input_mask` 0 = real, 1 = padding;
    `p_mask` 0 for the paragraph and `<cls>`; the answer positions from 0, `cls_index` without it."""
    tokens, segment_ids = packing.XLNET.pack_lists([doc, query], CLS_ID, SEP_ID)
    cls_index = len(tokens) - 1
    padding = max_seq_length - len(tokens)
    fields = dict(
        input_ids=tuple(tokens + [0] * padding), input_mask=tuple([0] * len(tokens) + [1] * padding),
        segment_ids=tuple(segment_ids + [SEG_ID_PAD] * padding),
        p_mask=tuple([0] * len(doc) + [1] * (len(query) + 2) + [0] + [1] * padding), paragraph_len=len(doc),
        cls_index=cls_index)
    return fields, 0, cls_index


def convert_examples_to_features(examples, encode_pieces, piece_to_id, max_seq_length=512, doc_stride=128,
                                 max_query_length=64, is_training=False, uncased=False, output_fn=None):
    """xlnet run_squad's `convert_examples_to_features` (`uncased`: its `FLAGS.uncased`), in its order.

    `encode_pieces` / `piece_to_id` as `sentencepiece_functions(processor)` gives them. Returns the list of
    `squad.SquadFeature` (with `cls_index`; also passed one by one to `output_fn`, when given).
    """
    return features_sentencepiece.convert_windows(
        examples, encode_pieces, piece_to_id, xlnet_layout, max_seq_length, doc_stride, max_query_length,
        is_training, uncased, xlnet_quotes=True, on_mismatch=lambda: print("MISMATCH DETECTED!"), output_fn=output_fn)


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
    """Writes features as xlnet's `FeatureWriter`'s TFRecord file (`FLOAT_FEATURES` as float lists); returns the
    number of records. Records are serialized deterministically; they equal the original's as parsed
    `tf.train.Example`s."""
    return features_wordpiece.write_records((feature_record(f, is_training) for f in features), path,
                                            FLOAT_FEATURES)
