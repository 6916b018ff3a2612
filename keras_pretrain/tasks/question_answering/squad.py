"""SQuAD v1.1 / v2.0 JSON files -> examples, and the example and feature records every pipeline of the package
shares.

Two readers, as the authors have two:

- `read_squad` is bert-tensorflow `run_squad.py`'s `read_squad_examples`: each paragraph's context is split into
  "doc tokens" on whitespace as its `is_whitespace` sees it (space, `\\t`, `\\r`, `\\n` and U+202F only: a
  no-break space stays inside a word), the answer's character offset becomes word positions, and, in training
  mode, a question whose answer text cannot be found again in those words is skipped with a printed "Could not
  find answer" message. In evaluation mode the answers are not read (no positions, no text, `is_impossible`
  False), as theirs. Its examples are `SquadExample`s with `doc_tokens`.
- `read_squad_examples` is albert `squad_utils`' (and xlnet `run_squad.py`'s, the same code): the context is
  kept as raw text (no whitespace "doc tokens"), the answer is a character offset into it, `is_impossible` is
  read whenever a training question has it (no version switch), and nothing is skipped when the answer text is
  not found. Its examples are `SquadExample`s with `paragraph_text`.

The records. `SquadExample` and `SquadFeature` are dataclasses with the authors' field names, ONE of each for
every reader and pipeline: the fields only one reading of the context has are optional, and each record's
docstring says which reader / pipeline sets them (`doc_tokens` and word positions from `read_squad`,
`paragraph_text` and a character offset from `read_squad_examples`; `token_to_orig_map` from bert's features,
`tok_start_to_orig_index` / `tok_end_to_orig_index`, `p_mask`, `paragraph_len` from albert's and xlnet's,
`cls_index` from xlnet's). `RawContextSquadExample` and `SentencePieceSquadFeature`, their former names for
the raw-context reading, are the same classes.
"""

import dataclasses
import json

from keras_pretrain.errors import CorpusFormatError

VERSIONS = ("v1.1", "v2.0")
FIRST_UNIQUE_ID = 1000000000
WHITESPACE = (" ", "\t", "\r", "\n", "\u202f")  # run_squad's `is_whitespace`


# === Records ===

