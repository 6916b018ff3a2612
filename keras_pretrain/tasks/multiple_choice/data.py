"""Multiple-choice data: the SWAG and RACE readers, per-choice features, TFRecords and tf.data.

Readers give `ChoiceExample`s: a shared `context`, the `question` (the start shared by every choice), the
`endings` (the candidate answers) and `choices`, the second segment each choice is encoded with.

- SWAG (`read_swag`), the CSV files as released (`train.csv`, `val.csv`, `test.csv`; the released files
  start with an unnamed index column, columns are found by their header names): context = `sent1`,
  question = `sent2`, endings = `ending0..3`, choice i = `sent2 + " " + ending_i`, label = `label` (None
  when the file has no label column, as the released `test.csv`). This is what the multiple-choice
  scripts of BERT's era do: pytorch-pretrained-bert's `run_swag.py` (context `sent1`, the tokens of
  `sent2` followed by those of the ending as the second segment), transformers' legacy
  `utils_multiple_choice.SwagProcessor` (`contexts = [sent1] * 4`, `question = sent2`, `question + " " +
  ending`) and its current `run_swag.py` (`f"{sent2} {ending}"`). transformers' legacy converter also
  applies RACE's `_` rule to SWAG; SWAG's `sent2` holds no blank, we do not.
- RACE (`read_race`), the release layout `RACE/{train,dev,test}/{middle,high}/*.txt`, one JSON object
  per file (`article`, `questions`, `options`, `answers`, `id`), read as xlnet-tensorflow's
  `run_race.py` `get_examples`: levels "middle" then "high", one example per question, label =
  letter - "A", choice j = the question with its `_` replaced by option j when it has one, else
  `question + " " + option`. `run_race.py` takes the files in `tf.gfile.ListDirectory` order, which is
  the file system's (unsorted) listing; we sort the names by default (`sort_files=False` takes the
  listing as `run_race.py` does: `os.listdir` and `tf.gfile.ListDirectory` read the same `readdir`).

Features (`convert_choice_examples`), one record per example, the choices' rows concatenated:

- `style="xlnet"`: xlnet-tensorflow `run_race.py`'s `convert_single_example`, record for record. Per
  choice: the question+option tokens keep their last `max_qa_length`; the context keeps its head so
  that `context <sep> qa <sep> <cls>` fits; segment ids 0 / 1 / 2 (`<cls>`), padding on the LEFT with
  id 0 and segment id 4; `input_mask` is float with 0 = real token, 1 = padding. One deliberate
  difference by default: `run_race.py` extends its context token list in place when the context is
  not truncated (`tokens = tokens_context` then `tokens.append(...)`), so the later choices of a short
  article also see the earlier choices' question and option as context (zihangdai/xlnet issue 204,
  open). We pack every choice with the article alone; `xlnet_context_aliasing=True` reproduces
  `run_race.py` exactly (the records its published RACE runs were trained on).
- `style="bert"`: `packing` (default BERT's `[CLS] context [SEP] choice [SEP]`, segment ids 0 / 1,
  zero right padding, `input_mask` int with 1 = real), the pair truncated longest-first as BERT's
  `run_classifier._truncate_seq_pair` (pytorch-pretrained-bert's `run_swag.py` and transformers'
  `longest_first` do the same; a tie shortens the choice). This is the multiple-choice input of BERT,
  ALBERT, ERNIE and DistilBERT; `packing=keras_pretrain.data.packing.ROBERTA` gives RoBERTa's
  `<s> context </s></s> choice </s>`. Any `Packing` works: its layout, separators and padding side are
  used, only the truncation is longest-first here (the packing's own `truncate` is round-robin, as
  tensorflow-text's trimmer used at serving).

Feature names and dtypes are the original's: `input_ids`, `input_mask`, `segment_ids` (each
`num_choices * max_seq_length` long), `label_ids`, `is_real_example` (0 for the padding records that
`run_race.py` appends to fill the last evaluation batch, `pad_to_multiple_of`). An unlabeled example
(label None, SWAG's test set) is written with label 0, as BERT's and transformers' scripts do.

`to_arrays` and `choice_feature_dataset` give model inputs with the keras-hub names, shaped
`[N, C, T]` / `[C, T]`: `token_ids`, `segment_ids`, `padding_mask` (int32, 1 = real, whatever the style).

The readers and `convert_choice_examples` are pure Python; the TFRecord functions import TensorFlow.
"""

