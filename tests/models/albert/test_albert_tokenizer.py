"""Tokenizer ids equal `transformers`' ALBERT tokenizer on the same SentencePiece model."""

import os
import shutil

import numpy as np
import pytest

from keras_pretrain.models.albert import AlbertTokenizer
from keras_pretrain.models.albert.albert_convert import find_tokenizer
from keras_pretrain.models.bert import BertTokenizer
from tests.models.albert.fixtures import ZH_VOCAB
from tests.models.albert.fixtures import train_sentencepiece

transformers = pytest.importorskip("transformers")

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT is a LITE Bert; Café naïve résumé!",
    "``Quoted'' text   with  extra   spaces and numbers 12 345",
    "Sentence order prediction",
]


@pytest.fixture(scope="module")
def spiece(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spiece")
    path = str(folder / "30k-clean.model")
    train_sentencepiece(path)
    shutil.copy(path, folder / "spiece.model")
    return str(folder)


def to_lists(ragged):
    rows = ragged.to_list() if hasattr(ragged, "to_list") else ragged
    return [list(map(int, row)) for row in rows]


def test_ids_equal_transformers(spiece):
    reference = transformers.AlbertTokenizer.from_pretrained(spiece)
    ours = AlbertTokenizer(os.path.join(spiece, "30k-clean.model"))
    expected = reference(TEXTS, add_special_tokens=False)["input_ids"]
    assert to_lists(ours(TEXTS)) == expected
    # Special ids of the published vocabulary.
    assert (ours.pad_token_id, ours.token_to_id("<unk>"), ours.cls_token_id, ours.sep_token_id,
            ours.mask_token_id) == (0, 1, 2, 3, 4)
    assert [reference.convert_tokens_to_ids(t) for t in ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]] == [0, 1, 2, 3, 4]


def test_in_graph_and_loader_finds_it(spiece):
    import tensorflow as tf

    tokenizer = find_tokenizer(spiece)
    assert isinstance(tokenizer, AlbertTokenizer)
    graph = tf.function(lambda x: tokenizer(x).to_tensor())(tf.constant(TEXTS[:2]))
    eager = to_lists(tokenizer(TEXTS[:2]))
    assert [row[: len(e)] for row, e in zip(np.asarray(graph).tolist(), eager)] == eager


def test_zh_wordpiece(tmp_path):
    path = tmp_path / "vocab_chinese.txt"
    path.write_text("\n".join(ZH_VOCAB) + "\n", encoding="utf-8")
    tokenizer = find_tokenizer(str(tmp_path))
    assert isinstance(tokenizer, BertTokenizer)
    ids = to_lists(tokenizer(["我是中国人，hello"]))[0]
    expected = [ZH_VOCAB.index(t) for t in ["我", "是", "中", "国", "人", "，", "hello"]]
    assert ids == expected
    assert (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id) == (2, 3, 0)


@pytest.mark.parametrize("family", ["albert", "xlnet"])
def test_tokenizes_after_the_global_seed_is_set(spiece, family):
    # `keras.utils.set_random_seed` sets TensorFlow's seed, which eagerly drops tensorflow-text's
    # SentencePiece resource: the next eager call failed with NotFoundError (both SentencePiece families
    # share the fix, keras_pretrain.models.sentencepiece_text.ReloadsSentencePiece).
    import keras

    from keras_pretrain.models.xlnet import XLNetTokenizer

    cls = {"albert": AlbertTokenizer, "xlnet": XLNetTokenizer}[family]
    tokenizer = cls(os.path.join(spiece, "spiece.model"))
    before = to_lists(tokenizer(TEXTS))
    keras.utils.set_random_seed(3)
    ids = tokenizer(TEXTS)
    assert to_lists(ids) == before
    keras.utils.set_random_seed(4)
    assert tokenizer.detokenize(ids) == tokenizer.detokenize(tokenizer(TEXTS))
