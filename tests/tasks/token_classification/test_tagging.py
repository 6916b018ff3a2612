"""CoNLL files (`token_classification.conll`): CoNLL-2003 and two-column files, the tagging schemes (detected,
converted to IOB2 with the entities kept), the conlleval predictions files, and bad input: errors naming the
file and line, and `python -m recipes.evaluate conll` exiting 2 with one line."""

import random

import pytest

from keras_pretrain.tasks.token_classification import conll as tagging
from keras_pretrain.errors import CorpusFormatError
from keras_pretrain.tasks.token_classification.metrics import entities
from recipes import evaluate

pytestmark = pytest.mark.one_backend

# The first lines of CoNLL-2003's eng.train (IOB1 NER tags; POS and chunk columns), then a second document.
CONLL_2003 = """-DOCSTART- -X- -X- O

EU NNP I-NP I-ORG
rejects VBZ I-VP O
German JJ I-NP I-MISC
call NN I-NP O
. . O O

Peter NNP I-NP I-PER
Blackburn NNP I-NP I-PER


-DOCSTART- -X- -X- O
Hong NNP I-NP I-LOC
Kong NNP I-NP I-LOC
Macau NNP I-NP B-LOC
"""


def write(tmp_path, text, name="train.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


# === Reading ===


def test_conll_2003_file(tmp_path):
    sentences = tagging.read_conll(write(tmp_path, CONLL_2003))
    assert [s.tokens for s in sentences] == [("EU", "rejects", "German", "call", "."), ("Peter", "Blackburn"),
                                             ("Hong", "Kong", "Macau")]
    assert [s.tags for s in sentences] == [("I-ORG", "O", "I-MISC", "O", "O"), ("I-PER", "I-PER"),
                                           ("I-LOC", "I-LOC", "B-LOC")]
    assert [s.line for s in sentences] == [3, 9, 14]
    chunks = tagging.read_conll(write(tmp_path, CONLL_2003), tag_column=2)  # the chunk tags are IOB1 too
    assert chunks[0].tags == ("I-NP", "I-VP", "I-NP", "I-NP", "O")


def test_two_columns_tabs_crlf_and_a_bom(tmp_path):
    text = "\ufeffJohn\tB-PER\r\nlives  O\r\n\r\nin O\r\nParis\tS-LOC"
    sentences = tagging.read_conll(write(tmp_path, text))
    assert sentences == [tagging.Sentence(("John", "lives"), ("B-PER", "O"), 1),
                         tagging.Sentence(("in", "Paris"), ("O", "S-LOC"), 4)]


# === Schemes ===

IOB1 = ["I-ORG", "O", "I-MISC", "I-MISC", "B-MISC", "I-PER", "I-LOC", "B-LOC", "I-LOC"]
IOB1_AS_IOB2 = ["B-ORG", "O", "B-MISC", "I-MISC", "B-MISC", "B-PER", "B-LOC", "B-LOC", "I-LOC"]
IOBES = ["S-PER", "O", "B-LOC", "I-LOC", "E-LOC", "S-LOC", "B-ORG", "E-ORG"]
IOBES_AS_IOB2 = ["B-PER", "O", "B-LOC", "I-LOC", "I-LOC", "B-LOC", "B-ORG", "I-ORG"]


def test_detect_scheme():
    assert tagging.detect_scheme([IOB1]) == "IOB1"
    assert tagging.detect_scheme([IOB1_AS_IOB2, ["O", "I-PER"]]) == "IOB1"  # one I- that begins an entity
    assert tagging.detect_scheme([["B-PER", "I-PER", "I-LOC"]]) == "IOB1"  # a type change: I-LOC begins one
    assert tagging.detect_scheme([IOB1_AS_IOB2, IOBES_AS_IOB2]) == "IOB2"
    assert tagging.detect_scheme([["O", "O"], []]) == "IOB2"
    assert tagging.detect_scheme([IOB1, IOBES]) == "IOBES"
    assert tagging.detect_scheme([["O", "E-PER"]]) == "IOBES"
    with pytest.raises(ValueError, match="not an IOB tag"):
        tagging.detect_scheme([["O", "B_PER"]])


def test_to_iob2_by_hand():
    assert tagging.to_iob2(IOB1, "IOB1") == IOB1_AS_IOB2
    assert tagging.to_iob2(IOBES, "IOBES") == IOBES_AS_IOB2
    assert tagging.to_iob2(IOB1_AS_IOB2, "IOB2") == IOB1_AS_IOB2
    assert tagging.to_iob2(IOB1_AS_IOB2, "IOB1") == IOB1_AS_IOB2  # IOB1's rule leaves IOB2 as it is
    assert tagging.to_iob2([], "IOB1") == []
    with pytest.raises(ValueError, match="is not a tag of IOB1"):
        tagging.to_iob2(["B-PER", "E-PER"], "IOB1")
    with pytest.raises(ValueError, match="unknown tagging scheme"):
        tagging.to_iob2(["O"], "BILOU")


def test_as_iob2_of_a_file_says_which_scheme(tmp_path):
    sentences, scheme = tagging.as_iob2(tagging.read_conll(write(tmp_path, CONLL_2003)))
    assert scheme == "IOB1"
    assert [s.tags for s in sentences] == [("B-ORG", "O", "B-MISC", "O", "O"), ("B-PER", "I-PER"),
                                           ("B-LOC", "I-LOC", "B-LOC")]
    assert sentences[0].tokens[0] == "EU" and sentences[2].line == 14


def random_entities(rng, length):
    found, position = [], rng.randint(0, 2)
    while position < length:
        end = min(length, position + rng.choice((1, 1, 2, 3)))
        found.append((rng.choice(("PER", "LOC")), position, end))
        position = end + rng.choice((0, 0, 1))
    return found


def iobes(spans, length):
    tags = ["O"] * length
    for kind, start, end in spans:
        tags[start:end] = (["S-" + kind] if end - start == 1 else
                           ["B-" + kind] + ["I-" + kind] * (end - start - 2) + ["E-" + kind])
    return tags


def test_conversion_keeps_the_entities():
    """IOB1 -> IOB2 on any B/I/O sequence and IOBES -> IOB2 on well-formed IOBES: the strict IOB2 entities of
    the result are the entities of the original in seqeval's default chunking (and in ours)."""
    get_entities = pytest.importorskip("seqeval.metrics.sequence_labeling").get_entities
    rng = random.Random(0)
    for _ in range(1000):
        length = rng.randint(0, 12)
        tags = [rng.choice(("O", "B-PER", "I-PER", "B-LOC", "I-LOC")) for _ in range(length)]
        spans = random_entities(rng, length)
        for original, scheme in ((tags, "IOB1"), (iobes(spans, length), "IOBES")):
            reference = [(kind, start, end + 1) for kind, start, end in get_entities(original)]
            converted = tagging.to_iob2(original, scheme)
            assert entities(converted, strict=True) == entities(original) == reference, (original, converted)
            assert tagging.detect_scheme([converted]) == "IOB2"
        assert [(kind, start, end) for kind, start, end in entities(iobes(spans, length))] == spans


# === Predictions files ===


def test_predictions_round_trip(tmp_path):
    path = str(tmp_path / "predictions.txt")
    sentences = [tagging.Sentence(("EU", "rejects"), ("B-ORG", "O")), ("Peter", "Blackburn"), ()]
    tagging.write_predictions(path, sentences, [["B-ORG", "O"], ["B-PER", "I-PER"], []],
                              [["B-ORG", "O"], ["B-PER", "B-PER"], []])
    with open(path, encoding="utf-8") as f:
        assert f.read() == "EU B-ORG B-ORG\nrejects O O\n\nPeter B-PER B-PER\nBlackburn I-PER B-PER\n"
    tokens, gold, predicted = tagging.read_predictions(path)
    assert tokens == [["EU", "rejects"], ["Peter", "Blackburn"]]  # the empty sentence is not in the file
    assert gold == [["B-ORG", "O"], ["B-PER", "I-PER"]] and predicted == [["B-ORG", "O"], ["B-PER", "B-PER"]]


def test_predictions_with_more_columns_and_docstart_read_the_last_two(tmp_path):
    path = write(tmp_path, "-DOCSTART- -X- O O\nEU NNP B-ORG O\nrejects VBZ O B-PER\n\n\n", "p.txt")
    assert tagging.read_predictions(path) == ([["EU", "rejects"]], [["B-ORG", "O"]], [["O", "B-PER"]])


def test_write_predictions_refuses_what_it_cannot_write(tmp_path):
    path = str(tmp_path / "p.txt")
    with pytest.raises(ValueError, match="1 sentences, 1 gold and 2 predicted"):
        tagging.write_predictions(path, [["a"]], [["O"]], [["O"], ["O"]])
    with pytest.raises(ValueError, match="sentence 0: 2 tokens, 2 gold and 1 predicted"):
        tagging.write_predictions(path, [["a", "b"]], [["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="token 'New York' is empty or holds whitespace"):
        tagging.write_predictions(path, [["New York"]], [["B-LOC"]], [["B-LOC"]])
    with pytest.raises(ValueError, match="'B_LOC' is not an IOB tag"):
        tagging.write_predictions(path, [["York"]], [["B-LOC"]], [["B_LOC"]])


# === Bad input ===

# name -> (file content, message after "<path>")
BAD_CONLL = {
    "wrong column count": ("EU NNP I-NP I-ORG\nrejects VBZ O\n", ", line 2: 3 columns, expected 4 as on line 1"),
    "wrong column count later": ("a O\n\nb O\nc X O\n", ", line 4: 3 columns, expected 2 as on line 1"),
    "one column": ("-DOCSTART- -X- -X- O\n\nEU\n", ", line 3: 1 column, expected at least 2"),
    "empty file": ("", ": no sentences (the CoNLL file is empty"),
    "blank lines and -DOCSTART- only": ("-DOCSTART- -X- -X- O\n\n \n", ": no sentences"),
    "non-UTF-8": ("EU I-ORG\n".encode() + "Müller I-PER\n".encode("latin-1"), ", line 2: not UTF-8 (byte 0xfc"),
    "invalid tag": ("EU I-ORG\nrejects B_PER\n", ", line 2: tag 'B_PER' is not an IOB tag"),
    "POS column as tags": (CONLL_2003, ", line 3: tag 'NNP' is not an IOB tag"),
}


@pytest.mark.parametrize("name", list(BAD_CONLL))
def test_bad_conll_files_name_the_file_and_line(name, tmp_path):
    text, message = BAD_CONLL[name]
    path = write(tmp_path, text)
    with pytest.raises(CorpusFormatError) as error:
        tagging.read_conll(path, tag_column=1 if name == "POS column as tags" else -1)
    assert str(error.value).startswith(path + message), str(error.value)


def test_a_missing_file_and_a_tag_column_out_of_range(tmp_path):
    with pytest.raises(CorpusFormatError, match="missing.txt: cannot read the CoNLL file"):
        tagging.read_conll(str(tmp_path / "missing.txt"))
    path = write(tmp_path, "EU I-ORG\n")
    for column in (2, -2, 0):
        with pytest.raises(CorpusFormatError, match=f"line 1: no tag column {column} in a row of 2 columns"):
            tagging.read_conll(path, tag_column=column)


BAD_PREDICTIONS = {
    "two columns": ("EU B-ORG\n", ", line 1: 2 columns, expected at least 3"),
    "a line without its prediction": ("EU B-ORG B-ORG\nrejects O\n", ", line 2: 2 columns, expected 3 as on line 1"),
    "empty file": ("", ": no sentences (the predictions file is empty"),
    "non-UTF-8": (b"EU B-ORG B-ORG\n\xff O O\n", ", line 2: not UTF-8 (byte 0xff"),
    "invalid predicted tag": ("EU B-ORG B-ORG\n\nrejects O PER\n", ", line 3: predicted tag 'PER' is not an IOB tag"),
    "invalid gold tag": ("EU B-ORG B-ORG\nrejects o O\n", ", line 2: gold tag 'o' is not an IOB tag"),
}


@pytest.mark.parametrize("name", list(BAD_PREDICTIONS))
def test_bad_predictions_files_name_the_file_and_line(name, tmp_path):
    text, message = BAD_PREDICTIONS[name]
    path = write(tmp_path, text, "predictions.txt")
    with pytest.raises(CorpusFormatError) as error:
        tagging.read_predictions(path)
    assert str(error.value).startswith(path + message), str(error.value)


def run_evaluate(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        evaluate.main(["conll", *argv])
    captured = capsys.readouterr()
    assert exit_info.value.code == 2 and captured.out == ""
    assert "Traceback" not in captured.err
    errors = [line for line in captured.err.splitlines() if "error:" in line]
    assert len(errors) == 1 and captured.err.strip().splitlines()[-1] == errors[0], captured.err
    return errors[0]


@pytest.mark.parametrize("name", list(BAD_PREDICTIONS))
def test_evaluate_conll_exits_2_with_one_line(name, tmp_path, capsys):
    text, message = BAD_PREDICTIONS[name]
    path = write(tmp_path, text, "predictions.txt")
    assert f"error: --predictions: {path}{message}" in run_evaluate(["--predictions", path], capsys)


def test_evaluate_conll_exits_2_on_a_missing_file_and_on_iobes_tags_when_strict(tmp_path, capsys):
    missing = str(tmp_path / "missing.txt")
    assert f"error: --predictions: {missing}: cannot read the predictions file" in run_evaluate(
        ["--predictions", missing], capsys)
    path = write(tmp_path, "EU B-ORG B-ORG\n\nPeter S-PER B-LOC\n", "predictions.txt")
    line = run_evaluate(["--predictions", path, "--strict"], capsys)
    assert f"error: --predictions: {path}, line 3: gold tag 'S-PER' is not an IOB2 tag" in line
    assert evaluate.main(["conll", "--predictions", path]) == 0  # the default mode reads IOBES tags
    assert '"f1": 0.5' in capsys.readouterr().out
