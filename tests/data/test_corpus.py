import pytest

from keras_pretrain.data.corpus import CorpusStats, read_documents, split_sentences
from keras_pretrain.errors import CorpusFormatError

pytestmark = pytest.mark.tf_only  # pure Python: once, in the TensorFlow run, is enough


def _write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def test_original_format(tmp_path):
    f = _write(tmp_path / "a.txt", "s1 a.\ns2 a.\n\ns1 b.\n")
    stats = CorpusStats()
    docs = list(read_documents(str(f), stats=stats))
    assert docs == [["s1 a.", "s2 a."], ["s1 b."]]
    assert (stats.lines_read, stats.lines_kept, stats.blank_lines, stats.documents) == (4, 3, 1, 2)
    assert stats.check()


def test_folders_globs_and_missing_paths(tmp_path):
    (tmp_path / "d" / "sub").mkdir(parents=True)
    _write(tmp_path / "d" / "1.txt", "one\n")
    _write(tmp_path / "d" / "sub" / "2.txt", "two\n")
    _write(tmp_path / "d" / ".hidden", "no\n")
    assert list(read_documents(tmp_path / "d")) == [["one"], ["two"]]
    assert list(read_documents(str(tmp_path / "d" / "*.txt"))) == [["one"]]
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        list(read_documents([str(tmp_path / "d"), str(tmp_path / "nope.txt")]))
    with pytest.raises(FileNotFoundError, match=r"\*\.xyz"):
        list(read_documents(str(tmp_path / "*.xyz")))


def test_bad_input_is_counted_and_counts_add_up(tmp_path):
    data = (
        b"good 1\n"
        b"bad \xff\xfe utf8\n"  # line 2
        b"good 2\n"
        b"\n"
        b"\n"  # line 5: empty document
        + b"x" * 50 + b"\n"  # line 6: overlong
        + b"\n"  # line 7: closes a document whose only line was skipped
        b"good 3\r\n"
    )
    f = _write(tmp_path / "bad.txt", data)
    stats = CorpusStats()
    docs = list(read_documents(f, max_line_chars=20, stats=stats))
    assert docs == [["good 1", "good 2"], ["good 3"]]
    assert stats.lines_read == 8
    assert (stats.lines_kept, stats.blank_lines) == (3, 3)
    assert (stats.invalid_utf8_lines, stats.overlong_lines) == (1, 1)
    assert (stats.documents_read, stats.documents, stats.empty_documents) == (4, 2, 2)
    assert stats.check()
    where = [(i.line, i.reason.split()[0]) for i in stats.issues]
    assert where == [(2, "invalid"), (5, "empty"), (6, "line"), (7, "empty")]
    assert str(stats.issues[0]).startswith(f"{f}:2:")


@pytest.mark.parametrize(
    "data, line, what",
    [
        (b"ok\nbad \xc3\x28\n", 2, "invalid UTF-8"),
        (b"ok\n\n\nok\n", 3, "empty document"),
        (b"ok\n" + b"y" * 30 + b"\n", 2, "max_line_chars"),
    ],
)
def test_strict_raises_with_file_and_line(tmp_path, data, line, what):
    f = _write(tmp_path / "c.txt", data)
    with pytest.raises(CorpusFormatError, match=rf"c\.txt:{line}: .*") as info:
        list(read_documents(f, strict=True, max_line_chars=20))
    assert what in str(info.value)
    assert isinstance(info.value, ValueError)


def test_streaming_yields_before_reading_the_rest(tmp_path):
    f = _write(tmp_path / "s.txt", b"first\n\n" + b"\xff\n")
    documents = read_documents(f, strict=True)
    assert next(documents) == ["first"]  # the bad line later in the file is not read yet
    with pytest.raises(CorpusFormatError):
        next(documents)


def test_sentence_split_english_and_chinese(tmp_path):
    assert split_sentences('He said "Hi." Then left! Why? 3.5 stays.') == [
        'He said "Hi."', "Then left!", "Why?", "3.5 stays."
    ]
    assert split_sentences("我爱北京。你呢？好！“真的？”是的……走吧") == [
        "我爱北京。", "你呢？", "好！", "“真的？”", "是的……", "走吧"
    ]
    f = _write(tmp_path / "p.txt", "One. Two.\n\n甲。乙！\n")
    stats = CorpusStats()
    assert list(read_documents(f, sentence_split=True, stats=stats)) == [
        ["One.", "Two."], ["甲。", "乙！"]
    ]
    assert stats.sentences == 4 and stats.lines_kept == 2 and stats.check()


def test_bom_and_crlf(tmp_path):
    f = _write(tmp_path / "b.txt", "\ufeffone\r\ntwo\r\n")
    assert list(read_documents(f)) == [["one", "two"]]
