"""Streaming reader of pretraining corpora in the original BERT format.

The format of the original `create_pretraining_data.py`: one sentence per line, a blank line between
documents. With `sentence_split=True` each line is plain text that is split into sentences (English and
Chinese punctuation). Files are read line by line, so a corpus larger than memory works.
"""

import dataclasses
import glob
import logging
import os
import re

from keras_pretrain.errors import CorpusFormatError

logger = logging.getLogger(__name__)

# English: ". ! ?" (optionally followed by closing quotes/brackets) then whitespace.
# Chinese: "。！？｡" or "……" (also runs like "？！"), optionally followed by closing quotes/brackets;
# no space needed.
_SENTENCE_END = re.compile(
    r"(?P<en>[.!?]+[\"'”’)\]]*)\s+"
    r"|(?P<zh>(?:[。！？｡]|[!?](?=[\u3400-\u9fff])|……)+[”’」』）》\"']*)\s*"
)


def split_sentences(text):
    """Split one line of plain text into sentences (English and Chinese).

    English sentences end with `.`, `!` or `?` followed by whitespace (closing quotes may come between);
    Chinese sentences end with `。`, `！`, `？`, `｡` or `……` (no space needed).

    Args:
        text: str, one line of text.

    Returns:
        A list of non-empty, stripped sentence strings.
    """
    sentences = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.end("en") if match.group("en") is not None else match.end("zh")
        sentence = text[start:end].strip()
        if sentence:
            sentences.append(sentence)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


@dataclasses.dataclass
class CorpusIssue:
    """One skipped line or document: where and why."""

    path: str
    line: int
    reason: str

    def __str__(self):
        return f"{self.path}:{self.line}: {self.reason}"


@dataclasses.dataclass
class CorpusStats:
    """Counts of a corpus read; nothing is dropped without being counted.

    Lines: `lines_read == lines_kept + blank_lines + invalid_utf8_lines + overlong_lines`.
    Documents: `documents_read == documents + empty_documents`. `empty_files`: files (shards) that gave no
    document.
    `issues` keeps the first `max_issues` skipped lines/documents (file and line number).
    """

    files: int = 0
    empty_files: int = 0
    lines_read: int = 0
    lines_kept: int = 0
    blank_lines: int = 0
    invalid_utf8_lines: int = 0
    overlong_lines: int = 0
    documents_read: int = 0
    documents: int = 0
    empty_documents: int = 0
    sentences: int = 0
    issues: list = dataclasses.field(default_factory=list)
    max_issues: int = 100

    COUNTS = ("files", "empty_files", "lines_read", "lines_kept", "blank_lines", "invalid_utf8_lines",
              "overlong_lines", "documents_read", "documents", "empty_documents", "sentences")

    def merge(self, other):
        """Add the counts (and the first issues) of another read, e.g. one shard's, to these."""
        for name in self.COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.issues.extend(other.issues[: max(0, self.max_issues - len(self.issues))])
        return self

    @property
    def lines_skipped(self):
        return self.invalid_utf8_lines + self.overlong_lines

    def check(self):
        """Returns True when the counts add up (they always should)."""
        lines_ok = self.lines_read == (
            self.lines_kept + self.blank_lines + self.invalid_utf8_lines + self.overlong_lines
        )
        return lines_ok and self.documents_read == self.documents + self.empty_documents

    def _skip(self, path, line, reason):
        if len(self.issues) < self.max_issues:
            self.issues.append(CorpusIssue(path, line, reason))
        logger.warning("Skipped %s:%d: %s", path, line, reason)

    def __str__(self):
        return (
            f"files={self.files} empty_files={self.empty_files} lines_read={self.lines_read} lines_kept={self.lines_kept} "
            f"blank_lines={self.blank_lines} invalid_utf8_lines={self.invalid_utf8_lines} "
            f"overlong_lines={self.overlong_lines} documents={self.documents} "
            f"empty_documents={self.empty_documents} sentences={self.sentences}"
        )


