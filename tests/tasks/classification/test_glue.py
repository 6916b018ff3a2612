"""GLUE readers and features against the authors' processors and `file_based_convert_examples_to_features`.

The references are the PyPI copies (test extra) of google-research/albert `classifier_utils.py` (every
GLUE task), bert `run_classifier.py` (CoLA, MRPC, MNLI) and xlnet `run_classifier.py` +
`classifier_utils.py` (MNLI, STS-B processors; the feature writer). A tiny GLUE folder is written for
every task with the real layouts and quirks (CoLA's headerless train/dev, MRPC's test columns, MNLI's 12 /
16 / 10 columns, STS-B's scores, a QQP question broken by a newline, which the originals skip, an
unclosed quote, CRLF line ends, unicode, long texts that truncate, empty and blank second texts).

The originals are TF1 code; they run, once for the module, in ONE subprocess (`sys.executable -c SCRIPT`)
so that nothing they do reaches this process. What that subprocess changes, and why it leaves the code
under test as it is:

- `sys.modules["tensorflow"] = tf.compat.v1`: ALBERT's and XLNet's modules `import tensorflow` and call
  the TF1 names `tf.gfile.Open`, `tf.python_io.TFRecordWriter`, `tf.logging`, `tf.train.Example`; the
  v1 module has exactly these (bert's code imports `tensorflow.compat.v1` itself).
- `tensorflow.contrib`, `.contrib.data`, `.metrics`, `.tpu`, `.layers`: empty stand-in modules. ALBERT
  imports them at module level for its model, optimizer and input functions; the processors, the
  tokenizer and the feature writer never touch them.
- absl flags: xlnet's writer reads `FLAGS.overwrite_data`, which upstream `run_classifier.py` defines
  (default False) and the PyPI copy does not; it is defined with that default and the flags are marked
  parsed (bert's `tokenization` reads `FLAGS.preserve_unused_tokens`, default False).

Our side runs our tokenizers (`BertTokenizer`, `AlbertTokenizer`, `XLNetTokenizer`) as the `tokenize` of
`convert_examples_to_features`; the records must be byte-for-byte the originals', record for record.
"""

import json
import os
import random
import subprocess
import sys

import numpy as np
import pytest

from keras_pretrain.tasks.classification.glue import TASKS, Example, read_file, read_split
from keras_pretrain.tasks.classification.features import (
    convert_examples_to_features,
    feature_dataset,
    to_arrays,
    write_features,
)
from keras_pretrain.data.packing import truncate
from keras_pretrain.errors import CorpusFormatError
from tests.originals import TF1_SUBPROCESS_STUBS

pytestmark = pytest.mark.tf_only