import csv
import dataclasses
import io
import json
import os

from keras_pretrain.data import packing as packing_lib
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import CorpusFormatError

RACE_LEVELS = ("middle", "high")  # `run_race.py`'s `get_examples` order
SWAG_COLUMNS = ("sent1", "sent2")
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids", "label_ids", "is_real_example")
STYLES = ("xlnet", "bert")

# xlnet-tensorflow `run_race.py` segment ids (SEG_ID_SEP = 3 is defined there but not written).
XLNET_SEG_A, XLNET_SEG_B, XLNET_SEG_CLS, XLNET_SEG_PAD = 0, 1, 2, 4
XLNET_MAX_QA_LENGTH = 128  # `run_race.py`'s `--max_qa_length` default


@dataclasses.dataclass
class ChoiceExample:
    """One multiple-choice question.

    Attributes:
        guid: str, unique within the data set (SWAG: `<file stem>-<fold-ind>`; RACE:
            `<split>-<level>-<file stem>-<question index>`).
        context: str, the first segment of every choice (SWAG `sent1`, RACE the article).
        question: str, the start shared by every choice (SWAG `sent2`, RACE the question).
        endings: list of str, the candidate endings / options.
        label: int in `[0, len(endings))`, or None (unlabeled).
        choices: list of str, the second segment of each choice; None: `question + " " + ending`.
    """

    guid: str
    context: str
    question: str
    endings: list
    label: int = None
    choices: list = None

    def __post_init__(self):
        if self.choices is None:
            self.choices = [f"{self.question} {ending}" for ending in self.endings]


def race_choice(question, option):
    """RACE's question + option text (`run_race.py`): the option fills the `_` blanks, else follows."""
    return question.replace("_", option) if "_" in question else " ".join([question, option])


# --- SWAG ------------------------------------------------------------------------------------------


def read_swag(path, num_choices=4):
    """The examples of one SWAG CSV file as released (`train.csv`, `val.csv`, `test.csv`).

    Args:
        path: str, the CSV file (header row first; columns found by name, so the released files'
            leading unnamed index column is optional).
        num_choices: int, the `ending0..ending{num_choices-1}` columns read.

    Returns:
        A list of `ChoiceExample` (context `sent1`, question `sent2`, choices `sent2 + " " + ending`),
        in file order; labels None when the file has no `label` column.

    Raises:
        CorpusFormatError: unreadable file (not UTF-8, bad CSV), a missing column, a row with a
            different number of fields than the header, a row spanning lines (a line break inside a field: a quote
            left open swallows the lines after it, as many rows merged into one), a label that is not an integer in
            `[0, num_choices)`, no example at all.
    """
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise CorpusFormatError(f"{path}: cannot read the SWAG file ({e.strerror or e}).") from None
    text = _decode(path, data)
    stem = os.path.splitext(os.path.basename(path))[0]
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            raise CorpusFormatError(f"{path}: empty file; expected a SWAG CSV header with the columns "
                                    f"{', '.join(_swag_required(num_choices))}.")
        index = {}
        for i, name in enumerate(header):
            index.setdefault(name.strip(), i)
        missing = [name for name in _swag_required(num_choices) if name not in index]
        if missing:
            raise CorpusFormatError(f"{path}: line 1: missing column(s) {', '.join(missing)}; the header "
                                    f"has {', '.join(repr(h) for h in header)}.")
        endings = [index[f"ending{i}"] for i in range(num_choices)]
        label_at, id_at = index.get("label"), index.get("fold-ind")
        examples, end = [], reader.line_num
        for row in reader:
            line, end = end + 1, reader.line_num  # the lines the row spans
            if not row:
                continue
            if end > line or any("\n" in cell or "\r" in cell for cell in row):
                raise CorpusFormatError(f"{path}: line {line}: a quoted field runs from this line to line {end} "
                                        f"({end - line + 1} lines read as one row); an unclosed quote?")
            if len(row) != len(header):
                raise CorpusFormatError(f"{path}: line {line}: {len(row)} fields, the header has {len(header)}.")
            label = None
            if label_at is not None:
                label = _label(path, line, row[label_at], num_choices)
            guid = f"{stem}-{row[id_at] if id_at is not None else len(examples)}"
            examples.append(ChoiceExample(guid=guid, context=row[index["sent1"]], question=row[index["sent2"]],
                                          endings=[row[i] for i in endings], label=label))
    except csv.Error as e:
        raise CorpusFormatError(f"{path}: line {reader.line_num}: not valid CSV ({e}).") from None
    if not examples:
        raise CorpusFormatError(f"{path}: no example after the header.")
    return examples


