"""BertTokenizer ids == Google's original `FullTokenizer` on tricky text.

The reference is the original code itself (`bert-tensorflow`, the `test`
extra), run here on tiny vocabularies: uncased English (with the `<S>`,
`<T>`, `[unused0]` entries of Google's vocabularies), cased English and
Chinese. Eager calls, `tf.function`, `BertPreprocessor` in `tf.data` and the
exported preprocessor SavedModel are each compared with it.
"""

import numpy as np
import pytest

from keras_pretrain.models.bert import BertPreprocessor
from keras_pretrain.models.bert import BertTokenizer
from tests.originals import CASED_VOCAB
from tests.originals import CHINESE_VOCAB
from tests.originals import THAI_WORD
from tests.originals import TRICKY_TEXTS
from tests.originals import UNCASED_VOCAB
from tests.originals import bert_reference
from tests.originals import write_vocab

pytestmark = pytest.mark.tf_only  # tokenizers are TF-side code
pytest.importorskip("bert.tokenization")

VOCABS = {"uncased": (UNCASED_VOCAB, True), "cased": (CASED_VOCAB, False), "chinese": (CHINESE_VOCAB, True)}
TEXTS = [text for _, text in TRICKY_TEXTS]


@pytest.fixture(scope="module", params=sorted(VOCABS))
def case(request, tmp_path_factory):
    pieces, lowercase = VOCABS[request.param]
    path = write_vocab(tmp_path_factory.mktemp("vocab") / "vocab.txt", pieces)
    expected = [bert_reference(path, lowercase)(text) for text in TEXTS]
    return request.param, path, lowercase, expected


def to_lists(ids):
    rows = ids if hasattr(ids, "to_list") else ids
    return [[int(i) for i in row] for row in rows]


def mismatches(got, expected):
    got = to_lists(got)
    return [(name, e, g) for (name, _), e, g in zip(TRICKY_TEXTS, expected, got) if list(g) != e]


def test_references_exercise_the_cases(case):
    name, path, lowercase, expected = case
    by_name = dict(zip([n for n, _ in TRICKY_TEXTS], expected))
    vocab = UNCASED_VOCAB if name == "uncased" else CASED_VOCAB if name == "cased" else CHINESE_VOCAB
    unk, the = vocab.index("[UNK]"), vocab.index("the")
    assert by_name["201-character word"] == [unk, the]  # 200 characters is the limit
    assert len(by_name["200-character word"]) == 201 and unk not in by_name["200-character word"]
    assert len(by_name["150-character word"]) == 150  # > 100 bytes, still split
    assert by_name["40-character Thai word"] == [vocab.index(THAI_WORD)]  # 120 bytes
    assert unk not in by_name["NUL in a word"] + by_name["bell"] + by_name["zero-width space"]
    assert by_name["full-width punctuation"][2] == vocab.index("：")
    if name != "cased":  # "Hello" is lower-cased, not [UNK]
        assert unk not in by_name["no-break space"] + by_name["ideographic space"]
    assert len({i for ids in expected for i in ids}) > 25


def test_eager_equals_full_tokenizer(case):
    _, path, lowercase, expected = case
    tokenizer = BertTokenizer(vocabulary=path, lowercase=lowercase)
    assert mismatches(tokenizer(TEXTS), expected) == []
    for text, ids in zip(TEXTS[:6], expected):  # unbatched: dense ids
        assert [int(i) for i in np.asarray(tokenizer(text))] == ids


def test_in_graph_equals_full_tokenizer(case):
    import tensorflow as tf

    _, path, lowercase, expected = case
    tokenizer = BertTokenizer(vocabulary=path, lowercase=lowercase)
    graph = tf.function(lambda x: tokenizer(x))(tf.constant(TEXTS))
    assert mismatches(graph, expected) == []
    # BertPreprocessor in tf.data: [CLS] ids [SEP], padded.
    preprocessor = BertPreprocessor(tokenizer, sequence_length=256)
    data = tf.data.Dataset.from_tensor_slices(TEXTS).batch(len(TEXTS)).map(preprocessor)
    batch = next(iter(data))
    ids, mask = np.asarray(batch["token_ids"]), np.asarray(batch["padding_mask"])
    rows = [row[1 : int(m.sum()) - 1].tolist() for row, m in zip(ids, mask)]
    assert mismatches(rows, expected) == []


@pytest.mark.tf_only  # a SavedModel export: runs once, in the TensorFlow run
def test_exported_preprocessor_equals_full_tokenizer(case, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the ops of the SavedModel

    from keras_pretrain.export import export_preprocessor

    _, path, lowercase, expected = case
    tokenizer = BertTokenizer(vocabulary=path, lowercase=lowercase)
    export_preprocessor(tokenizer, str(tmp_path / "preprocessor"), seq_length=256)
    loaded = tf.saved_model.load(str(tmp_path / "preprocessor"))
    ids = loaded.tokenize(tf.constant(TEXTS))
    ids = ids.merge_dims(1, -1) if ids.ragged_rank > 1 else ids
    assert mismatches(ids, expected) == []
