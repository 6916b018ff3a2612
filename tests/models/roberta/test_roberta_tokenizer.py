"""Byte-level BPE ids equal `transformers`' RoBERTa tokenizer (tiny vocab + merges)."""

import os

import numpy as np
import pytest

from keras_pretrain.models.roberta import RobertaTokenizer
from tests.models.roberta.fixtures import TEXTS
from tests.models.roberta.fixtures import write_bpe_files

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_bpe_files(tmp_path_factory.mktemp("bpe"))


@pytest.mark.tf_only
def test_ids_equal_transformers(files):
    vocab, merges = files
    reference = transformers.RobertaTokenizer.from_pretrained(os.path.dirname(vocab))
    ours = RobertaTokenizer(vocabulary=vocab, merges=merges)
    for text in TEXTS:
        expected = reference(text, add_special_tokens=False)["input_ids"]
        got = np.asarray(ours(text)).tolist()
        assert got == expected, text
    # Merged pieces are used (the test vocabulary is not just bytes).
    assert len(np.asarray(ours("Hello world"))) == 2
    assert ours.cls_token == "<s>" and ours.sep_token == "</s>" and ours.mask_token == "<mask>"
    assert ours.token_to_id("<mask>") == reference.mask_token_id
