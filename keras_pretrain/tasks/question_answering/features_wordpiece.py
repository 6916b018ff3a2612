"""SQuAD examples -> the features of bert's `run_squad.py` (WordPiece families, and RoBERTa's byte-level BPE on
the same algorithm), and their TFRecord files.

Record for record equal to bert-tensorflow's `run_squad.py` `convert_examples_to_features` written by
`FeatureWriter`, on the `SquadExample`s of `squad.read_squad`: the question cut at `max_query_length`
sub-tokens, each doc word tokenized on its own, the answer narrowed by `_improve_answer_span`, the doc cut into
windows of `doc_stride` (`windows.doc_spans`), `[CLS] question [SEP] doc [SEP]`, segment ids 0 / 1, zeros padded
on the right, `token_is_max_context` of `_check_is_max_context` (`windows.is_max_context`), positions 0 for a
window without the answer and for an impossible question, unique ids from 1000000000.

Feature names of the files: `unique_ids`, `input_ids`, `input_mask`, `segment_ids`, and in training mode
`start_positions`, `end_positions`, `is_impossible` (int64).
"""

import collections

from keras_pretrain.tasks.question_answering import windows
from keras_pretrain.tasks.question_answering.squad import FIRST_UNIQUE_ID
from keras_pretrain.tasks.question_answering.squad import SquadFeature

FEATURE_NAMES = ("unique_ids", "input_ids", "input_mask", "segment_ids")
TRAINING_FEATURE_NAMES = FEATURE_NAMES + ("start_positions", "end_positions", "is_impossible")


def word_tokenizer(tokenize_batch, examples, prefix_space=False):
    """A `tokenize` for `convert_examples_to_features` that tokenizes every text of the examples (the
    questions, every doc word, the answers) in one batched call of `tokenize_batch`.

    Args:
        tokenize_batch: callable `list of str -> list of id lists` (or a ragged tensor), e.g.
            `keras_pretrain.models.bert.BertTokenizer(...)`: run_squad tokenizes each doc word alone with
            its `FullTokenizer`, which the in-graph WordPiece tokenizer does word for word.
        examples: the `SquadExample`s.
        prefix_space: bool, byte-level BPE (RoBERTa): tokenize each doc word and the answer text after a
            space, as the words read inside a text (`Ġword`; transformers' SQuAD processor's
            `add_prefix_space=True`); the question as it is.

    Returns:
        callable `text -> list of int`, for those texts only (with `prefix_space`, its `.question` attribute
        tokenizes the questions).
    """
    questions, words = set(), set()
    for e in examples:
        questions.add(e.question_text)
        words.update(e.doc_tokens)
        if e.orig_answer_text is not None:
            words.add(e.orig_answer_text)
    space = " " if prefix_space else ""
    texts = sorted(questions | {space + w for w in words})
    ids = tokenize_batch(texts) if texts else []
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    table = {text: [int(i) for i in row] for text, row in zip(texts, ids)}
    if not prefix_space:
        return table.__getitem__

    def tokenize(text):  # a doc word or an answer, after a space
        return table[space + text]

    tokenize.question = table.__getitem__  # `convert_example` reads the question through it
    return tokenize


def _improve_answer_span(doc_pieces, start, end, answer_pieces):
    """The shortest sub-span of `doc_pieces[start:end + 1]` (earliest start first) equal to the pieces
    of the answer text; the span itself if there is none (run_squad's `_improve_answer_span`)."""
    for new_start in range(start, end + 1):
        for new_end in range(end, new_start - 1, -1):
            if doc_pieces[new_start:new_end + 1] == answer_pieces:
                return new_start, new_end
    return start, end


def _doc_pieces(example, tokenize):
    """(pieces of all doc words, the word index of each piece, the first piece of each word)."""
    pieces, piece_to_word, word_to_piece = [], [], []
    for i, word in enumerate(example.doc_tokens):
        word_to_piece.append(len(pieces))
        for piece in tokenize(word):
            piece_to_word.append(i)
            pieces.append(piece)
    return pieces, piece_to_word, word_to_piece


