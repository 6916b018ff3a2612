"""Token-classification (NER) files: CoNLL-2003 reading, tagging schemes, conlleval predictions files.

A CoNLL file holds one token a line, its columns separated by spaces or tabs: the token first, the tag in
`tag_column` (the last one by default), e.g. CoNLL-2003's `token POS chunk NER` or a two-column
`token tag`. A blank line ends a sentence; a `-DOCSTART-` line (a document boundary) ends one too and is
skipped. Every row of a file has the same number of columns, at least 2. Files are UTF-8 (a leading BOM is
dropped), lines split at "\\n" only.

Tags are "O" or B-, I-, E-, S- and a type (`metrics.split_tag`). Three schemes are told
apart (`detect_scheme`) and converted to IOB2 (`to_iob2`), the scheme the metrics' strict mode and the
token-classification task use:

- IOB1 (CoNLL-2003's original files): an entity begins with I-; B-X only begins an entity that directly
  follows another X entity.
- IOB2 (BIO): every entity begins with B-.
- IOBES: B- begins, I- goes on, E- ends an entity; S- is a one-token entity.

A predictions file is what conlleval reads: one `token gold predicted` line per token, separated by single
spaces, a blank line between sentences (`write_predictions`, `read_predictions`).

Example:
```python
sentences = read_conll("eng.train")  # [Sentence(tokens=("EU", "rejects", ...), tags=("I-ORG", "O", ...)), ...]
sentences, scheme = as_iob2(sentences)  # scheme == "IOB1"; tags now ("B-ORG", "O", ...)
write_predictions("predictions.txt", sentences, gold=[s.tags for s in sentences], predicted=predicted_tags)
```
"""

import dataclasses
import re
from typing import Tuple

from keras_pretrain.errors import CorpusFormatError
from keras_pretrain.tasks.token_classification.metrics import split_tag

