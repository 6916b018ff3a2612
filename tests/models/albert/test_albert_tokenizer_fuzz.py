"""ALBERT tokenizer ids == the original code's on fuzzed text (issue 43).

References, the authors' code itself (PyPI `albert-tensorflow`, the `test` extra):

- v2 (English, SentencePiece): `encode_ids(sp, preprocess_text(text, lower=True))`
  (`tests.originals.albert_reference`), on a tiny SentencePiece model trained here on lower-cased fuzzed
  text and numbers (so it has "<digit>," pieces with and without "\u2581" and the digit-comma re-split
  changes ids), vs `AlbertTokenizer(lowercase=True)`;
- zh-style SentencePiece: a model with full character coverage trained on cased fuzzed text (CJK, Indic,
  Thai, emoji), `lower=False`, vs `AlbertTokenizer(lowercase=False)`;
- zh (the released Chinese models: BERT's WordPiece, `vocab_chinese.txt`): albert's own `BasicTokenizer` +
  `WordpieceTokenizer` (what its `FullTokenizer` runs without a SentencePiece model) on a character
  vocabulary, vs `BertTokenizer(lowercase=True)` (what `convert.load` gives an ALBERT zh release).

Ours is compared on the seeded strings of `tests.fuzz_text` (`FAST_COUNT` here, `FULL_COUNT` under
`-m large`): eagerly (batched and one string), in a `tf.function`, in `tf.data` through `AlbertPreprocessor`
(packing included) and through the exported preprocessor SavedModel (written once per model; in the fast
subset only v2's).

Exact score ties. SentencePiece's Viterbi can find several segmentations of equal score: a long repeated word
("nánáná...", "中中中...") cut into the same pieces in another order. tensorflow-text's SentencePiece (ours)
breaks them as sentencepiece 0.1.99 does (the line the ALBERT releases ran on): against 0.1.99 the full fuzz
set gives 0 differences for both models, on every path. pip sentencepiece 0.2.x breaks some the other way
(measured with 0.2.2 on these two models: 99 and 103 of the 3,200 fuzzed strings, every one such a
permutation); with it, a difference is accepted only when it is one: the same pieces (as a multiset) and
the same text.
"""

import collections

import numpy as np
import pytest

from keras_pretrain.models.albert import AlbertPreprocessor
from keras_pretrain.models.albert import AlbertTokenizer
from keras_pretrain.models.bert import BertTokenizer
from tests.fuzz_text import FAST_COUNT
from tests.fuzz_text import FULL_COUNT
from tests.fuzz_text import SEED
from tests.fuzz_text import assert_digit_comma_pieces
from tests.fuzz_text import assert_sentencepiece_equal as assert_equal
from tests.fuzz_text import describe
from tests.fuzz_text import fuzz_strings
from tests.fuzz_text import sentencepiece_lines
from tests.fuzz_text import sentencepiece_model
from tests.fuzz_text import to_lists
from tests.fuzz_text import with_regressions
from tests.fuzz_text import word_ids_as_lists
from tests.originals import albert_reference

pytestmark = pytest.mark.tf_only  # tokenizers and SavedModels are TF-side code (every backend runs this graph)
tokenization = pytest.importorskip("albert.tokenization")
spm = pytest.importorskip("sentencepiece")

