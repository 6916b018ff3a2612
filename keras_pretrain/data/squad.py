"""SQuAD v1.1 / v2.0 files -> the examples and features of bert's `run_squad.py`, and their TFRecord files.

Record for record equal to bert-tensorflow's `run_squad.py`:

- `read_squad` is its `read_squad_examples`: each paragraph's context is split into "doc tokens" on
  whitespace as its `is_whitespace` sees it (space, `\\t`, `\\r`, `\\n` and U+202F only: a no-break space
  stays inside a word), the answer's character offset becomes word positions, and, in training mode, a
  question whose answer text cannot be found again in those words is skipped with a printed
  "Could not find answer" message. In evaluation mode the answers are not read (no positions, no text,
  `is_impossible` False), as theirs.
- `convert_examples_to_features` is its `convert_examples_to_features` written by `FeatureWriter`: the
  question cut at `max_query_length` sub-tokens, each doc word tokenized on its own, the answer narrowed by
  `_improve_answer_span`, the doc cut into windows of `doc_stride`, `[CLS] question [SEP] doc [SEP]`,
  segment ids 0 / 1, zeros padded on the right, `token_is_max_context` of `_check_is_max_context`,
  positions 0 for a window without the answer and for an impossible question, unique ids from 1000000000.

Feature names of the files: `unique_ids`, `input_ids`, `input_mask`, `segment_ids`, and in training mode
`start_positions`, `end_positions`, `is_impossible` (int64).
"""

import collections
import dataclasses
import json

from keras_pretrain.errors import CorpusFormatError

VERSIONS = ("v1.1", "v2.0")
FIRST_UNIQUE_ID = 1000000000
FEATURE_NAMES = ("unique_ids", "input_ids", "input_mask", "segment_ids")
TRAINING_FEATURE_NAMES = FEATURE_NAMES + ("start_positions", "end_positions", "is_impossible")
WHITESPACE = (" ", "\t", "\r", "\n", "\u202f")  # run_squad's `is_whitespace`


@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one paragraph, as run_squad's `SquadExample`.

    `start_position` / `end_position` are indices in `doc_tokens` (inclusive), -1 for an impossible
    question, None in evaluation mode (as `orig_answer_text`).
    """

    qas_id: str
    question_text: str
    doc_tokens: tuple
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


@dataclasses.dataclass(frozen=True)
class SquadFeature:
    """One doc window of one example, as run_squad's `InputFeatures`.

    `tokens` are the sub-tokens as `tokenize` gives them (ids or strings) with the `cls` / `sep` of
    `special`, unpadded; `token_to_orig_map` / `token_is_max_context` map a position in `tokens` (doc
    tokens only) to its word index in `doc_tokens` / whether this window is its "max context" one.
    Positions are None in evaluation mode.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: tuple
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: tuple
    input_mask: tuple
    segment_ids: tuple
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


# === Reading ===

def split_context(context):
    """run_squad's doc tokens of a context, with the character span of each.

    Returns:
        `(doc_tokens, char_to_word_offset, spans)`: the words (split on `WHITESPACE` only), the word
        index of every character (a whitespace character has the index of the word before it, -1
        before the first word), and `(start, end)` character offsets of each word, `context[start:end]`
        being the word.
    """
    doc_tokens, char_to_word_offset, spans = [], [], []
    previous_is_whitespace = True
    for i, c in enumerate(context):
        if c in WHITESPACE:
            previous_is_whitespace = True
        else:
            if previous_is_whitespace:
                doc_tokens.append(c)
                spans.append([i, i + 1])
            else:
                doc_tokens[-1] += c
                spans[-1][1] = i + 1
            previous_is_whitespace = False
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset, [tuple(s) for s in spans]