DOCSTART = "-DOCSTART-"
SCHEMES = ("IOB1", "IOB2", "IOBES")
_COLUMNS = re.compile(r"[ \t]+")
_WHITESPACE = re.compile(r"[ \t\r\n\v\f]")


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One sentence of a CoNLL file.

    Attributes:
        tokens: tuple of str, the first column.
        tags: tuple of str, the tag column, as long as `tokens`.
        line: int, the line of the first token in the file (1-based).
    """

    tokens: Tuple[str, ...]
    tags: Tuple[str, ...]
    line: int = 0


def _rows(path, what):
    """`(line number, columns)` of every line of a UTF-8 file; a blank line gives no columns."""
    try:
        f = open(path, "rb")
    except OSError as e:
        raise CorpusFormatError(f"{path}: cannot read the {what} ({e.strerror or e}).") from None
    with f:
        for number, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise CorpusFormatError(
                    f"{path}, line {number}: not UTF-8 (byte {raw[e.start]:#04x}, the line's byte {e.start + 1}: "
                    f"{e.reason}); {what}s are UTF-8.") from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            text = text.strip(" \t\r\n")
            yield number, _COLUMNS.split(text) if text else []


_LAYOUT = {"CoNLL file": "the token, ..., the tag", "predictions file": "token gold predicted"}


def _sentences(path, what, min_columns, check):
    """A file's rows grouped into sentences, each a list of `(line, columns)`; -DOCSTART- and blank lines
    end a sentence.

    Every row must have as many columns as the file's first (and at least `min_columns`);
    `check(line, columns)` checks each row further."""
    sentences, current, expected = [], [], None
    for line, columns in _rows(path, what):
        if columns and columns[0] != DOCSTART:
            if expected is None:
                if len(columns) < min_columns:
                    raise CorpusFormatError(
                        f"{path}, line {line}: {len(columns)} column{'s' if len(columns) > 1 else ''}, expected at "
                        f"least {min_columns} ({what}: {_LAYOUT[what]}, separated by spaces or tabs).")
                expected = (len(columns), line)
            elif len(columns) != expected[0]:
                raise CorpusFormatError(
                    f"{path}, line {line}: {len(columns)} columns, expected {expected[0]} as on line {expected[1]} "
                    f"(every row of a {what} has the same columns).")
            check(line, columns)
            current.append((line, columns))
        elif current:
            sentences.append(current)
            current = []
    if current:
        sentences.append(current)
    if not sentences:
        raise CorpusFormatError(f"{path}: no sentences (the {what} is empty, or holds only blank and "
                                f"{DOCSTART} lines).")
    return sentences


def _check_tag(path, line, tag, what="tag"):
    try:
        split_tag(tag)
    except ValueError:
        raise CorpusFormatError(f"{path}, line {line}: {what} {tag!r} is not an IOB tag (expected O, or B-, I-, "
                                "E- or S- and a type, e.g. B-PER).") from None


def read_conll(path, tag_column=-1):
    """The sentences of a CoNLL file (CoNLL-2003 `token POS chunk NER`, two-column `token tag`, ...).

    Args:
        path: str, the file.
        tag_column: int, the column of the tags (0-based; negative counts from the end: -1 is the last).

    Returns:
        A list of `Sentence`s, in file order; tags as written (see `as_iob2` to convert them).

    Raises:
        CorpusFormatError (naming the file and the line): the file is missing or not UTF-8, a row has fewer
            than 2 columns or not as many as the file's first row, `tag_column` is not a column of the
            file or a tag is not an IOB tag, or the file has no sentence.
    """
    def check(line, columns):
        if not -len(columns) < tag_column < len(columns) or tag_column == 0:
            raise CorpusFormatError(f"{path}, line {line}: no tag column {tag_column} in a row of {len(columns)} "
                                    "columns (column 0 is the token).")
        _check_tag(path, line, columns[tag_column])

    return [Sentence(tuple(columns[0] for _, columns in rows), tuple(columns[tag_column] for _, columns in rows),
                     rows[0][0])
            for rows in _sentences(path, "CoNLL file", 2, check)]


def _prefixes(tags):
    return [split_tag(tag) for tag in tags]


def detect_scheme(tag_sequences):
    """"IOBES", "IOB1" or "IOB2": the tagging scheme of some tag sequences (e.g. all of a file's sentences).

    "IOBES" when any tag is E- or S-; else "IOB1" when any I-X begins an entity (it is the first tag, or
    follows O or a tag of another type); else "IOB2" (every entity begins with B-; also a file of O only).
    Raises `ValueError` on a tag that is not an IOB tag.
    """
    scheme = "IOB2"
    for tags in tag_sequences:
        previous = ("O", None)
        for prefix, kind in _prefixes(tags):
            if prefix in ("E", "S"):
                return "IOBES"
            if prefix == "I" and (previous[0] == "O" or previous[1] != kind):
                scheme = "IOB1"
            previous = (prefix, kind)
    return scheme


def to_iob2(tags, scheme):
    """The IOB2 tags of one sequence written in `scheme` ("IOB1", "IOB2" or "IOBES"), as a list.

    IOB1: an I-X that is the first tag or follows O or a tag of another type becomes B-X; every other tag
    stays (B-X, which IOB1 writes between two X entities, stays B-X). This keeps the entities of
    conlleval's chunking (`metrics.entities`) of any B/I/O sequence, and is the identity on
    IOB2.
    IOBES: S-X becomes B-X and E-X becomes I-X; B-, I- and O stay. A well-formed IOBES sequence keeps its
    entities.
    IOB2: unchanged.

    Raises `ValueError` on an unknown scheme, a tag that is not an IOB tag, or an E- or S- tag in IOB1/IOB2.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"unknown tagging scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    converted, previous = [], ("O", None)
    for tag, (prefix, kind) in zip(tags, _prefixes(tags)):
        if scheme == "IOBES":
            converted.append({"S": "B-", "E": "I-"}.get(prefix, prefix + "-") + kind if kind else tag)
        elif prefix in ("E", "S"):
            raise ValueError(f"{tag!r} is not a tag of {scheme} (E- and S- tags are IOBES)")
        elif scheme == "IOB1" and prefix == "I" and (previous[0] == "O" or previous[1] != kind):
            converted.append("B-" + kind)
        else:
            converted.append(tag)
        previous = (prefix, kind)
    return converted


def as_iob2(sentences, scheme=None):
    """`(sentences with IOB2 tags, the scheme they were in)`: `to_iob2` of every `Sentence`.

    Args:
        sentences: list of `Sentence`s (e.g. of `read_conll`).
        scheme: the scheme they are written in; None: `detect_scheme` of all their tags.
    """
    scheme = scheme or detect_scheme(s.tags for s in sentences)
    return [dataclasses.replace(s, tags=tuple(to_iob2(s.tags, scheme))) for s in sentences], scheme


def write_predictions(path, sentences, gold, predicted):
    """Writes a conlleval predictions file: `token gold predicted` a line, a blank line between sentences.

    A sentence without tokens writes nothing (the format cannot show it; it holds no entity).

    Args:
        path: str, the file to write (UTF-8).
        sentences: list of `Sentence`s or of token sequences.
        gold: list of tag sequences, one per sentence, as long as it.
        predicted: list of tag sequences, likewise.

    Raises:
        ValueError: the lists differ in length, a sequence in length from its sentence, a token is empty or
            holds whitespace (it would change the columns), or a tag is not an IOB tag.
    """
    sentences = [s.tokens if isinstance(s, Sentence) else tuple(s) for s in sentences]
    gold, predicted = list(gold), list(predicted)
    if not len(sentences) == len(gold) == len(predicted):
        raise ValueError(f"{len(sentences)} sentences, {len(gold)} gold and {len(predicted)} predicted tag sequences")
    blocks = []
    for index, (tokens, gold_tags, predicted_tags) in enumerate(zip(sentences, gold, predicted)):
        if not len(tokens) == len(gold_tags) == len(predicted_tags):
            raise ValueError(f"sentence {index}: {len(tokens)} tokens, {len(gold_tags)} gold and "
                             f"{len(predicted_tags)} predicted tags")
        for token in tokens:
            if not token or _WHITESPACE.search(token):
                raise ValueError(f"sentence {index}: token {token!r} is empty or holds whitespace")
        for tag in (*gold_tags, *predicted_tags):
            split_tag(tag)
        if tokens:
            blocks.append("".join(f"{t} {g} {p}\n" for t, g, p in zip(tokens, gold_tags, predicted_tags)))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(blocks))