def _answer_pieces(example, tokenize, pieces, word_to_piece):
    """(start, end) piece positions of a training example's answer ((-1, -1) if impossible)."""
    if example.is_impossible:
        return -1, -1
    start = word_to_piece[example.start_position]
    if example.end_position < len(example.doc_tokens) - 1:
        end = word_to_piece[example.end_position + 1] - 1
    else:
        end = len(pieces) - 1
    return _improve_answer_span(pieces, start, end, list(tokenize(example.orig_answer_text)))


def _window_positions(example, answer, span, offset):
    """Answer positions in one window's sequence (its doc starting at `offset`): 0, 0 outside it or for an
    impossible question."""
    (answer_start, answer_end), (start, length) = answer, span
    if example.is_impossible or not (answer_start >= start and answer_end <= start + length - 1):
        return 0, 0
    return answer_start - start + offset, answer_end - start + offset


def _check_special(special):
    special = dict(special or {})
    if "cls" not in special or "sep" not in special:
        raise ValueError(f"special={special!r}: the `cls` and `sep` tokens are needed.")
    special.setdefault("pad", 0)
    special.setdefault("separators", 1)  # between the question and the doc: RoBERTa's `</s></s>` is 2
    special.setdefault("doc_segment", 1)  # the doc's segment id: RoBERTa has one type, 0
    return special


def convert_example(example, example_index, tokenize, max_seq_length=384, doc_stride=128,
                    max_query_length=64, is_training=False, special=None, to_ids=None,
                    first_unique_id=FIRST_UNIQUE_ID):
    """The features of one example (see `convert_examples_to_features`), one per doc window; the
    first has unique id `first_unique_id`."""
    special = _check_special(special)
    to_ids = to_ids or (lambda tokens: [int(t) for t in tokens])
    query = list(getattr(tokenize, "question", tokenize)(example.question_text))[:max_query_length]
    pieces, piece_to_word, word_to_piece = _doc_pieces(example, tokenize)
    answer = _answer_pieces(example, tokenize, pieces, word_to_piece) if is_training else None
    separators = special["separators"]
    max_tokens_for_doc = windows.max_tokens_for_doc(max_seq_length, len(query), 2 + separators)
    if max_tokens_for_doc <= 0:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the doc after a "
                         f"{len(query)}-token question and {2 + separators} special tokens.")
    spans = windows.doc_spans(len(pieces), max_tokens_for_doc, doc_stride)
    features = []
    for span_index, (start, length) in enumerate(spans):
        tokens = [special["cls"]] + query + [special["sep"]] * separators
        offset = len(tokens)
        to_word, max_context = {}, {}
        for position in range(start, start + length):
            to_word[len(tokens)] = piece_to_word[position]
            max_context[len(tokens)] = windows.is_max_context(spans, span_index, position)
            tokens.append(pieces[position])
        tokens.append(special["sep"])
        segment_ids = [0] * offset + [special["doc_segment"]] * (length + 1)
        padding = max_seq_length - len(tokens)
        positions = (None, None)
        if is_training:
            positions = _window_positions(example, answer, (start, length), offset)
        features.append(SquadFeature(
            unique_id=first_unique_id + span_index, example_index=example_index, doc_span_index=span_index,
            tokens=tuple(tokens), token_to_orig_map=to_word, token_is_max_context=max_context,
            input_ids=tuple(list(to_ids(tokens)) + [special["pad"]] * padding),
            input_mask=tuple([1] * len(tokens) + [0] * padding), segment_ids=tuple(segment_ids + [0] * padding),
            start_position=positions[0], end_position=positions[1], is_impossible=example.is_impossible))
    return features