MAX_SEQ_LENGTH = 20
LONG = [
    "the model reads every word of this long sentence and the packing must cut it at the limit",
    "Another long text, with numbers 1,000 and 2,500, that goes on and on until nothing more fits in",
    "短 and 长 mixed with Café résumé naïve and more words so that the pair is truncated here",
]
SHORT = [
    "The quick brown fox jumps over the lazy dog.",
    "Café naïve résumé: the accents go when uncased.",
    "中国人说你好，再见。",
    "I ❤️ the 😀 world😀s",
    "1,000,000 people, 9, 10, 2,500, and 19,999, more",
    'A "quoted sentence that never closes',
    'a line that ends with a quote"',
    "``Double backquotes'' and 'single quotes' here",
    "  extra   spaces\u3000and\u00a0odd   spaces  ",
    "Is this jacksonville ?",
    "no it is not .",
    "hel\u200blo World İstanbul ΟΔΟΣ οδος",
]
POOL = LONG + SHORT
TASK_FOLDERS = {"cola": "CoLA", "sst-2": "SST-2", "mrpc": "MRPC", "sts-b": "STS-B", "qqp": "QQP",
                "mnli": "MNLI", "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "ax": "diagnostic"}


# === The GLUE folder ===

def _texts(rng, n, pair):
    # The first rows: a longer than b, b longer than a, both long, an empty and a blank second text.
    fixed = [(LONG[0], SHORT[0]), (SHORT[1], LONG[1]), (LONG[2], LONG[0]), (SHORT[2], ""), (SHORT[3], "   ")]
    rows = fixed if pair else [(LONG[0], None), ("", None), (SHORT[4], None)]
    rows = list(rows) + [(rng.choice(POOL), rng.choice(POOL) if pair else None) for _ in range(n - len(rows))]
    return rows


def _write(path, header, rows, newline="\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lines = ([header] if header else []) + ["\t".join(row) for row in rows]
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write("".join(line + newline for line in lines))


def write_glue(root, n=8):
    """A GLUE download folder (`root/<Task>/<split>.tsv`), with each task's real columns."""
    rng = random.Random(0)

    def labels(task, i):
        return f"{(i * 0.7) % 5:.3f}" if task == "sts-b" else TASKS[task].labels[i % len(TASKS[task].labels)]

    def folder(task, name):
        return os.path.join(root, TASK_FOLDERS[task], name)

    for split in ("train", "dev"):
        texts = _texts(rng, n, pair=False)
        _write(folder("cola", f"{split}.tsv"), None,  # no header
               [(f"gj0{i}", labels("cola", i), "*" if i % 3 else "", a) for i, (a, _) in enumerate(texts)])
        _write(folder("sst-2", f"{split}.tsv"), "sentence\tlabel",
               [(a, labels("sst-2", i)) for i, (a, _) in enumerate(_texts(rng, n, pair=False))])
        _write(folder("mrpc", f"{split}.tsv"), "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String",
               [(labels("mrpc", i), str(100 + i), str(200 + i), a, b)
                for i, (a, b) in enumerate(_texts(rng, n, pair=True))])
        _write(folder("sts-b", f"{split}.tsv"),
               "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore",
               [(str(i), "main-news", "headlines", "2015", str(i), "none", "none", a, b, labels("sts-b", i))
                for i, (a, b) in enumerate(_texts(rng, n, pair=True))])
        qqp = [(str(i), str(2 * i), str(2 * i + 1), a, b, labels("qqp", i))
               for i, (a, b) in enumerate(_texts(rng, n, pair=True))]
        # A question with a newline in it: two physical lines of 4 and 3 columns, both skipped.
        qqp.insert(3, ("99", "198", "199", "How do I break"))
        qqp.insert(4, ("a line?", "Why would I?", "0"))
        _write(folder("qqp", f"{split}.tsv"), "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate", qqp)
        for task in ("qnli", "rte", "wnli"):
            header = "index\tquestion\tsentence\tlabel" if task == "qnli" else "index\tsentence1\tsentence2\tlabel"
            _write(folder(task, f"{split}.tsv"), header,
                   [(str(i), a, b, labels(task, i)) for i, (a, b) in enumerate(_texts(rng, n, pair=True))],
                   newline="\r\n" if (task, split) == ("rte", "dev") else "\n")
    mnli = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
            "sentence1_parse\tsentence2_parse\tsentence1\tsentence2")
    parse = ("( ( a b ) )", "( c )", "(ROOT (S a b))", "(ROOT (NP c))")
    _write(folder("mnli", "train.tsv"), mnli + "\tlabel1\tgold_label",
           [(str(i), str(i), f"{i}n", "fiction", *parse, a, b, labels("mnli", i), labels("mnli", i))
            for i, (a, b) in enumerate(_texts(rng, n, pair=True))])
    for name in ("dev_matched", "dev_mismatched"):
        _write(folder("mnli", f"{name}.tsv"), mnli + "".join(f"\tlabel{k}" for k in range(1, 6)) + "\tgold_label",
               [(str(i), str(i), f"{i}e", "slate", *parse, a, b, *[labels("mnli", i + 1)] * 5, labels("mnli", i))
                for i, (a, b) in enumerate(_texts(rng, n, pair=True))])
    for name in ("test_matched", "test_mismatched"):
        _write(folder("mnli", f"{name}.tsv"), mnli,
               [(str(i), str(i), f"{i}c", "travel", *parse, a, b) for i, (a, b) in enumerate(_texts(rng, n, True))])
    _write(folder("cola", "test.tsv"), "index\tsentence",
           [(str(i), a) for i, (a, _) in enumerate(_texts(rng, n, False))])
    _write(folder("sst-2", "test.tsv"), "index\tsentence",
           [(str(i), a) for i, (a, _) in enumerate(_texts(rng, n, False))])
    _write(folder("mrpc", "test.tsv"), "index\t#1 ID\t#2 ID\t#1 String\t#2 String",
           [(str(i), str(300 + i), str(400 + i), a, b) for i, (a, b) in enumerate(_texts(rng, n, True))])
    _write(folder("sts-b", "test.tsv"),
           "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2",
           [(str(i), "main-forums", "answers", "2016", str(i), "none", "none", a, b)
            for i, (a, b) in enumerate(_texts(rng, n, True))])
    _write(folder("qqp", "test.tsv"), "id\tquestion1\tquestion2",
           [(str(i), a, b) for i, (a, b) in enumerate(_texts(rng, n, True))])
    for task in ("qnli", "rte", "wnli"):
        _write(folder(task, "test.tsv"), "index\tsentence1\tsentence2",
               [(str(i), a, b) for i, (a, b) in enumerate(_texts(rng, n, True))])
    _write(folder("ax", "diagnostic.tsv"), "index\tsentence1\tsentence2",
           [(str(i), a, b) for i, (a, b) in enumerate(_texts(rng, n, True))])


def splits(task):
    """(our split, the original's getter) of every split the authors' processors read."""
    names = {"train": "train", "dev": "dev", "test": "test"}
    return [(ours, theirs) for ours, theirs in names.items() if ours in TASKS[task].splits]


# === The vocabularies ===

def write_vocab(path):
    import re
    import unicodedata

    text = unicodedata.normalize("NFD", " ".join(POOL).lower())
    text = "".join(c for c in text if unicodedata.category(c) != "Mn")
    words = sorted(set(re.findall(r"[a-z]+", text)))[::2]  # half the words: the others split into pieces
    chars = sorted({c for c in text if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + words
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return str(path)


def write_spm(path, xlnet):
    import io

    import sentencepiece as spm

    lines = [t.lower() if not xlnet else t for t in POOL] * 20
    if xlnet:
        special = dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
                       control_symbols=["<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"])
    else:
        special = dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
                       control_symbols=["[CLS]", "[SEP]", "[MASK]"])
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buffer, vocab_size=160,
                                   model_type="unigram", hard_vocab_limit=False, minloglevel=2, **special)
    path.write_bytes(buffer.getvalue())
    return str(path)