def read_predictions(path, iob2=False):
    """`(tokens, gold, predicted)` of a conlleval predictions file: three lists, one sequence per sentence.

    As conlleval: the columns are separated by spaces (or tabs), the last two are the gold and the predicted
    tag and the first the token (other columns between them are allowed, as many on every line); a blank
    or `-DOCSTART-` line ends a sentence.

    Args:
        path: str, the file.
        iob2: bool, E- and S- tags are an error (for the metrics' strict mode, which takes IOB2 tags).

    Raises:
        CorpusFormatError (naming the file and the line): the file is missing or not UTF-8, a line has fewer
            than 3 columns or not as many as the first, a tag is not an IOB tag (with `iob2`: not an IOB2
            tag), or there is no sentence.
    """
    def check(line, columns):
        for what, tag in (("gold tag", columns[-2]), ("predicted tag", columns[-1])):
            _check_tag(path, line, tag, what)
            if iob2 and tag[0] in ("E", "S"):
                raise CorpusFormatError(f"{path}, line {line}: {what} {tag!r} is not an IOB2 tag (strict scoring "
                                        "takes O, B- and I- tags; convert IOBES tags with to_iob2).")

    sentences = _sentences(path, "predictions file", 3, check)
    return tuple([[columns[index] for _, columns in rows] for rows in sentences] for index in (0, -2, -1))