def expand_paths(paths):
    """Expand files, folders (recursively, sorted, hidden files left out) and globs into a file list.

    Args:
        paths: str or list of str.

    Returns:
        A list of file paths, in order, without duplicates.

    Raises:
        FileNotFoundError: a path does not exist or a glob matches nothing.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = []
    for path in paths:
        path = os.fspath(path)
        if os.path.isdir(path):
            found = []
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith("."))
            files.extend(found)
        elif os.path.isfile(path):
            files.append(path)
        elif glob.has_magic(path):
            matches = sorted(p for p in glob.glob(path, recursive=True) if os.path.isfile(p))
            if not matches:
                raise FileNotFoundError(f"Corpus glob matches no file: {path!r}")
            files.extend(matches)
        else:
            raise FileNotFoundError(f"Corpus path does not exist: {path!r}")
    seen = set()
    return [f for f in files if not (f in seen or seen.add(f))]


def read_documents(paths, strict=False, sentence_split=False, max_line_chars=10000, stats=None, opener=None):
    """Yield documents (lists of sentence strings) from corpus files, streaming.

    One sentence per line, a blank line between documents (each file also ends a document). Bad lines
    (invalid UTF-8, longer than `max_line_chars`) and empty documents (blank lines with nothing between,
    or a document whose lines were all skipped) are skipped and counted in `stats` when `strict=False`,
    and raise `CorpusFormatError` naming the file and line when `strict=True`.

    Args:
        paths: a file, folder or glob, or a list of them.
        strict: bool, raise on bad input instead of skipping it.
        sentence_split: bool, split each line into sentences (English/Chinese punctuation) instead of
            taking the line as one sentence.
        max_line_chars: int, lines longer than this (in characters) are bad input.
        stats: optional `CorpusStats` filled while reading (pass one to get the counts).
        opener: optional callable path -> binary file object (e.g. Apache Beam's `FileSystems.open` for
            gs:// or hdfs:// files); `paths` are then taken as they are (no folder or glob expansion).

    Yields:
        list of str, the sentences of one document.

    Raises:
        FileNotFoundError: a path does not exist.
        CorpusFormatError: with `strict=True`, on the first bad line or empty document.

    Example:
    >>> stats = CorpusStats()
    >>> for document in read_documents("corpus/*.txt", stats=stats):
    ...     pass
    >>> assert stats.check()
    """
    stats = stats if stats is not None else CorpusStats()
    if opener is None:
        files, opener = expand_paths(paths), lambda path: open(path, "rb")
    else:
        files = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    for path in files:
        stats.files += 1
        documents = stats.documents
        yield from _read_file(path, strict, sentence_split, max_line_chars, stats, opener)
        if stats.documents == documents:  # nothing usable in it (no line, or every line blank or skipped)
            if strict:
                raise CorpusFormatError(f"{path}: empty file (no document)")
            stats.empty_files += 1
            stats._skip(path, 0, "empty file (no document)")


def _read_file(path, strict, sentence_split, max_line_chars, stats, opener):
    document = []
    skipped_in_document = 0
    start_line = 1

    def close(line_number, reason_line):
        # Returns the finished document (or None when it is empty).
        stats.documents_read += 1
        if document:
            stats.documents += 1
            stats.sentences += len(document)
            return list(document)
        reason = "empty document" + (
            f" (all {skipped_in_document} lines skipped)" if skipped_in_document else ""
        )
        if strict:
            raise CorpusFormatError(f"{path}:{reason_line}: {reason} (lines {start_line}-{line_number})")
        stats.empty_documents += 1
        stats._skip(path, reason_line, reason)
        return None

    line_number = 0
    with opener(path) as f:
        for line_number, raw in enumerate(f, start=1):
            stats.lines_read += 1
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                reason = f"invalid UTF-8 at byte {e.start}: {raw[e.start:e.start + 4]!r}"
                if strict:
                    raise CorpusFormatError(f"{path}:{line_number}: {reason}") from None
                stats.invalid_utf8_lines += 1
                skipped_in_document += 1
                stats._skip(path, line_number, reason)
                continue
            if line_number == 1:
                line = line.lstrip("\ufeff")
            line = line.strip()
            if not line:
                stats.blank_lines += 1
                done = close(line_number, line_number)
                if done:
                    yield done
                document, skipped_in_document, start_line = [], 0, line_number + 1
                continue
            if len(line) > max_line_chars:
                reason = f"line of {len(line)} characters, more than max_line_chars={max_line_chars}"
                if strict:
                    raise CorpusFormatError(f"{path}:{line_number}: {reason}")
                stats.overlong_lines += 1
                skipped_in_document += 1
                stats._skip(path, line_number, reason)
                continue
            stats.lines_kept += 1
            if sentence_split:
                document.extend(split_sentences(line))
            else:
                document.append(line)
    # End of file ends the last document; a file ending in a blank line has nothing pending.
    if document or skipped_in_document:
        done = close(line_number, line_number)
        if done:
            yield done
    elif line_number == 0:
        pass  # an empty file holds no document