# === The originals, in a subprocess ===

SCRIPT = r'''
import json, os, sys, types
spec = json.loads(sys.argv[1])
''' + TF1_SUBPROCESS_STUBS + r'''from absl import flags
from albert import classifier_utils as acu, tokenization as atok
from bert import run_classifier as brc, tokenization as btok
from xlnet import run_classifier as xrc, prepro_utils as xpre
import sentencepiece as spm
flags.DEFINE_bool("overwrite_data", False, "upstream xlnet run_classifier.py's flag")
flags.FLAGS.mark_as_parsed()

glue, out, L = spec["glue"], spec["out"], spec["max_seq_length"]
ALBERT = {"cola": acu.ColaProcessor, "sst-2": acu.Sst2Processor, "mrpc": acu.MrpcProcessor,
          "sts-b": acu.StsbProcessor, "qqp": acu.QqpProcessor, "mnli": acu.MnliProcessor,
          "mnli-mm": acu.MisMnliProcessor, "qnli": acu.QnliProcessor, "rte": acu.RteProcessor,
          "wnli": acu.WnliProcessor, "ax": acu.AXProcessor}
BERT = {"cola": brc.ColaProcessor, "mrpc": brc.MrpcProcessor, "mnli": brc.MnliProcessor}
XLNET = {"mnli": xrc.MnliMatchedProcessor, "mnli-mm": xrc.MnliMismatchedProcessor, "sts-b": xrc.StsbProcessor}

def read(processor, data_dir, split):
    return getattr(processor, "get_%s_examples" % split)(data_dir)

def dump(examples):
    return [[e.guid, e.text_a, e.text_b, e.label] for e in examples]

wordpiece = btok.FullTokenizer(spec["vocab"], do_lower_case=True)
albert_wordpiece = atok.FullTokenizer(spec["vocab"], do_lower_case=True)
albert_spm = atok.FullTokenizer(None, do_lower_case=True, spm_model_file=spec["albert_model"])
xlnet_sp = spm.SentencePieceProcessor()
xlnet_sp.Load(spec["xlnet_model"])
xlnet_tokenize = lambda text: xpre.encode_ids(xlnet_sp, xpre.preprocess_text(text, lower=False))
result = {"albert": {}, "albert_spm": {}, "bert": {}, "xlnet": {}}
for task, splits in spec["splits"].items():
    for split in splits:
        key, folder = task + "/" + split, os.path.join(glue, spec["folders"][task])
        record = lambda family: os.path.join(out, family + "-" + task + "-" + split + ".tfrecord")
        raw = read(ALBERT[task](use_spm=False, do_lower_case=True), glue, split)
        processed = read(ALBERT[task](use_spm=True, do_lower_case=True), glue, split)
        labels = ALBERT[task](False, True).get_labels()
        result["albert"][key], result["albert_spm"][key] = dump(raw), dump(processed)
        acu.file_based_convert_examples_to_features(processed, labels, L, albert_spm, record("albert_spm"), task)
        # google-research/albert since PR 134: `preprocess_text(text, lower=self.do_lower_case)`.
        lower = lambda text: None if text is None else atok.preprocess_text(text, lower=True)
        fixed = [acu.InputExample(e.guid, lower(e.text_a), lower(e.text_b), e.label) for e in raw]
        acu.file_based_convert_examples_to_features(fixed, labels, L, albert_spm, record("albert_lower"), task)
        if task == "sts-b":  # BERT-style WordPiece features with float scores: ALBERT's writer
            acu.file_based_convert_examples_to_features(raw, labels, L, albert_wordpiece, record("bert"), task)
        else:
            examples = read(BERT[task](), folder, split) if task in BERT else raw
            if task in BERT:
                result["bert"][key] = dump(examples)
            brc.file_based_convert_examples_to_features(examples, labels, L, wordpiece, record("bert"))
        if task in XLNET:
            result["xlnet"][key] = dump(read(XLNET[task](), folder, split))
        xlnet_labels = None if task == "sts-b" else labels
        xrc.file_based_convert_examples_to_features(raw, xlnet_labels, L, xlnet_tokenize, record("xlnet"))
with open(os.path.join(out, "examples.json"), "w") as f:
    json.dump(result, f)
'''


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    for module in ("albert.classifier_utils", "bert.run_classifier", "xlnet.run_classifier"):
        pytest.importorskip(module.split(".")[0])
    root = tmp_path_factory.mktemp("glue")
    write_glue(str(root / "glue_data"))
    files = {"vocab": write_vocab(root / "vocab.txt"), "albert_model": write_spm(root / "albert.model", False),
             "xlnet_model": write_spm(root / "xlnet.model", True)}
    out = root / "originals"
    out.mkdir()
    spec = dict(files, glue=str(root / "glue_data"), out=str(out), max_seq_length=MAX_SEQ_LENGTH,
                folders=TASK_FOLDERS | {"mnli-mm": "MNLI"},
                splits={task: [theirs for _, theirs in splits(task)] for task in TASKS})
    result = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(spec)], capture_output=True, text=True,
                            env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"},
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    with open(out / "examples.json", encoding="utf-8") as f:
        examples = json.load(f)
    return dict(files, root=root, glue=str(root / "glue_data"), out=str(out), examples=examples)


