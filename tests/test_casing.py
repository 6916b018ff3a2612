"""Casing comes from the checkpoint (issue 18, item 2): each rule, and the overrides."""

import json
import os

import pytest

from keras_pretrain import casing
from keras_pretrain.errors import ConfigError

pytestmark = pytest.mark.tf_only  # tokenizers are TF-side code

# Google's uncased and Chinese vocabularies hold these entries.
UNCASED = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>",
           "hello", "world", "中", "，"]
CASED = UNCASED + ["Hello"]


def write(folder, name, lines):
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def ids(tokenizer, text):
    out = tokenizer([text])[0]
    return [int(i) for i in out]


def test_guess_ignores_bracketed_and_angle_bracketed_specials(tmp_path):
    assert casing.guess_lowercase(write(tmp_path, "a.txt", UNCASED))
    assert not casing.guess_lowercase(write(tmp_path, "b.txt", CASED))


@pytest.mark.parametrize("name, expected", [
    ("uncased_L-12_H-768_A-12", True), ("cased_L-12_H-768_A-12", False), ("multi_cased_L-12_H-768_A-12", False),
    ("chinese_L-12_H-768_A-12", True), ("multilingual_L-12_H-768_A-12", True), ("albert_base_zh.tar.gz", True),
    ("bert-base-uncased", True), ("bert-base-cased", False), ("my_model", None),
])
def test_release_names(tmp_path, name, expected):
    assert casing.lowercase_from_names(str(tmp_path / name))[0] is expected
    # Only the last part of a path is read.
    assert casing.lowercase_from_names(str(tmp_path / "cased_runs" / "my_model"))[0] is None


def test_order_override_stated_name_vocabulary_default(tmp_path, capsys):
    vocab = write(tmp_path / "cased_L-2", "vocab.txt", UNCASED)
    choose = casing.choose_lowercase
    assert choose(vocab, lowercase=True, stated=False, names=(tmp_path / "cased_L-2",)) is True
    assert "given by the caller" in capsys.readouterr().err
    assert choose(vocab, stated=True, stated_by="tokenizer_config.json", names=(tmp_path / "cased_L-2",)) is True
    assert "do_lower_case=True in tokenizer_config.json" in capsys.readouterr().err
    assert choose(vocab, names=(str(tmp_path / "cased_L-2"),), vocab=vocab) is False
    assert "release name 'cased_L-2'" in capsys.readouterr().err
    assert choose(vocab, names=(str(tmp_path / "x"),), vocab=vocab) is True
    err = capsys.readouterr().err
    assert "uncased" in err and "guessed" in err and "--no-lowercase" in err
    assert choose(vocab, default=False) is False
    assert "published default" in capsys.readouterr().err


def test_hf_bert_folder(tmp_path, capsys):
    from keras_pretrain.models.bert.bert_convert import hf_tokenizer

    folder = str(tmp_path / "model")
    write(folder, "vocab.txt", UNCASED)
    tokenizer = hf_tokenizer(folder)  # no tokenizer_config.json: guessed, specials ignored
    assert ids(tokenizer, "Hello") == [UNCASED.index("hello")]
    assert "guessed" in capsys.readouterr().err
    write(folder, "tokenizer_config.json", [json.dumps({"do_lower_case": False})])
    assert ids(hf_tokenizer(folder), "Hello") == [UNCASED.index("[UNK]")]  # as stated
    assert ids(hf_tokenizer(folder, lowercase=True), "Hello") == [UNCASED.index("hello")]