REGRESSIONS = [
    ("U+0085, U+000B, U+001C..U+001F are whitespace", "a\x85b s\x0b2 s\x1c2 s\x1d2 s\x1e2 s\x1f2"),
    ("whitespace runs and ends", "\u3000 a\u2007\u2007b\xa0 "),
    ("Devanagari, Bengali, Thai vowel signs (class 0) kept", "\u0946 \u0915\u093e \u09ac\u09be \u0e01\u0e33"),
    ("U+FE0F kept", "\u2764\ufe0f"),
    ("combining marks removed", "na\u0301i\u0308ve \u0f71 \U0001d165"),
    ("digit-comma re-split", "\u00a33, x9, 9, 10, 2,500, 12,34,5"),
    ("quotes not replaced", "``q'' and ''"),
    ("NUL and controls", "a\x00b\x07c\u200dd"),
    ("literal special tokens are text", "[CLS] [SEP] [MASK] <pad> <unk> <s> </s> <mask>"),
    ("final sigma, lower-casing", "\u03a5\u03a3 \u0130stanbul STRASSE"),
    ("long repeated words (score ties)", "na\u0301" * 90 + " " + "\u4e2d" * 70),
]
MODELS = {  # name: (lowercase, vocabulary size, character coverage)
    "v2": (True, 400, 0.98),
    "zh_style": (False, 1000, 0.9995),
}


def train(lowercase, vocab_size, coverage):
    lines = sentencepiece_lines(SEED + 2, ["the", "hello", "\u4e2d\u56fd", "\u4eba"], 400)
    lines = [tokenization.preprocess_text(line, lower=lowercase) for line in lines]
    return sentencepiece_model(
        [line for line in lines if line], vocab_size=vocab_size, pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        pad_piece="<pad>", unk_piece="<unk>", control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        character_coverage=coverage, max_sentencepiece_length=16, hard_vocab_limit=False,
    )


@pytest.fixture(scope="module", params=sorted(MODELS))
def case(request, tmp_path_factory):
    lowercase, vocab_size, coverage = MODELS[request.param]
    path = tmp_path_factory.mktemp(f"spiece_{request.param}") / "30k-clean.model"
    path.write_bytes(train(lowercase, vocab_size, coverage))
    processor = spm.SentencePieceProcessor(model_file=str(path))
    return request.param, str(path), processor, lowercase, albert_reference(str(path), lowercase)


@pytest.fixture(scope="module")
def exported(case, tmp_path_factory):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the ops of the SavedModel

    from keras_pretrain.export import export_preprocessor

    name, path, _, lowercase, _ = case
    folder = str(tmp_path_factory.mktemp(f"preprocessor_{name}") / "preprocessor")
    export_preprocessor(AlbertTokenizer(path, lowercase=lowercase), folder, seq_length=16)
    return tf.saved_model.load(folder)


def texts_of(count):
    return with_regressions(REGRESSIONS, count)