def ours(glue, task, split):
    folder = TASK_FOLDERS.get(task, "MNLI")
    return read_split(task, os.path.join(glue["glue"], folder), split)


def rows(examples):
    return [[e.guid, e.text_a, e.text_b, e.label] for e in examples]


# === Examples ===

def test_examples_equal_the_albert_processors_for_every_task_and_split(glue):
    atok = pytest.importorskip("albert.tokenization")
    count = 0
    for task in TASKS:
        for split, theirs in splits(task):
            examples = ours(glue, task, split)
            assert rows(examples) == glue["examples"]["albert"][f"{task}/{theirs}"], (task, split)
            # With a SentencePiece model the processors preprocess the text (and guid) with
            # `preprocess_text(text, do_lower_case)`: `remove_space=True`, no lower-casing (see below).
            processed = [[atok.preprocess_text(x, True) if isinstance(x, str) and i < 3 else x
                          for i, x in enumerate(row)] for row in rows(examples)]
            assert processed == glue["examples"]["albert_spm"][f"{task}/{theirs}"], (task, split)
            count += len(examples)
    assert count > 200
    # The quirks are there: QQP's broken question skipped, CoLA's train read from its first line.
    assert len(ours(glue, "qqp", "train")) == 8
    assert ours(glue, "cola", "train")[0].guid == "train-0"
    assert ours(glue, "mrpc", "test")[0].guid == "0" and ours(glue, "mrpc", "test")[0].label == "0"
    assert ours(glue, "sts-b", "dev")[1].label == pytest.approx(0.7)
    assert ours(glue, "mnli", "test")[0].label == "contradiction"