def _swag_required(num_choices):
    return SWAG_COLUMNS + tuple(f"ending{i}" for i in range(num_choices))


def _label(path, line, cell, num_choices):
    value = cell.strip()
    if not (value.isascii() and value.lstrip("-").isdigit()):
        raise CorpusFormatError(f"{path}: line {line}: label {cell!r} is not an integer; "
                                f"expected 0..{num_choices - 1}.")
    label = int(value)
    if not 0 <= label < num_choices:
        raise CorpusFormatError(f"{path}: line {line}: label {label} is outside 0..{num_choices - 1}.")
    return label


def _decode(path, data):
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise CorpusFormatError(f"{path}: line {line}: not UTF-8 (byte {data[e.start]:#04x} at offset "
                                f"{e.start}).") from None


# --- RACE ------------------------------------------------------------------------------------------


def read_race(data_dir, split, levels=RACE_LEVELS, sort_files=True, num_choices=4):
    """The examples of one RACE split, as xlnet-tensorflow's `run_race.py` reads them.

    Args:
        data_dir: str, the `RACE` folder (holding `train/`, `dev/`, `test/`).
        split: str, "train", "dev" or "test" (any folder name under `data_dir`).
        levels: the level folders read, in order (`run_race.py`: "middle" then "high"; its
            `--high_only` / `--middle_only` are `("high",)` / `("middle",)`).
        sort_files: bool. True: the `*.txt` files of a level by sorted name; False: in the folder's
            listing order, as `run_race.py` (`tf.gfile.ListDirectory`, unsorted).
        num_choices: int, the options each question must have.

    Returns:
        A list of `ChoiceExample` (context = article, question, endings = options, choices by the `_`
        rule of `race_choice`, label = answer letter - "A"), one per question, file by file.

    Raises:
        CorpusFormatError: a missing folder, a split without any file, a file that is not UTF-8 or not a
            JSON object with `article` / `questions` / `options` / `answers`, counts that disagree, a
            question without `num_choices` options, an answer that is not the letter of an option.
    """
    data_dir = os.fspath(data_dir)
    if isinstance(levels, str):
        levels = (levels,)
    examples, files = [], 0
    for level in levels:
        folder = os.path.join(data_dir, split, level)
        if not os.path.isdir(folder):
            raise CorpusFormatError(f"{folder}: RACE folder not found; expected "
                                    f"{os.path.join(data_dir, '{train,dev,test}', '{middle,high}')} with one "
                                    f"JSON .txt file per article.")
        names = [n for n in os.listdir(folder) if n.endswith(".txt") and not n.startswith(".")]
        for name in sorted(names) if sort_files else names:
            path = os.path.join(folder, name)
            if not os.path.isfile(path):
                continue
            files += 1
            stem = os.path.splitext(name)[0]
            examples.extend(_race_file(path, f"{split}-{level}-{stem}", num_choices))
    if not files:
        raise CorpusFormatError(f"{os.path.join(data_dir, split)}: empty split, no .txt file in "
                                f"{', '.join(levels)}.")
    return examples