def paths_of(path, lowercase, texts, exported=None):
    """Our ids of `texts` on every path."""
    import tensorflow as tf

    tokenizer = AlbertTokenizer(path, lowercase=lowercase)
    eager = to_lists(tokenizer(texts))
    paths = {
        "eager": eager,
        "eager, one string": [[int(i) for i in np.asarray(tokenizer(t))] for t in texts[:: max(1, len(texts) // 40)]],
        "tf.function": to_lists(tf.function(lambda x: tokenizer(x))(tf.constant(texts))),
    }
    preprocessor = AlbertPreprocessor(tokenizer, sequence_length=max(map(len, eager)) + 2)
    packed = []
    for batch in tf.data.Dataset.from_tensor_slices(texts).batch(200).map(preprocessor):
        ids, mask = np.asarray(batch["token_ids"]), np.asarray(batch["padding_mask"])
        packed += [[int(i) for i in row[1 : int(m.sum()) - 1]] for row, m in zip(ids, mask)]  # [CLS] A [SEP]
    paths["tf.data + AlbertPreprocessor"] = packed
    if exported is not None:
        paths["exported preprocessor"] = word_ids_as_lists(exported.tokenize(tf.constant(texts)))
    return paths


def check_paths(case, texts, exported=None):
    _, path, processor, lowercase, reference = case
    expected = [reference(t) for t in texts]
    counts = {}
    for name, ids in paths_of(path, lowercase, texts, exported).items():
        sample = expected[:: max(1, len(texts) // 40)] if name == "eager, one string" else expected
        sample_texts = texts[:: max(1, len(texts) // 40)] if name == "eager, one string" else texts
        counts[name] = assert_equal(processor, sample_texts, ids, sample, name)
    return counts


def test_the_fuzz_exercises_the_classes(case):
    name, path, processor, lowercase, reference = case
    assert_digit_comma_pieces(processor)
    texts = texts_of(FAST_COUNT)
    expected = [reference(t) for t in texts]
    plain = [processor.encode(tokenization.preprocess_text(t, lower=lowercase)) for t in texts]
    assert sum(a != b for a, b in zip(plain, expected)) >= 5  # the re-split changes ids
    ids = collections.Counter(i for row in expected for i in row)
    assert ids[processor.unk_id()] > 0
    for low, high in (("\u4e00", "\u9fff"), ("\u0e01", "\u0e5b"), ("\u0900", "\u097f")):  # CJK, Thai, Devanagari
        assert any(low <= c <= high for i in ids for c in processor.id_to_piece(i)), (low, high)
    # A tokenizer without the original's text preprocessing (keras-hub's) differs: the comparison can fail.
    import keras_hub

    bare = keras_hub.models.AlbertTokenizer(proto=path)
    assert sum(a != b for a, b in zip(to_lists(bare(texts)), expected)) > 0.2 * len(texts)


def test_fuzz_equals_the_original(case, request):
    # The SavedModel (3-4 s to write) of the v2 model here, of both under -m large.
    exported = request.getfixturevalue("exported") if case[0] == "v2" else None
    check_paths(case, texts_of(FAST_COUNT), exported)


@pytest.mark.large
def test_full_fuzz_equals_the_original(case, exported):
    counts = check_paths(case, texts_of(FULL_COUNT), exported)
    print(f"{case[0]}, sentencepiece {spm.__version__}: strings differing only by an exact score tie: {counts}")


# --- ALBERT zh: BERT's WordPiece, as albert's tokenization.py runs it --------------------------------


def zh_vocabulary():
    """A character vocabulary (the layout of `vocab_chinese.txt`) learned with albert's `BasicTokenizer`
    from fuzzed text of another seed."""
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    chars = collections.Counter(c for t in fuzz_strings(800, SEED + 1) for w in basic.tokenize(t) for c in w)
    pieces = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"]
    for char, _ in chars.most_common():
        pieces += [char, "##" + char]
    return pieces


def zh_reference(pieces):
    """albert's `FullTokenizer` without a SentencePiece model (its `load_vocab` reads tf.gfile, absent in TF 2:
    the vocabulary dict is built as it builds it, first occurrence of each token)."""
    vocab = collections.OrderedDict()
    for piece in pieces:
        vocab.setdefault(piece.strip().split()[0], len(vocab))
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    wordpiece = tokenization.WordpieceTokenizer(vocab=vocab)
    return lambda text: [vocab[p] for w in basic.tokenize(text) for p in wordpiece.tokenize(w)]


def check_zh(texts, tmp_path):
    import tensorflow as tf

    from tests.originals import write_vocab

    pieces = zh_vocabulary()
    reference = zh_reference(pieces)
    expected = [reference(t) for t in texts]
    assert sum(1 in row for row in expected) > 0.1 * len(texts)  # [UNK]
    tokenizer = BertTokenizer(vocabulary=write_vocab(tmp_path / "vocab_chinese.txt", pieces), lowercase=True)
    for name, ids in {
        "eager": tokenizer(texts),
        "tf.function": tf.function(lambda x: tokenizer(x))(tf.constant(texts)),
    }.items():
        found = [(i, t, a, b) for i, (t, a, b) in enumerate(zip(texts, to_lists(ids), expected)) if a != b]
        assert found == [], f"ALBERT zh {name}: " + describe(found)


def test_zh_wordpiece_equals_the_original(tmp_path):
    check_zh(texts_of(FAST_COUNT), tmp_path)


@pytest.mark.large
def test_zh_wordpiece_equals_the_original_full(tmp_path):
    check_zh(texts_of(FULL_COUNT), tmp_path)