def test_examples_equal_the_bert_and_xlnet_processors(glue):
    for family, tasks in (("bert", ("cola", "mrpc", "mnli")), ("xlnet", ("mnli", "mnli-mm", "sts-b"))):
        for task in tasks:
            for split, theirs in splits(task):
                expected = glue["examples"][family][f"{task}/{theirs}"]
                got = rows(ours(glue, task, split))
                # Texts and labels; the guid is ALBERT's (BERT: "<split>-<index>" for MNLI, "test-<row>" for
                # the CoLA and MRPC test sets; XLNet: "<split>-<row>").
                assert [r[1:] for r in got] == [r[1:] for r in expected], (family, task, split)
                assert len(got) == 8


def test_mnli_splits_and_folders(glue):
    mnli = os.path.join(glue["glue"], "MNLI")
    assert rows(read_split("mnli", mnli, "dev_mismatched")) == rows(read_split("mnli-mm", mnli, "dev"))
    assert rows(read_split("mnli", mnli, "test_matched")) == rows(read_split("mnli", mnli, "test"))
    # The GLUE folder itself also works; the diagnostic set is also found as AX.tsv.
    assert rows(read_split("MRPC", glue["glue"], "train")) == rows(ours(glue, "mrpc", "train"))
    ax = glue["root"] / "AX"
    ax.mkdir()
    (ax / "AX.tsv").write_bytes((glue["root"] / "glue_data" / "diagnostic" / "diagnostic.tsv").read_bytes())
    assert rows(read_split("ax", str(ax), "test")) == rows(ours(glue, "ax", "test"))
    assert TASKS["sts-b"].labels is None and TASKS["sts-b"].is_regression
    assert TASKS["mnli"].labels == ("contradiction", "entailment", "neutral")
    assert TASKS["qnli"].labels == ("entailment", "not_entailment")