def _race_file(path, prefix, num_choices):
    with open(path, "rb") as f:
        text = _decode(path, f.read())
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CorpusFormatError(f"{path}: line {e.lineno}: not JSON ({e.msg}).") from None
    if not isinstance(data, dict):
        raise CorpusFormatError(f"{path}: expected a JSON object, found {type(data).__name__}.")
    kinds = {"article": str, "questions": list, "options": list, "answers": list}
    for key, kind in kinds.items():
        if key not in data:
            raise CorpusFormatError(f"{path}: no {key!r} key; found {', '.join(map(repr, data)) or 'none'}.")
        if not isinstance(data[key], kind):
            raise CorpusFormatError(f"{path}: {key!r} is a {type(data[key]).__name__}, expected a "
                                    f"{kind.__name__}.")
    article, questions, options, answers = (data[key] for key in kinds)
    if not len(questions) == len(options) == len(answers):
        raise CorpusFormatError(f"{path}: {len(questions)} questions, {len(options)} option lists and "
                                f"{len(answers)} answers; expected one of each per question.")
    letters = "".join(chr(ord("A") + j) for j in range(num_choices))
    examples = []
    for i, (question, option_list, answer) in enumerate(zip(questions, options, answers)):
        where = f"{path}: question {i}"
        if not isinstance(question, str):
            raise CorpusFormatError(f"{where}: the question is a {type(question).__name__}, expected a string.")
        if not isinstance(option_list, list) or len(option_list) != num_choices:
            found = len(option_list) if isinstance(option_list, list) else type(option_list).__name__
            raise CorpusFormatError(f"{where}: {found} options, expected {num_choices}.")
        if not all(isinstance(option, str) for option in option_list):
            raise CorpusFormatError(f"{where}: options must be strings.")
        if not (isinstance(answer, str) and len(answer) == 1 and answer in letters):
            raise CorpusFormatError(f"{where}: answer {answer!r} is not one of {', '.join(letters)}.")
        examples.append(ChoiceExample(
            guid=f"{prefix}-{i}", context=article, question=question, endings=list(option_list),
            label=ord(answer) - ord("A"), choices=[race_choice(question, option) for option in option_list]))
    return examples


# --- features --------------------------------------------------------------------------------------


@dataclasses.dataclass
class ChoiceFeatures:
    """One example's record: the rows of its choices concatenated (`run_race.py`'s `InputFeatures`).

    `input_ids`, `input_mask`, `segment_ids` are lists of `num_choices * max_seq_length`; `input_mask` is
    float, 0 = real (style "xlnet") or int, 1 = real (style "bert").
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int
    is_real_example: int
    num_choices: int
    style: str

    def as_dict(self):
        """The record with the original feature names (`FEATURE_NAMES`)."""
        return {"input_ids": self.input_ids, "input_mask": self.input_mask, "segment_ids": self.segment_ids,
                "label_ids": [self.label_id], "is_real_example": [self.is_real_example]}


def truncate_longest_first(a, b, max_length):
    """Copies of `a` and `b`, the longer shortened one token at a time (a tie shortens `b`) until
    `len(a) + len(b) <= max_length`: BERT's `_truncate_seq_pair`."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def convert_choice_examples(examples, max_seq_length, tokenize, style="xlnet", special=None,
                            max_qa_length=None, packing=None, pad_to_multiple_of=None,
                            xlnet_context_aliasing=False):
    """One `ChoiceFeatures` record per example (see the module docstring for the two styles).

    Args:
        examples: list of `ChoiceExample`, all with the same number of choices.
        max_seq_length: int, the length of each choice's row.
        tokenize: callable `text -> list of int` (the model's tokenizer, without special tokens; for
            XLNet the original's `preprocess_text` + `encode_ids`).
        style: "xlnet" or "bert".
        special: dict of ids: `cls`, `sep` (required) and `pad` (padding id; default 0, what
            `run_race.py` writes whatever the vocabulary's `<pad>`; the mask hides it).
        max_qa_length: int or None, the question+option tokens kept (their last ones). None: 128
            (`run_race.py`'s default) for "xlnet", no limit for "bert".
        packing: "bert" style only: a `keras_pretrain.data.packing.Packing` (or its name); default BERT.
        pad_to_multiple_of: int or None. Append padding records (`is_real_example` 0, label 0, ids 0,
            the mask all padding) until the count is a multiple (`run_race.py` fills its last
            evaluation batch so).
        xlnet_context_aliasing: bool, "xlnet" style only: True reproduces `run_race.py`'s in-place
            growth of the context (a short article's later choices see the earlier choices' tokens).

    Returns:
        A list of `ChoiceFeatures`.
    """
    if style not in STYLES:
        raise ConfigError(f"convert_choice_examples: style {style!r}; expected one of {STYLES}.")
    special = dict(special or {})
    for key in ("cls", "sep"):
        if key not in special:
            raise ConfigError(f"convert_choice_examples: special ids need {key!r}; got {sorted(special)}.")
    pad_id = special.get("pad", 0)
    num_choices = _num_choices(examples)
    if style == "xlnet":
        if packing is not None:
            raise ConfigError("convert_choice_examples: style 'xlnet' is run_race.py's packing; "
                              "`packing` applies to style 'bert'.")
        max_qa_length = XLNET_MAX_QA_LENGTH if max_qa_length is None else max_qa_length
        if not 0 < max_qa_length <= max_seq_length - 3:
            raise ConfigError(f"convert_choice_examples: max_qa_length={max_qa_length} must be in "
                              f"1..max_seq_length - 3 = {max_seq_length - 3}.")
        row = _xlnet_rows(max_seq_length, max_qa_length, special["cls"], special["sep"], pad_id,
                          xlnet_context_aliasing)
    else:
        packer = packing_lib.BERT if packing is None else packing_lib.get(packing)
        budget = max_seq_length - packer.num_special_tokens(2)
        if budget < 2:
            raise ConfigError(f"convert_choice_examples: max_seq_length={max_seq_length} leaves no room "
                              f"for a context and a choice.")
        row = _packed_rows(packer, max_seq_length, budget, max_qa_length, special["cls"], special["sep"], pad_id)
    features = []
    for example in examples:
        ids, mask, segments = row(tokenize(example.context), [tokenize(text) for text in example.choices])
        label = 0 if example.label is None else int(example.label)
        features.append(ChoiceFeatures(ids, mask, segments, label, 1, num_choices, style))
    if pad_to_multiple_of:
        n = num_choices * max_seq_length
        mask = [1.0] * n if style == "xlnet" else [0] * n
        while len(features) % pad_to_multiple_of:
            features.append(ChoiceFeatures([0] * n, list(mask), [0] * n, 0, 0, num_choices, style))
    return features


