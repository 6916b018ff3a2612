"""BertTokenizer ids == Google's `FullTokenizer` on fuzzed text (issue 43).

The reference is bert-tensorflow's `tokenization.FullTokenizer` itself (the `test` extra,
`tests.originals.bert_reference`). The vocabularies are learned here, with the reference's own
`BasicTokenizer`, from fuzzed text of another seed than the strings compared (so some characters of those are
unknown): an uncased one (lower-cased words, their 3-character stems and `##` rests, every character alone
and as a `##` piece), a cased one built the same way without lower-casing, and a Chinese-style one (every
character, CJK ideographs included, alone and as `##`, no words: the layout of Google's Chinese vocabulary).

Ours is compared on the seeded strings of `tests.fuzz_text` (`FAST_COUNT` here, `FULL_COUNT` under
`-m large`) on every path a user reaches: an eager call (batched and one string), a `tf.function`, a
`tf.data` pipeline through `BertPreprocessor` (packing included) and the exported preprocessor SavedModel
(`tokenize` and the packed default signature), each SavedModel written once per vocabulary (in the fast
subset only the uncased one's).
`REGRESSIONS` holds a minimal example of each class the issue-43 fuzz found in any family's tokenizer;
for BERT it found none (0 of 3,200 for each vocabulary and path), and this test keeps it at 0.
"""

import collections

import numpy as np
import pytest

from keras_pretrain.models.bert import BertPreprocessor
from keras_pretrain.models.bert import BertTokenizer
from tests.fuzz_text import FAST_COUNT
from tests.fuzz_text import FULL_COUNT
from tests.fuzz_text import SEED
from tests.fuzz_text import describe
from tests.fuzz_text import fuzz_strings
from tests.fuzz_text import to_lists
from tests.fuzz_text import with_regressions
from tests.originals import SPECIALS
from tests.originals import bert_reference
from tests.originals import write_vocab

pytestmark = pytest.mark.tf_only  # tokenizers and SavedModels are TF-side code (every backend runs this graph)
tokenization = pytest.importorskip("bert.tokenization")

REGRESSIONS = [
    ("U+0085 (whitespace for Python, Cc for BERT: deleted)", "a\x85b"),
    ("U+000B and U+001C..U+001F", "s\x0b2 s\x1c2 s\x1d2 s\x1e2 s\x1f2"),
    ("Unicode spaces", "a\u3000b\xa0c\u2007d\u2028e\u2029f\u202fg"),
    ("NUL inside and before words", "hel\x00lo \x00World"),
    ("format characters", "a\u200bb\u200dc\ufeffd\u2060e\u202ef"),
    ("spacing and combining marks", "\u0946 \u0915\u093e \u0e01\u0e33 \u2764\ufe0f na\u0301i\u0308ve"),
    ("digit comma", "\u00a33, 1,000 12,34,5"),
    ("literal special tokens are text", "[CLS] [SEP] [MASK] [UNK] [PAD] <s> </s> <mask>"),
    ("final sigma", "\u03a5\u03a3 \u039f\u0394\u039f\u03a3"),
    ("private use and unassigned", "\ue000 \U000f0000 \u0378 \u2fff"),
    ("200 and 201 characters", "a" * 200 + " " + "b" * 201),
    ("long multi-byte word", "\u0e01" * 150),
    ("CJK compatibility and astral ideographs", "\uf900\U00020000\U0002a6df"),
]
SEQUENCE_LENGTH = 128  # the exported preprocessor's packed length


def learned_vocabulary(lowercase, words=True, count=800):
    """Pieces from fuzzed text of another seed, split by the reference's `BasicTokenizer`."""
    from absl import flags

    if not flags.FLAGS.is_parsed():  # `preserve_unused_tokens` (default False) is read
        flags.FLAGS.mark_as_parsed()
    basic = tokenization.BasicTokenizer(do_lower_case=lowercase)
    counts = collections.Counter()
    for text in fuzz_strings(count, SEED + 1):
        counts.update(basic.tokenize(text))
    ranked = [w for w, _ in counts.most_common() if len(w) <= 200 and len(w.encode("utf-8")) <= 200]
    pieces, seen = [], set()

    def add(piece):
        if piece not in seen:
            seen.add(piece)
            pieces.append(piece)

    for piece in SPECIALS:
        add(piece)
    if words:
        for word in ranked[:600]:
            add(word)
            if len(word) > 4:
                add(word[:3])
                add("##" + word[3:])
    for word in ranked:
        for char in word:
            add(char)
            add("##" + char)
    return pieces


VOCABULARIES = {
    "uncased": (lambda: learned_vocabulary(True), True),
    "cased": (lambda: learned_vocabulary(False), False),
    "chinese": (lambda: learned_vocabulary(True, words=False), True),
}