# === Features ===

def _ids(tokenizer):
    """`texts -> (text -> ids)` of one of our tokenizers: one batched call for all texts."""
    return lambda texts: _table(tokenizer, sorted(set(texts)))


def _table(tokenizer, texts):
    ids = tokenizer(texts)
    ids = ids.to_list() if hasattr(ids, "to_list") else ids
    return dict(zip(texts, ([int(i) for i in row] for row in ids))).__getitem__


def _all_examples(glue):
    return {(task, split): ours(glue, task, split) for task in TASKS for split, _ in splits(task)}


def _records(path, canonical=True):
    """The records of a file; `canonical`: each re-serialized deterministically (the originals write the
    feature map in an order that changes from process to process)."""
    import tensorflow as tf

    records = [r.numpy() for r in tf.data.TFRecordDataset(path)]
    if canonical:
        return [tf.train.Example.FromString(r).SerializeToString(deterministic=True) for r in records]
    return records


def _compare(glue, family, tokenizer, style, special, tmp_path):
    """Our records of every task and split == the original's, record for record.

    `tokenizer(texts)` gives the `text -> ids` function for all the texts.
    """
    examples = _all_examples(glue)
    texts = [t for exs in examples.values() for e in exs for t in (e.text_a, e.text_b) if t is not None]
    tokenize = tokenizer(texts)
    total, truncated, pairs, singles = 0, 0, 0, 0
    for (task, split), exs in examples.items():
        theirs = dict(splits(task))[split]
        features = convert_examples_to_features(exs, task, MAX_SEQ_LENGTH, tokenize, style, special)
        path = str(tmp_path / f"{family}-{task}-{split}.tfrecord")
        assert write_features(features, path) == len(exs)
        expected = _records(os.path.join(glue["out"], f"{family}-{task}-{theirs}.tfrecord"))
        got = _records(path)
        assert got == _records(path, canonical=False)  # ours are written deterministically
        assert len(got) == len(expected) == len(exs)
        for i, (a, b) in enumerate(zip(got, expected)):
            assert a == b, (family, task, split, i, exs[i], features[i])
        for e in exs:
            a, b = tokenize(e.text_a), tokenize(e.text_b) if e.text_b else []
            truncated += len(a) + len(b) + (3 if b else 2) > MAX_SEQ_LENGTH
            pairs += bool(b)
            singles += not b
        total += len(got)
    assert total > 200 and truncated > 20 and pairs > 100 and singles > 30
    return examples


def test_bert_features_equal_the_original_records(glue, tmp_path):
    from keras_pretrain.models.bert import BertTokenizer

    tokenizer = BertTokenizer(vocabulary=glue["vocab"], lowercase=True)
    special = {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id, "pad": tokenizer.pad_token_id}
    _compare(glue, "bert", _ids(tokenizer), "bert", special, tmp_path)
    # STS-B is written with float labels (ALBERT's writer; BERT's script has no STS-B).
    parsed = list(feature_dataset(str(tmp_path / "bert-sts-b-dev.tfrecord"), MAX_SEQ_LENGTH,
                                  is_regression=True).as_numpy_iterator())
    assert parsed[1]["label_ids"] == np.float32(0.7)


@pytest.mark.parametrize("lowercase, family", [(False, "albert_spm"), (True, "albert_lower")])
def test_albert_features_equal_the_original_records(glue, tmp_path, lowercase, family):
    """The PyPI copy's processors call `preprocess_text(text, do_lower_case)`, which sets `remove_space`,
    not `lower`: its GLUE text is never lower-cased (its SentencePiece `FullTokenizer` does not either),
    which is `AlbertTokenizer(lowercase=False)`. google-research/albert PR 134 fixed the call
    (`lower=do_lower_case`): those records are `AlbertTokenizer(lowercase=True)`'s."""
    from keras_pretrain.models.albert import AlbertTokenizer

    tokenizer = AlbertTokenizer(proto=glue["albert_model"], lowercase=lowercase)
    special = {"cls": tokenizer.cls_token_id, "sep": tokenizer.sep_token_id, "pad": 0}
    _compare(glue, family, _ids(tokenizer), "bert", special, tmp_path)