def test_google_tf1_bert_uncased_vocabulary_with_specials(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    from keras_pretrain import convert
    from tests.models.bert.test_bert_parity import VOCAB
    from tests.models.bert.test_bert_parity import hf_config
    from tests.models.bert.test_bert_parity import write_google_bert

    folder = str(tmp_path / "my_bert")  # no release name: the vocabulary decides
    write_google_bert(transformers.BertForPreTraining(hf_config()), folder)
    vocab = UNCASED + [f"w{i}" for i in range(len(VOCAB) - len(UNCASED))]
    write(folder, "vocab.txt", vocab)
    _, tokenizer = convert.from_tf1_checkpoint(folder)
    assert ids(tokenizer, "Hello World") == [vocab.index("hello"), vocab.index("world")]
    assert "uncased" in capsys.readouterr().err
    _, tokenizer = convert.from_tf1_checkpoint(folder, lowercase=False)
    assert ids(tokenizer, "Hello") == [vocab.index("[UNK]")]
    renamed = str(tmp_path / "cased_L-2_H-32_A-4")
    os.rename(folder, renamed)
    _, tokenizer = convert.from_tf1_checkpoint(renamed)
    assert ids(tokenizer, "Hello") == [vocab.index("[UNK]")]
    assert "release name 'cased_L-2_H-32_A-4'" in capsys.readouterr().err


def test_albert_zh_is_uncased(tmp_path, capsys):
    from keras_pretrain.models.albert.albert_convert import find_tokenizer

    folder = str(tmp_path / "albert_base")
    write(folder, "vocab_chinese.txt", CASED)  # even with an upper-case entry
    assert ids(find_tokenizer(folder), "Hello") == [CASED.index("hello")]
    assert "ALBERT" in capsys.readouterr().err
    assert ids(find_tokenizer(folder, lowercase=False), "Hello") == [CASED.index("Hello")]
    assert ids(find_tokenizer(folder, source=str(tmp_path / "cased_albert.tar.gz")), "Hello") == [CASED.index("Hello")]


def test_albert_sentencepiece_default_and_override(tmp_path):
    from keras_pretrain.models.albert.albert_convert import find_tokenizer
    from tests.models.albert.fixtures import train_sentencepiece

    train_sentencepiece(str(tmp_path / "30k-clean.model"))
    assert find_tokenizer(str(tmp_path)).lowercase is True
    assert find_tokenizer(str(tmp_path), lowercase=False).lowercase is False


def test_from_huggingface_lowercase_on_bpe_is_refused(tmp_path):
    from keras_pretrain.convert import from_huggingface

    write(tmp_path, "config.json", [json.dumps({"model_type": "roberta"})])
    with pytest.raises(ConfigError, match="does not apply to roberta"):
        from_huggingface(str(tmp_path), lowercase=True)


def test_with_lowercase_rebuilds_the_tokenizer(tmp_path):
    from keras_pretrain.models.bert import BertTokenizer

    vocab = write(tmp_path, "vocab.txt", CASED)
    cased = BertTokenizer(vocabulary=vocab, lowercase=False)
    assert casing.with_lowercase(cased, None) is cased
    uncased = casing.with_lowercase(cased, True)
    assert ids(cased, "Hello") == [CASED.index("Hello")]
    assert ids(uncased, "Hello") == [CASED.index("hello")]


@pytest.mark.parametrize("module", ["finetune", "fill_mask", "albert_to_savedmodel"])
def test_recipes_have_lowercase_flags(module):
    import importlib

    recipe = importlib.import_module(f"recipes.{module}")
    parser = recipe.build_parser()
    required = {"finetune": ["--from", "x"], "fill_mask": ["--from", "x", "a [MASK]"],
                "albert_to_savedmodel": ["--tarball", "x", "--out", "y"]}[module]
    assert parser.parse_args(required).lowercase is None
    assert parser.parse_args(required + ["--lowercase"]).lowercase is True
    assert parser.parse_args(required + ["--no-lowercase"]).lowercase is False


def test_albert_to_savedmodel_passes_lowercase(tmp_path, monkeypatch):
    import keras_pretrain.models.albert as albert
    from recipes import albert_to_savedmodel

    seen = {}

    def fake_load_albert(path, pretrainer=False, lowercase=None, max_extract_bytes=None):
        seen["lowercase"] = lowercase
        return object(), None

    monkeypatch.setattr(albert, "load_albert", fake_load_albert)
    archive = write(tmp_path, "albert_base_v2.tar.gz", [""])
    assert albert_to_savedmodel.main(["--tarball", archive, "--out", str(tmp_path / "o"), "--no-lowercase"]) == 2
    assert seen == {"lowercase": False}


def test_finetune_run_folder_casing(tmp_path, capsys):
    from recipes.finetune import run_tokenizer

    write(tmp_path, "vocab.txt", UNCASED)
    assert run_tokenizer(None, str(tmp_path), "bert", None).bert_lowercase is True  # guessed
    stated = (False, "run.json")
    assert run_tokenizer(None, str(tmp_path), "bert", None, stated).bert_lowercase is False
    assert "do_lower_case=False in run.json" in capsys.readouterr().err
    assert run_tokenizer(None, str(tmp_path), "bert", True, stated).bert_lowercase is True


def test_with_lowercase_sentencepiece(tmp_path):
    from keras_pretrain.models.albert import AlbertTokenizer
    from tests.models.albert.fixtures import train_sentencepiece

    path = str(tmp_path / "30k-clean.model")
    train_sentencepiece(path)
    uncased = AlbertTokenizer(path)
    cased = casing.with_lowercase(uncased, False)
    assert cased.lowercase is False and cased.proto == uncased.proto
    assert ids(cased, "THE fox") != ids(uncased, "THE fox")
