"""Vocabulary tokens over 256 UTF-8 bytes (issue 43, item 4): tensorflow-text's WordPiece tokenizer cannot hold
them, so loading one is a clear error naming the file, the token and the limit, and the vocabulary learner
never writes one."""

import pytest

from keras_pretrain.errors import ConfigError

pytestmark = pytest.mark.tf_only

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def test_loading_a_long_token_names_the_file_the_token_and_the_limit(tmp_path):
    from keras_pretrain.models.bert import BertTokenizer

    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(SPECIALS + ["ok", "##" + "漢" * 86]) + "\n", encoding="utf-8")  # 258 bytes
    with pytest.raises(ConfigError, match="258 UTF-8 bytes") as info:
        BertTokenizer(vocabulary=str(path), lowercase=True)
    assert str(path) in str(info.value) and "256" in str(info.value) and "漢漢漢" in str(info.value)
    path.write_text("\n".join(SPECIALS + ["ok", "##" + "漢" * 85]) + "\n", encoding="utf-8")  # 255 bytes: loads
    ids = BertTokenizer(vocabulary=str(path), lowercase=True)(["ok"])
    assert [[int(i) for i in row] for row in (ids.to_list() if hasattr(ids, "to_list") else ids)] == [[5]]


def test_the_learner_leaves_long_tokens_out(tmp_path, monkeypatch, capsys):
    import keras_hub

    from keras_pretrain.models.bert import BertTokenizer
    from keras_pretrain.models.bert.bert_tokenizer import overlong_tokens
    from keras_pretrain.pretraining import masked_lm

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\n", encoding="utf-8")
    learned = SPECIALS + ["a", "b", "x" * 257, "##" + "y" * 300, "c"]  # as a learner on unbroken words might
    monkeypatch.setattr(keras_hub.tokenizers, "compute_word_piece_vocabulary", lambda *a, **k: list(learned))
    path = masked_lm.learn_vocabulary([str(corpus)], 10, True, str(tmp_path))
    tokens = open(path, encoding="utf-8").read().split()
    assert tokens == SPECIALS + ["a", "b", "c"] and not overlong_tokens(tokens)
    assert "2 token(s) over 256 UTF-8 bytes left out" in capsys.readouterr().out
    BertTokenizer(vocabulary=path, lowercase=True)  # loads