def token_char_spans(context):
    """`(start, end)` character offsets in `context` of each doc token of `split_context` (to give a
    predicted word span back as a span of the original text)."""
    return split_context(context)[2]


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise CorpusFormatError(f"{path}: no such SQuAD file.") from None
    except UnicodeDecodeError as error:
        raise CorpusFormatError(f"{path}: not UTF-8 ({error}).") from None
    except json.JSONDecodeError as error:
        raise CorpusFormatError(f"{path}: not a JSON file ({error}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise CorpusFormatError(f"{path}: expected a JSON object with a `data` list (a SQuAD file).")
    return data


def _field(path, record, key, where, kind=None):
    if not isinstance(record, dict) or key not in record:
        raise CorpusFormatError(f"{path}: {where} has no `{key}`.")
    value = record[key]
    if kind is not None and not isinstance(value, kind):
        raise CorpusFormatError(f"{path}: {where}: `{key}` is a {type(value).__name__}, expected a "
                                f"{kind.__name__}.")
    return value


def _is_v2(data):
    if str(data.get("version", "")).startswith("v2"):
        return True
    return any(qa.get("is_impossible") for entry in data["data"] if isinstance(entry, dict)
               for paragraph in entry.get("paragraphs", ()) if isinstance(paragraph, dict)
               for qa in paragraph.get("qas", ()) if isinstance(qa, dict))


def _answer_positions(path, qa, doc_tokens, char_to_word_offset, context):
    """(answer text, start word, end word) of a training question, or None if the text is not found."""
    answers = qa.get("answers")
    if not isinstance(answers, list) or len(answers) != 1:
        found = len(answers) if isinstance(answers, list) else "no"
        raise CorpusFormatError(f"{path}: question {qa['id']!r}: for training, each question should have "
                                f"exactly 1 answer; found {found}.")
    answer = answers[0]
    where = f"question {qa['id']!r}: its answer"
    text = _field(path, answer, "text", where, str)
    start = _field(path, answer, "answer_start", where, int)
    if not text:
        raise CorpusFormatError(f"{path}: question {qa['id']!r}: an empty answer text.")
    if start < 0 or start + len(text) > len(context):
        raise CorpusFormatError(f"{path}: question {qa['id']!r}: answer_start={start} with a "
                                f"{len(text)}-character answer is outside its {len(context)}-character context.")
    start_position = char_to_word_offset[start]
    end_position = char_to_word_offset[start + len(text) - 1]
    actual = " ".join(doc_tokens[start_position:end_position + 1])
    cleaned = " ".join(text.split())  # bert `tokenization.whitespace_tokenize`
    if actual.find(cleaned) == -1:
        print(f"Could not find answer: '{actual}' vs. '{cleaned}' (question {qa['id']!r}, {path}); skipped.")
        return None
    return text, start_position, end_position


def _paragraph_examples(path, paragraph, where, is_training, v2, seen=None):
    context = _field(path, paragraph, "context", where, str)
    qas = _field(path, paragraph, "qas", where, list)
    if not context.strip(" \t\r\n\u202f"):
        raise CorpusFormatError(f"{path}: {where} has an empty context.")
    doc_tokens, char_to_word_offset, _ = split_context(context)
    examples = []
    seen = {} if seen is None else seen
    for k, qa in enumerate(qas):
        qas_id = _field(path, qa, "id", f"{where}, question {k}")
        if not isinstance(qas_id, (str, int)) or isinstance(qas_id, bool):
            raise CorpusFormatError(f"{path}: {where}, question {k}: `id` is a {type(qas_id).__name__}, expected "
                                    "a string.")
        if qas_id in seen:  # predictions and scores are keyed by id: a second question would overwrite the first
            raise CorpusFormatError(f"{path}: {where}, question {k}: the id {qas_id!r} is also the id of "
                                    f"{seen[qas_id]}; every question needs its own id.")
        seen[qas_id] = f"{where}, question {k}"
        question = _field(path, qa, "question", f"{where}, question {qas_id!r}", str)
        answer, start, end, impossible = None, None, None, False
        if is_training:
            impossible = bool(qa.get("is_impossible", False)) if v2 else False
            if impossible:
                answer, start, end = "", -1, -1
            else:
                found = _answer_positions(path, qa, doc_tokens, char_to_word_offset, context)
                if found is None:
                    continue
                answer, start, end = found
        examples.append(SquadExample(qas_id, question, tuple(doc_tokens), answer, start, end, impossible))
    return examples


def read_squad(path, version=None, is_training=False):
    """The examples of a SQuAD JSON file, as run_squad's `read_squad_examples`.

    Args:
        path: str, a `train-v1.1.json` / `dev-v2.0.json` style file.
        version: "v1.1", "v2.0", or None to follow the file (its `version` field, or an `is_impossible`
            question anywhere). "v1.1" refuses v2.0 data; "v2.0" reads `is_impossible` (run_squad's
            `--version_2_with_negative`).
        is_training: bool. True reads the answer (exactly one per answerable question) into word
            positions and skips the questions whose answer cannot be found in the words; False reads
            only the questions.

    Returns:
        A list of `SquadExample`, in file order.

    Raises:
        CorpusFormatError: the file is not UTF-8 JSON, lacks `data` / `paragraphs` / `qas` / `context`, has
            an empty context, an answer outside its context, a question id that is not a string or that two
            questions share (predictions are keyed by id), or is v2.0 data read as "v1.1".

    Example:
    ```python
    examples = read_squad("train-v1.1.json", "v1.1", is_training=True)
    examples[0].doc_tokens[examples[0].start_position]
    ```
    """
    if version not in VERSIONS + (None,):
        raise ValueError(f"version={version!r}: expected one of {VERSIONS} or None.")
    data = _load(path)
    v2 = _is_v2(data)
    if version == "v1.1" and v2:
        raise CorpusFormatError(f"{path}: SQuAD v2.0 data (questions with `is_impossible`), read as v1.1; "
                                f"pass version='v2.0'.")
    v2 = v2 or version == "v2.0"
    examples, seen = [], {}
    for i, entry in enumerate(data["data"]):
        paragraphs = _field(path, entry, "paragraphs", f"article {i}", list)
        for j, paragraph in enumerate(paragraphs):
            examples += _paragraph_examples(path, paragraph, f"article {i}, paragraph {j}", is_training, v2, seen)
    return examples


# === Features ===

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


def _doc_spans(length, max_tokens_for_doc, doc_stride):
    """(start, length) windows over `length` doc pieces: at most `max_tokens_for_doc` long, each
    starting `doc_stride` after the previous one (less if the previous was shorter), the last reaching
    the end."""
    spans, start = [], 0
    while start < length:
        span = min(length - start, max_tokens_for_doc)
        spans.append((start, span))
        if start + span == length:
            break
        start += min(span, doc_stride)
    return spans


def _is_max_context(spans, span_index, position):
    """Whether window `span_index` gives piece `position` its largest min(left, right) context (ties:
    the earlier window; window length breaks near ties), as `_check_is_max_context`."""
    best_score, best_index = None, None
    for index, (start, length) in enumerate(spans):
        end = start + length - 1
        if start <= position <= end:
            score = min(position - start, end - position) + 0.01 * length
            if best_score is None or score > best_score:
                best_score, best_index = score, index
    return span_index == best_index


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
    max_tokens_for_doc = max_seq_length - len(query) - 2 - separators
    if max_tokens_for_doc <= 0:
        raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the doc after a "
                         f"{len(query)}-token question and {2 + separators} special tokens.")
    spans = _doc_spans(len(pieces), max_tokens_for_doc, doc_stride)
    features = []
    for span_index, (start, length) in enumerate(spans):
        tokens = [special["cls"]] + query + [special["sep"]] * separators
        offset = len(tokens)
        to_word, max_context = {}, {}
        for position in range(start, start + length):
            to_word[len(tokens)] = piece_to_word[position]
            max_context[len(tokens)] = _is_max_context(spans, span_index, position)
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


def write_records(records, path):
    """Writes dicts name -> list of ints as int64 `tf.train.Example`s (deterministically serialized) to a
    TFRecord file; returns the number of records."""
    import tensorflow as tf

    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            example = tf.train.Example(features=tf.train.Features(feature={
                name: tf.train.Feature(int64_list=tf.train.Int64List(value=values))
                for name, values in record.items()}))
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