def _num_choices(examples):
    counts = {len(example.choices) for example in examples}
    if len(counts) > 1:
        raise ConfigError(f"convert_choice_examples: examples have different numbers of choices {sorted(counts)}.")
    return counts.pop() if counts else 0


def _xlnet_rows(max_seq_length, max_qa_length, cls, sep, pad_id, aliasing):
    budget = max_seq_length - 3

    def rows(context, qas):
        ids, mask, segments = [], [], []
        for qa in qas:
            qa = qa[-max_qa_length:] if len(qa) > max_qa_length else qa
            a = context[:budget - len(qa)] if len(context) + len(qa) > budget else list(context)
            tokens = a + [sep] + qa + [sep, cls]
            types = [XLNET_SEG_A] * (len(a) + 1) + [XLNET_SEG_B] * (len(qa) + 1) + [XLNET_SEG_CLS]
            if aliasing and len(context) + len(qa) <= budget:
                context = tokens  # run_race.py appends to its context list itself when it is not truncated
            delta = max_seq_length - len(tokens)
            ids += [pad_id] * delta + tokens
            mask += [1.0] * delta + [0.0] * len(tokens)
            segments += [XLNET_SEG_PAD] * delta + types
        return ids, mask, segments

    return rows


def _packed_rows(packer, max_seq_length, budget, max_qa_length, cls, sep, pad_id):
    def rows(context, qas):
        ids, mask, segments = [], [], []
        for qa in qas:
            if max_qa_length is not None and len(qa) > max_qa_length:
                qa = qa[-max_qa_length:]
            a, b = truncate_longest_first(context, qa, budget)
            tokens, types = packer.pack_lists([a, b], cls, sep)
            delta = max_seq_length - len(tokens)
            if packer.pads_left:
                ids += [pad_id] * delta + tokens
                mask += [0] * delta + [1] * len(tokens)
                segments += [packer.pad_segment] * delta + types
            else:
                ids += tokens + [pad_id] * delta
                mask += [1] * len(tokens) + [0] * delta
                segments += types + [packer.pad_segment] * delta
        return ids, mask, segments

    return rows


# --- arrays, TFRecords, tf.data --------------------------------------------------------------------