@pytest.fixture(scope="module", params=sorted(VOCABULARIES))
def case(request, tmp_path_factory):
    make, lowercase = VOCABULARIES[request.param]
    pieces = make()
    path = write_vocab(tmp_path_factory.mktemp(f"vocab_{request.param}") / "vocab.txt", pieces)
    return request.param, path, pieces, lowercase, bert_reference(path, lowercase)


@pytest.fixture(scope="module")
def exported(case, tmp_path_factory):
    """The preprocessor SavedModel of `case`'s tokenizer, written once per vocabulary."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the ops of the SavedModel

    from keras_pretrain.export import export_preprocessor

    name, path, _, lowercase, _ = case
    folder = str(tmp_path_factory.mktemp(f"preprocessor_{name}") / "preprocessor")
    export_preprocessor(BertTokenizer(vocabulary=path, lowercase=lowercase), folder, seq_length=SEQUENCE_LENGTH)
    return tf.saved_model.load(folder)


def texts_of(count):
    return with_regressions(REGRESSIONS, count)


def diffs(got, expected, texts):
    return [(i, t, g, e) for i, (t, g, e) in enumerate(zip(texts, to_lists(got), expected)) if g != e]


def check_paths(case, texts, exported=None):
    import tensorflow as tf

    _, path, _, lowercase, reference = case
    expected = [reference(text) for text in texts]
    tokenizer = BertTokenizer(vocabulary=path, lowercase=lowercase)
    found = diffs(tokenizer(texts), expected, texts)
    assert found == [], "eager: " + describe(found)
    for text, ids in list(zip(texts, expected))[:: max(1, len(texts) // 40)]:  # one string: dense ids
        assert [int(i) for i in np.asarray(tokenizer(text))] == ids, repr(text)
    found = diffs(tf.function(lambda x: tokenizer(x))(tf.constant(texts)), expected, texts)
    assert found == [], "tf.function: " + describe(found)
    # BertPreprocessor in tf.data: [CLS] ids [SEP], nothing truncated.
    preprocessor = BertPreprocessor(tokenizer, sequence_length=max(map(len, expected)) + 2)
    batch = next(iter(tf.data.Dataset.from_tensor_slices(texts).batch(len(texts)).map(preprocessor)))
    ids, mask = np.asarray(batch["token_ids"]), np.asarray(batch["padding_mask"])
    found = diffs([row[1 : int(m.sum()) - 1] for row, m in zip(ids, mask)], expected, texts)
    assert found == [], "BertPreprocessor in tf.data: " + describe(found)
    if exported is None:
        return
    words = exported.tokenize(tf.constant(texts))
    found = diffs(words.merge_dims(1, -1), expected, texts)
    assert found == [], "exported tokenize: " + describe(found)
    packed = exported.signatures["serving_default"](text=tf.constant(texts))
    ids, mask = packed["input_word_ids"].numpy(), packed["input_mask"].numpy()
    fits = [i for i, e in enumerate(expected) if len(e) + 2 <= SEQUENCE_LENGTH]
    assert len(fits) > 0.9 * len(texts)
    found = diffs([ids[i, 1 : int(mask[i].sum()) - 1] for i in fits], [expected[i] for i in fits],
                  [texts[i] for i in fits])
    assert found == [], "exported serving_default: " + describe(found)


def test_fuzz_exercises_the_tokenizer(case):
    """The fuzz set reaches [UNK], multi-piece words and the 200-character limit, and a tokenizer without
    BERT's own text cleaning (keras-hub's) differs from the reference on it: the comparison can fail."""
    import keras_hub

    name, path, pieces, lowercase, reference = case
    texts = texts_of(FAST_COUNT)
    expected = [reference(text) for text in texts]
    unk = pieces.index("[UNK]")
    assert sum(unk in ids for ids in expected) > 0.1 * len(texts)
    assert sum(pieces[i].startswith("##") for ids in expected for i in ids) > 500
    assert len({i for ids in expected for i in ids}) >= 50  # many distinct pieces, not a few
    plain = keras_hub.models.BertTokenizer(vocabulary=path, lowercase=lowercase)
    assert len(diffs(plain(texts), expected, texts)) > 0.1 * len(texts)


def test_fuzz_equals_full_tokenizer(case, request):
    # The SavedModel (4-5 s to write) of one vocabulary here, of all three under -m large.
    exported = request.getfixturevalue("exported") if case[0] == "uncased" else None
    check_paths(case, texts_of(FAST_COUNT), exported)


@pytest.mark.large
def test_fuzz_equals_full_tokenizer_full(case, exported):
    check_paths(case, texts_of(FULL_COUNT), exported)