def test_xlnet_features_equal_the_original_records(glue, tmp_path):
    """`tokenize` is the original's own (`encode_ids(sp, preprocess_text(text))`, pure Python), so the
    records compare the feature layout alone; `tests/models/xlnet/test_xlnet_tokenizer_fuzz.py` holds our
    `XLNetTokenizer` equal to the same function."""
    import sentencepiece as spm

    from keras_pretrain.models.xlnet import XLNetTokenizer

    prepro = pytest.importorskip("xlnet.prepro_utils")
    processor = spm.SentencePieceProcessor(model_file=glue["xlnet_model"])
    tokenizer = XLNetTokenizer(proto=glue["xlnet_model"])
    special = {"cls": tokenizer.token_id("<cls>"), "sep": tokenizer.token_id("<sep>"), "pad": 0}
    assert (special["cls"], special["sep"]) == (3, 4)  # xlnet data_utils' CLS_ID, SEP_ID
    original = lambda text: prepro.encode_ids(processor, prepro.preprocess_text(text))  # noqa: E731
    _compare(glue, "xlnet", lambda texts: original, "xlnet", special, tmp_path)
    parsed = list(feature_dataset(str(tmp_path / "xlnet-mrpc-train.tfrecord"), MAX_SEQ_LENGTH, "xlnet")
                  .as_numpy_iterator())
    short = parsed[3]  # "中国人说你好，再见。" alone (empty text_b): left-padded, <sep> <cls> last
    assert short["input_mask"].dtype == np.float32 and short["input_mask"][0] == 1.0
    assert list(short["input_ids"][-2:]) == [4, 3] and list(short["segment_ids"][-2:]) == [0, 2]
    assert short["segment_ids"][0] == 4