def to_arrays(features):
    """NumPy model inputs of `ChoiceFeatures`: `token_ids`, `segment_ids`, `padding_mask` int32
    `[N, C, T]` (1 = real token), `label_ids` and `is_real_example` int32 `[N]`."""
    import numpy as np

    if not features:
        raise ConfigError("to_arrays: no features.")
    first = features[0]
    c = first.num_choices
    t = len(first.input_ids) // c
    ids = np.asarray([f.input_ids for f in features], "int32").reshape(-1, c, t)
    mask = np.asarray([f.input_mask for f in features], "float32").reshape(-1, c, t)
    return {
        "token_ids": ids,
        "segment_ids": np.asarray([f.segment_ids for f in features], "int32").reshape(-1, c, t),
        "padding_mask": _padding_mask(mask, first.style).astype("int32"),
        "label_ids": np.asarray([f.label_id for f in features], "int32"),
        "is_real_example": np.asarray([f.is_real_example for f in features], "int32"),
    }


def _padding_mask(input_mask, style):
    """1 = real token: XLNet's float mask is inverted (0 = real)."""
    return 1 - input_mask if style == "xlnet" else input_mask


def _check_style(style):
    if style not in STYLES:
        raise ConfigError(f"style {style!r}; expected one of {STYLES}.")


def choice_feature_spec(num_choices, max_seq_length, style="xlnet"):
    """The `tf.io.parse_example` spec of the records (`run_race.py`'s `name_to_features` for "xlnet")."""
    import tensorflow as tf

    _check_style(style)
    n = num_choices * max_seq_length
    return {
        "input_ids": tf.io.FixedLenFeature([n], tf.int64),
        "input_mask": tf.io.FixedLenFeature([n], tf.float32 if style == "xlnet" else tf.int64),
        "segment_ids": tf.io.FixedLenFeature([n], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


def write_choice_features(features, path):
    """Write `ChoiceFeatures` to one TFRecord file with `run_race.py`'s names and dtypes (int64 lists;
    float `input_mask` for style "xlnet"). Returns the number of records."""
    import tensorflow as tf

    path = os.fspath(path)
    parent = os.path.dirname(path)
    if parent:
        tf.io.gfile.makedirs(parent)
    count = 0
    with tf.io.TFRecordWriter(path) as writer:
        for feature in features:
            record = {}
            for name, values in feature.as_dict().items():
                if name == "input_mask" and feature.style == "xlnet":
                    record[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
                else:
                    record[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
            writer.write(tf.train.Example(features=tf.train.Features(feature=record)).SerializeToString())
            count += 1
    return count


def choice_feature_dataset(path, num_choices, max_seq_length, style="xlnet", raw=False):
    """Multiple-choice TFRecords (ours or `run_race.py`'s) as a `tf.data.Dataset`, one example each.

    Args:
        path: str or list of str (globs allowed), read in sorted order.
        num_choices, max_seq_length: ints, as written.
        style: "xlnet" or "bert", as written (the mask's dtype and meaning).
        raw: bool. True: dicts of the original features (`FEATURE_NAMES`, flat; int32 and the float
            `input_mask` for "xlnet") instead.

    Returns:
        A dataset of `(x, label)`: `x` = `token_ids`, `segment_ids`, `padding_mask` int32 `[C, T]` (1 = real
        token), `label` int32 scalar; batch it for `model.fit`.

    Raises:
        FileNotFoundError: the path matches no file.
    """
    import tensorflow as tf

    _check_style(style)
    from keras_pretrain.data.tfrecords import matching_files

    files = matching_files(path, "multiple-choice TFRecord")
    spec = choice_feature_spec(num_choices, max_seq_length, style)
    shape = (num_choices, max_seq_length)

    def parse(serialized):
        record = tf.io.parse_single_example(serialized, spec)
        record = {k: v if v.dtype == tf.float32 else tf.cast(v, tf.int32) for k, v in record.items()}
        if raw:
            return record
        mask = tf.cast(_padding_mask(record["input_mask"], style), tf.int32)
        x = {"token_ids": tf.reshape(record["input_ids"], shape),
             "segment_ids": tf.reshape(record["segment_ids"], shape),
             "padding_mask": tf.reshape(mask, shape)}
        return x, record["label_ids"]

    return tf.data.TFRecordDataset(files).map(parse, num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
