"""AlbertTokenizer ids == the original `encode_ids(sp, preprocess_text(text, lower))`.

The reference is google-research/albert's `tokenization.py` itself (PyPI
`albert-tensorflow`, the `test` extra; its `preprocess_text`, `encode_pieces`
and `printable_text` are the same as upstream's, see tests/originals.py), on a
tiny SentencePiece model trained here on text full of numbers, so that it has
"<digit>," pieces with and without "▁" and the digit-comma re-split changes
ids (checked below: the test fails without the re-split).
"""

import io

import numpy as np
import pytest

from keras_pretrain.models.albert import AlbertPreprocessor
from keras_pretrain.models.albert import AlbertTokenizer
from tests.originals import TRICKY_TEXTS
from tests.originals import albert_reference

pytestmark = pytest.mark.tf_only  # tokenizers are TF-side code
tokenization = pytest.importorskip("albert.tokenization")

NUMBERS = ["1,000,000", "9,", "10,", "19,", "2,500,", "99,", "9,999,", "Year 2019,", "x9,", "300,000,"]
WORDS = ["the", "quick", "brown", "fox", "numbers", "and", "Café", "naïve", "résumé", "quoted", "text"]
ALBERT_TEXTS = TRICKY_TEXTS + [
    ("numbers with commas", "1,000,000 people, 9, 10, 2,500, and 19,999, more"),
    ("digit-comma inside words", "x9, a300,000, 12,34,"),
    ("quotes not changed", "``quoted'' text and \"plain\" quotes"),
    ("extra spaces", "  the   quick\t\tbrown \u3000fox\u00a0 "),
    ("full-width digits", "９，０００， and ²,"),
    ("upper case", "THE QUICK Brown FOX, Year 2019,"),
]
TEXTS = [text for _, text in ALBERT_TEXTS]


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    import random

    import sentencepiece as spm

    rng = random.Random(0)
    lines = [" ".join(rng.choice(NUMBERS + WORDS) for _ in range(10)) for _ in range(400)]
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=buffer, vocab_size=120, model_type="unigram",
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>", unk_piece="<unk>",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], hard_vocab_limit=False, minloglevel=2,
    )
    path = tmp_path_factory.mktemp("spiece") / "30k-clean.model"
    path.write_bytes(buffer.getvalue())
    return str(path)


def to_lists(ids):
    rows = ids.to_list() if hasattr(ids, "to_list") else ids
    return [[int(i) for i in row] for row in rows]


def mismatches(got, expected):
    return [(n, e, g) for (n, _), e, g in zip(ALBERT_TEXTS, expected, to_lists(got)) if g != e]


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def case(request, model_file):
    reference = albert_reference(model_file, request.param)
    return request.param, [reference(text) for text in TEXTS]


def test_references_exercise_the_resplit(model_file, case):
    import sentencepiece as spm

    lower, expected = case
    processor = spm.SentencePieceProcessor(model_file=model_file)
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    assert any(p[-2:-1].isdigit() and p.endswith(",") and p.startswith("\u2581") for p in pieces)
    assert any(p[-2:-1].isdigit() and p.endswith(",") and not p.startswith("\u2581") for p in pieces)
    plain = [processor.encode(tokenization.preprocess_text(t, lower=lower)) for t in TEXTS]
    changed = [n for (n, _), p, e in zip(ALBERT_TEXTS, plain, expected) if p != e]
    assert {"numbers with commas", "digit-comma inside words"} <= set(changed)


@pytest.mark.parametrize("lower", [True, False])
def test_preprocess_text_equals_the_original(lower):
    from keras_pretrain.models.albert.albert_tokenizer import preprocess_text

    ours = [t.decode("utf-8") for t in preprocess_text(TEXTS, lowercase=lower).numpy()]
    expected = [tokenization.preprocess_text(t, lower=lower) for t in TEXTS]
    assert [(n, e, o) for (n, _), e, o in zip(ALBERT_TEXTS, expected, ours) if e != o] == []
    assert "``quoted'' text" in expected[TEXTS.index("``quoted'' text and \"plain\" quotes")]


def test_eager_and_in_graph_equal_the_original(model_file, case):
    import tensorflow as tf

    lower, expected = case
    tokenizer = AlbertTokenizer(model_file, lowercase=lower)
    assert mismatches(tokenizer(TEXTS), expected) == []
    assert [int(i) for i in np.asarray(tokenizer(TEXTS[-6]))] == expected[-6]  # unbatched
    graph = tf.function(lambda x: tokenizer(x))(tf.constant(TEXTS))
    assert mismatches(graph, expected) == []
    preprocessor = AlbertPreprocessor(tokenizer, sequence_length=max(map(len, expected)) + 2)
    batch = next(iter(tf.data.Dataset.from_tensor_slices(TEXTS).batch(len(TEXTS)).map(preprocessor)))
    ids, mask = np.asarray(batch["token_ids"]), np.asarray(batch["padding_mask"])
    assert mismatches([r[1 : int(m.sum()) - 1] for r, m in zip(ids, mask)], expected) == []


@pytest.mark.tf_only  # a SavedModel export: runs once, in the TensorFlow run
def test_exported_preprocessor_equals_the_original(model_file, case, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 - registers the ops of the SavedModel

    from keras_pretrain.export import export_preprocessor

    lower, expected = case
    export_preprocessor(AlbertTokenizer(model_file, lowercase=lower), str(tmp_path / "p"), seq_length=128)
    ids = tf.saved_model.load(str(tmp_path / "p")).tokenize(tf.constant(TEXTS))
    ids = ids.merge_dims(1, -1) if ids.ragged_rank > 1 else ids
    assert mismatches(ids, expected) == []