def test_feature_dataset_and_arrays_round_trip(tmp_path):
    examples = [Example("a", "one two three", "four", "1"), Example("b", "five", None, "0")]
    tokenize = {"one two three": [7, 8, 9], "four": [10], "five": [11]}.__getitem__
    for style in ("bert", "xlnet"):
        features = convert_examples_to_features(examples, "mrpc", 8, tokenize, style, {"cls": 2, "sep": 3})
        path = str(tmp_path / f"{style}.tfrecord")
        write_features(features, path)
        arrays = to_arrays(features)
        parsed = list(feature_dataset(path, 8, style).as_numpy_iterator())
        for name, values in arrays.items():
            np.testing.assert_array_equal(np.stack([p[name] for p in parsed]), values, err_msg=name)
    bert = to_arrays(convert_examples_to_features(examples, "mrpc", 8, tokenize, "bert", {"cls": 2, "sep": 3}))
    np.testing.assert_array_equal(bert["input_ids"], [[2, 7, 8, 9, 3, 10, 3, 0], [2, 11, 3, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(bert["segment_ids"][0], [0, 0, 0, 0, 0, 1, 1, 0])
    np.testing.assert_array_equal(bert["label_ids"], [1, 0])
    assert bert["input_mask"].dtype == np.int32 and arrays["input_mask"].dtype == np.float32
    np.testing.assert_array_equal(arrays["input_ids"], [[0, 7, 8, 9, 3, 10, 3, 2], [0, 0, 0, 0, 0, 11, 3, 2]])
    np.testing.assert_array_equal(arrays["segment_ids"][1], [4, 4, 4, 4, 4, 0, 0, 2])


def _longest_first(tokens_a, tokens_b, max_length):
    """The authors' `_truncate_seq_pair` rule (bert, albert, xlnet): pop from the longer, b on a tie."""
    a, b = list(tokens_a), list(tokens_b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return [a, b]


def test_packing_truncation_keeps_the_tokens_of_the_authors_rule():
    # Our features trim with `packing.truncate` (round-robin); for two segments it keeps the same tokens.
    for n_a in range(31):
        for n_b in range(31):
            a, b = list(range(n_a)), list(range(100, 100 + n_b))
            for budget in range(n_a + n_b + 2):
                assert truncate([a, b], budget) == _longest_first(a, b, budget), (n_a, n_b, budget)
    assert truncate([[1, 2, 3, 4, 5], [6, 7]], 4) == [[1, 2], [6, 7]]
    assert truncate([[1, 2], [3, 4]], 3) == [[1, 2], [3]]  # a tie: the authors pop from b


# === Bad input ===

def _bad(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return str(path)


@pytest.mark.parametrize("task, split, content, line, words", [
    ("mrpc", "train", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\ta\tb\n0\t3\t4\tonly a\n", 3,
     ["4 columns", "at least 5"]),
    ("qnli", "test", "index\tquestion\tsentence\n0\tq\n", 2, ["2 columns", "at least 3"]),
    ("rte", "train", "index\ts1\ts2\tlabel\n0\ta\tb\tentailment\n\n", 3, ["0 columns"]),
    ("rte", "dev", "index\ts1\ts2\tlabel\n0\ta\tb\tcontradiction\n", 2,
     ["'contradiction'", "['entailment', 'not_entailment']"]),
    ("sts-b", "train", "h\n" + "\t".join(["0"] * 7 + ["a", "b", "high"]) + "\n", 2, ["'high'", "not a number"]),
    ("sts-b", "dev", "h\n" + "\t".join(["0"] * 7 + ["a", "b", "nan"]) + "\n", 2, ["'nan'", "not a number"]),
    ("cola", "dev", "gj04\t1\t\tfine\ngj04\t1\t\tnon utf-8 \xff here\n".encode("latin-1"), 2, ["not UTF-8"]),
    ("qqp", "test", "id\tq1\tq2\n0\ta\n", 2, ["2 columns"]),
    ("sst-2", "train", "sentence\tlabel\na\t1\nb\rc\t0\n", 3, ["unreadable row"]),
])
def test_bad_rows_name_the_file_and_line(tmp_path, task, split, content, line, words):
    path = _bad(tmp_path, f"{split}.tsv", content)
    with pytest.raises(CorpusFormatError) as info:
        read_file(task, path, split)
    message = str(info.value)
    assert path in message and f"line {line}" in message, message
    for word in words:
        assert word in message, message


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(CorpusFormatError, match="no such file") as info:
        read_split("rte", str(tmp_path), "train")
    assert str(tmp_path / "train.tsv") in str(info.value)
    path = _bad(tmp_path, "dev.tsv", "index\tsentence1\tsentence2\tlabel\n")
    with pytest.raises(CorpusFormatError, match="no examples") as info:
        read_file("rte", path, "dev")
    assert path in str(info.value)
    with pytest.raises(CorpusFormatError, match="no examples"):
        read_file("cola", _bad(tmp_path, "empty.tsv", ""), "train")
    with pytest.raises(ValueError, match="no split 'dev_matched'"):
        read_split("rte", str(tmp_path), "dev_matched")
    with pytest.raises(ValueError, match="Unknown GLUE task"):
        read_split("squad", str(tmp_path), "train")


def test_quotes_never_swallow_lines(tmp_path):
    path = _bad(tmp_path, "train.tsv", 'sentence\tlabel\n"an open quote\t1\nnext line"\t0\n')
    assert rows(read_file("sst-2", path, "train")) == [
        ["train-1", '"an open quote', None, "1"], ["train-2", 'next line"', None, "0"]]
