"""The families' text preprocessors (keras_pretrain.models.text_preprocessor): one object per family for
fine-tuning inputs, serving graphs and the word level (issue 38, item 1)."""

import json

import numpy as np
import pytest

from keras_pretrain import families
from tests.hub_modules.fixtures import WORDPIECE
from tests.hub_modules.fixtures import build

PARAGRAPH = "The\tcat  sat\u202fon the\u00a0mat.\r\nEnd \u3000 猫坐在 x"


def _preprocessor(name, tmp_path):
    family = families.get(name)
    _, tokenizer, _ = build(name, tmp_path)
    return family.preprocessor_class(family, tokenizer)


@pytest.mark.tf_only
def test_words_are_run_squads_doc_tokens(tmp_path):
    from tests.originals import bert_squad_doc_tokens

    data = {"data": [{"paragraphs": [{"context": PARAGRAPH, "qas": [
        {"id": "q", "question": "?", "answers": [{"text": "cat", "answer_start": 4}]}]}]}]}
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    doc_tokens = bert_squad_doc_tokens(path)[0]
    words = _preprocessor("bert", tmp_path).words(PARAGRAPH)
    assert [w for w, _, _ in words] == doc_tokens
    assert all(PARAGRAPH[start:end] == word for word, start, end in words)


@pytest.mark.parametrize("name", ["bert", "albert", "roberta", "xlnet"])
def test_word_pieces_give_the_tokenizers_ids(name, tmp_path):
    """Pieces word by word equal the tokenizer on the whole text (words separated by single spaces)."""
    preprocessor = _preprocessor(name, tmp_path)
    text = "the cat sat on the mat"
    words = [w for w, _, _ in preprocessor.words(text)]
    pieces = preprocessor.word_piece_ids(words)
    assert len(pieces) == len(words) and all(pieces)
    whole = np.asarray(preprocessor.tokenizer([text])[0]).tolist()
    assert sum(pieces, []) == whole


def test_special_ids_follow_the_packing(tmp_path):
    bert = _preprocessor("bert", tmp_path)
    assert bert.special_ids(with_mask=True) == {"cls": WORDPIECE.index("[CLS]"), "sep": WORDPIECE.index("[SEP]"),
                                                "pad": WORDPIECE.index("[PAD]"), "mask": WORDPIECE.index("[MASK]")}
    xlnet = _preprocessor("xlnet", tmp_path)
    ids = xlnet.special_ids()
    assert ids["cls"] == xlnet.tokenizer.token_to_id("<cls>") and ids["sep"] == xlnet.tokenizer.token_to_id("<sep>")


def test_encode_packs_as_the_family(tmp_path):
    xlnet = _preprocessor("xlnet", tmp_path)
    ids = xlnet.special_ids()
    x = xlnet.encode([["the cat"], ["on the mat"]], 12, (ids["cls"], ids["sep"]))
    assert x["token_ids"][0, -1] == ids["cls"] and x["padding_mask"][0, 0] == 0  # left-padded, <cls> last
    assert x["segment_ids"][0, -1] == 2
    elmo = families.get("elmo").preprocessor_class(families.get("elmo"), None)
    chars = elmo.encode([["the cat"], ["sat"]], 6)["char_ids"]
    assert chars.shape[:2] == (1, 6)  # <S> the cat ||| sat </S>
    with pytest.raises(Exception, match="reads characters"):
        elmo.word_piece_ids(["the"])