def convert_examples_to_features(examples, tokenize, max_seq_length=384, doc_stride=128, max_query_length=64,
                                 is_training=False, special=None, to_ids=None):
    """run_squad's features of SQuAD examples, in its order (example by example, window by window).

    Args:
        examples: iterable of `SquadExample` (`read_squad`).
        tokenize: callable `text -> list of sub-tokens` (ids, or strings with `to_ids`): the model's
            tokenizer on one word, one question or one answer text (`word_tokenizer` builds it from a
            batched tokenizer such as `keras_pretrain.models.bert.BertTokenizer`).
        max_seq_length: int, the padded length.
        doc_stride: int, the step between doc windows.
        max_query_length: int, the question is cut to this many sub-tokens.
        is_training: bool, compute the answer positions (the examples must be read with
            `is_training=True`).
        special: dict with `cls` and `sep` (of the kind `tokenize` gives) and `pad` (an id, default 0: the
            script pads with 0); for other layouts `separators` (between the question and the doc: 1,
            RoBERTa's `<s> Q </s></s> D </s>` 2) and `doc_segment` (the doc's segment id: 1, RoBERTa 0).
        to_ids: callable `list of sub-tokens -> list of ids` (None: the sub-tokens are ids).

    Returns:
        A list of `SquadFeature`, unique ids counting from 1000000000.

    Example:
    ```python
    tokenizer = keras_pretrain.models.bert.BertTokenizer("vocab.txt", lowercase=True)
    examples = read_squad("train-v1.1.json", "v1.1", is_training=True)
    features = convert_examples_to_features(
        examples, word_tokenizer(tokenizer, examples), 384, 128, 64, is_training=True,
        special={"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id, "pad": tokenizer.pad_token_id})
    write_features(features, "train.tfrecord", is_training=True)
    ```
    """
    features = []
    for example_index, example in enumerate(examples):
        features += convert_example(example, example_index, tokenize, max_seq_length, doc_stride,
                                    max_query_length, is_training, special, to_ids,
                                    FIRST_UNIQUE_ID + len(features))
    return features


# === Files and arrays ===

def feature_record(feature, is_training, extra=()):
    """The ordered dict feature name -> list of ints `FeatureWriter` writes for one feature (`extra`: more
    sequence fields after `segment_ids`, as ALBERT's `p_mask`)."""
    record = collections.OrderedDict()
    record["unique_ids"] = [feature.unique_id]
    record["input_ids"] = list(feature.input_ids)
    record["input_mask"] = list(feature.input_mask)
    record["segment_ids"] = list(feature.segment_ids)
    for name in extra:
        record[name] = list(getattr(feature, name))
    if is_training:
        record["start_positions"] = [feature.start_position]
        record["end_positions"] = [feature.end_position]
        record["is_impossible"] = [1 if feature.is_impossible else 0]
    return record


def write_features(features, path, is_training=None):
    """Writes features as `FeatureWriter`'s TFRecord file (int64 features `FEATURE_NAMES`, and
    `TRAINING_FEATURE_NAMES` in training mode). Returns the number of records.

    `is_training` None: training mode when the features have positions. Records are serialized
    deterministically (features sorted by name); the original's `SerializeToString()` may order the map
    differently, so its files equal ours as parsed `tf.train.Example`s.
    """
    features = list(features)
    if is_training is None:
        is_training = bool(features) and features[0].start_position is not None
    return write_records((feature_record(f, is_training) for f in features), path)


def write_records(records, path, float_names=()):
    """Writes dicts name -> list of numbers as `tf.train.Example`s (int64 lists; float lists for the names in
    `float_names`, as xlnet's `input_mask`), deterministically serialized, to a TFRecord file (the writer of
    every SQuAD pipeline); returns the number of records."""
    import tensorflow as tf

    def feature(name, values):
        if name in float_names:
            return tf.train.Feature(float_list=tf.train.FloatList(value=values))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            example = tf.train.Example(features=tf.train.Features(feature={
                name: feature(name, values) for name, values in record.items()}))
            writer.write(example.SerializeToString(deterministic=True))
            count += 1
    return count


def to_arrays(features):
    """NumPy model inputs and targets of features.

    Returns:
        `(inputs, targets)`: inputs a dict of int32 arrays `token_ids`, `segment_ids`, `padding_mask`
        (N, max_seq_length) and the int64 `unique_ids` (N,); targets a dict of int32 (N,) arrays
        `start_positions`, `end_positions`, `is_impossible`, or None for evaluation features.
    """
    import numpy as np

    features = list(features)
    inputs = {
        "token_ids": np.asarray([f.input_ids for f in features], np.int32),
        "segment_ids": np.asarray([f.segment_ids for f in features], np.int32),
        "padding_mask": np.asarray([f.input_mask for f in features], np.int32),
        "unique_ids": np.asarray([f.unique_id for f in features], np.int64),
    }
    if not features or features[0].start_position is None:
        return inputs, None
    targets = {
        "start_positions": np.asarray([f.start_position for f in features], np.int32),
        "end_positions": np.asarray([f.end_position for f in features], np.int32),
        "is_impossible": np.asarray([int(f.is_impossible) for f in features], np.int32),
    }
    return inputs, targets