@dataclasses.dataclass(frozen=True)
class SquadExample:
    """One question on one paragraph, as the authors' `SquadExample` (bert `run_squad.py`'s and albert's /
    xlnet's), one record for both readings of the context.

    Common: `qas_id`, `question_text`, `orig_answer_text` (None in evaluation mode, "" for an impossible
    question), `is_impossible`. The context, as the reader keeps it:

    - `read_squad` (bert `run_squad.py`; the WordPiece / byte-level BPE pipeline of `features_wordpiece`) sets
      `doc_tokens`, the whitespace words; `start_position` / `end_position` are word indices in them
      (inclusive), -1 for an impossible question, None in evaluation mode; `paragraph_text` is None.
    - `read_squad_examples` (albert `squad_utils`, xlnet `run_squad.py`; the SentencePiece pipelines of
      `features_sentencepiece` and `features_xlnet`) sets `paragraph_text`, the raw context;
      `start_position` is the answer's first character in it (-1 for an impossible question, None in
      evaluation mode) and `end_position` is always None (theirs is never set); `doc_tokens` is None.
    """

    qas_id: str
    question_text: str
    doc_tokens: tuple = None
    orig_answer_text: str = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False
    paragraph_text: str = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SquadFeature:
    """One doc window of one example, as the authors' `InputFeatures` (bert `run_squad.py`'s, albert's and
    xlnet's), one record for every pipeline.

    Common: `unique_id` (from `FIRST_UNIQUE_ID`), `example_index` (None in albert's / xlnet's training mode, as
    theirs), `doc_span_index`, `token_is_max_context` (a sequence position of a doc token -> whether this
    window is its "max context" one), `input_ids` / `input_mask` / `segment_ids` (padded), and the answer
    positions in the sequence (None in evaluation mode) with `is_impossible`. The rest, by pipeline:

    - `features_wordpiece` (bert's): `tokens`, the sub-tokens as `tokenize` gives them (ids or strings) with
      the `cls` / `sep` of `special`, unpadded; `token_to_orig_map`, a sequence position of a doc token -> its
      word index in the example's `doc_tokens`. The SentencePiece fields are None.
    - `features_sentencepiece` (albert's) and `features_xlnet` (xlnet's): `tok_start_to_orig_index` /
      `tok_end_to_orig_index`, the first / last raw-context character of each doc piece of the window;
      `paragraph_len`, the unpadded length (albert's: `len(tokens)`; xlnet's: the window's doc pieces);
      `p_mask` (1 where no answer may be). albert's sets `tokens` to the pieces of all `input_ids`, the
      padding's included (theirs pads the list it reads them from; None without `id_to_piece`); xlnet's
      sets `cls_index`, the class token's position (`tokens` None). `token_to_orig_map` is None.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    token_is_max_context: dict
    input_ids: tuple
    input_mask: tuple
    segment_ids: tuple
    tokens: tuple = None
    token_to_orig_map: dict = None
    tok_start_to_orig_index: tuple = None
    tok_end_to_orig_index: tuple = None
    paragraph_len: int = None
    p_mask: tuple = None
    cls_index: int = None
    start_position: int = None
    end_position: int = None
    is_impossible: bool = False


# The former names of the records (one per reading of the context), kept for old imports.
RawContextSquadExample = SquadExample
SentencePieceSquadFeature = SquadFeature


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


def load_squad_json(path):
    """The JSON object of a SQuAD file; `CorpusFormatError` naming the file when it is missing or malformed."""
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


def squad_field(path, record, key, where, kind=None):
    """`record[key]`; `CorpusFormatError` naming the file and `where` when it is missing or not a `kind`."""
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
    text = squad_field(path, answer, "text", where, str)
    start = squad_field(path, answer, "answer_start", where, int)
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
    context = squad_field(path, paragraph, "context", where, str)
    qas = squad_field(path, paragraph, "qas", where, list)
    if not context.strip(" \t\r\n\u202f"):
        raise CorpusFormatError(f"{path}: {where} has an empty context.")
    doc_tokens, char_to_word_offset, _ = split_context(context)
    examples = []
    seen = {} if seen is None else seen
    for k, qa in enumerate(qas):
        qas_id = squad_field(path, qa, "id", f"{where}, question {k}")
        if not isinstance(qas_id, (str, int)) or isinstance(qas_id, bool):
            raise CorpusFormatError(f"{path}: {where}, question {k}: `id` is a {type(qas_id).__name__}, expected "
                                    "a string.")
        if qas_id in seen:  # predictions and scores are keyed by id: a second question would overwrite the first
            raise CorpusFormatError(f"{path}: {where}, question {k}: the id {qas_id!r} is also the id of "
                                    f"{seen[qas_id]}; every question needs its own id.")
        seen[qas_id] = f"{where}, question {k}"
        question = squad_field(path, qa, "question", f"{where}, question {qas_id!r}", str)
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
        examples.append(SquadExample(qas_id=qas_id, question_text=question, doc_tokens=tuple(doc_tokens),
                                     orig_answer_text=answer, start_position=start, end_position=end,
                                     is_impossible=impossible))
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
        A list of `SquadExample` (with `doc_tokens`), in file order.

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
    data = load_squad_json(path)
    v2 = _is_v2(data)
    if version == "v1.1" and v2:
        raise CorpusFormatError(f"{path}: SQuAD v2.0 data (questions with `is_impossible`), read as v1.1; "
                                f"pass version='v2.0'.")
    v2 = v2 or version == "v2.0"
    examples, seen = [], {}
    for i, entry in enumerate(data["data"]):
        paragraphs = squad_field(path, entry, "paragraphs", f"article {i}", list)
        for j, paragraph in enumerate(paragraphs):
            examples += _paragraph_examples(path, paragraph, f"article {i}, paragraph {j}", is_training, v2, seen)
    return examples


def read_squad_examples(path, is_training=False):
    """The examples of a SQuAD v1.1 / v2.0 JSON file, as albert's (and xlnet's) `read_squad_examples`.

    Args:
        path: str, a `train-v2.0.json` style file.
        is_training: bool. True reads `is_impossible` and, for an answerable question, its one answer
            (text and character offset); False reads only the questions.

    Returns:
        A list of `SquadExample` (with `paragraph_text`), in file order.

    Raises:
        CorpusFormatError: not a UTF-8 SQuAD JSON file, a missing field, or (training) an answerable
            question without exactly one answer (theirs: a ValueError).
    """
    data = load_squad_json(path)
    examples = []
    for i, entry in enumerate(data["data"]):
        for j, paragraph in enumerate(squad_field(path, entry, "paragraphs", f"article {i}", list)):
            where = f"article {i}, paragraph {j}"
            context = squad_field(path, paragraph, "context", where, str)
            for k, qa in enumerate(squad_field(path, paragraph, "qas", where, list)):
                qas_id = squad_field(path, qa, "id", f"{where}, question {k}")
                question = squad_field(path, qa, "question", f"{where}, question {qas_id!r}", str)
                start, answer_text, impossible = None, None, False
                if is_training:
                    impossible = qa.get("is_impossible", False)
                    answers = qa.get("answers")
                    if not impossible:
                        if not isinstance(answers, list) or len(answers) != 1:
                            raise CorpusFormatError(f"{path}: question {qas_id!r}: for training, each question "
                                                    f"should have exactly 1 answer.")
                        where_answer = f"question {qas_id!r}: its answer"
                        answer_text = squad_field(path, answers[0], "text", where_answer, str)
                        start = squad_field(path, answers[0], "answer_start", where_answer, int)
                    else:
                        start, answer_text = -1, ""
                examples.append(SquadExample(qas_id=qas_id, question_text=question, paragraph_text=context,
                                             orig_answer_text=answer_text, start_position=start,
                                             is_impossible=impossible))
    return examples
