import numpy as np
import pytest

from keras_pretrain.models.bert import BertPreprocessor
from keras_pretrain.models.bert import BertTokenizer

transformers = pytest.importorskip("transformers")

TEXT = "Hello, the Café's naïve WORLD!! unbelievable 中国人说：你好。 (xyzzy)? résumé  the\tthe Ünïcödé"
PIECES = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cafe", "café", "Café", "hello", "Hello",
    "world", "WORLD", ",", ".", "!", "un", "##believ", "##able", "中", "国", "人", "说", "你", "好",
    "：", "。", "'", "s", "naive", "naïve", "(", ")", "?", "res", "##ume", "ré", "##sumé", "unicode", "Ü", "##n",
]


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(PIECES) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("lowercase", [True, False])
def test_ids_equal_transformers(vocab_file, lowercase):
    ours = BertTokenizer(vocabulary=vocab_file, lowercase=lowercase)
    reference = transformers.BertTokenizer(vocab_file, do_lower_case=lowercase)
    expected = reference(TEXT, add_special_tokens=False)["input_ids"]
    assert [int(i) for i in np.asarray(ours(TEXT))] == expected
    assert len(set(expected)) > 15  # the text really exercises the vocabulary


def test_pair_packing_truncates_longer_segment(vocab_file):
    tokenizer = BertTokenizer(vocabulary=vocab_file, lowercase=True)
    preprocessor = BertPreprocessor(tokenizer, sequence_length=12)
    # keras-hub reads a bare 2-tuple as (x, y); `y=None` marks it as a pair.
    out = preprocessor((["the the the the the the the the", "hello"], ["world , world", "cafe"]), y=None)
    ids = np.asarray(out["token_ids"])
    segments = np.asarray(out["segment_ids"])
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    the, world = tokenizer.token_to_id("the"), tokenizer.token_to_id("world")
    # Row 0: [CLS] the*7 [SEP] world , world [SEP] would be 14; the longer side is cut.
    assert ids[0].tolist() == [cls] + [the] * 6 + [sep, world, 13, world, sep]
    assert segments[0].tolist() == [0] * 8 + [1] * 4
    assert np.asarray(out["padding_mask"])[1].sum() == 5
