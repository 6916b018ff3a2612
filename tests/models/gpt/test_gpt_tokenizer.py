"""GPTTokenizer: the same ids as transformers' OpenAIGPTTokenizer."""

import json
import os

import pytest

from keras_pretrain import convert
from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt import GPTTokenizer
from keras_pretrain.models.gpt import learn_bpe

transformers = pytest.importorskip("transformers")

CHARS = list("abcdefghilmnoprstuwy.,!'")
MERGES = [
    ("t", "h"), ("th", "e</w>"), ("e", "r"), ("l", "o"), ("lo", "w</w>"), ("lo", "w"), ("e", "s"),
    ("es", "t</w>"), ("a", "n"), ("an", "d</w>"), ("i", "n"), ("in", "g</w>"), ("o", "w</w>"),
    ("n", "e"), ("ne", "w"), ("e", "r</w>"), ("new", "er</w>"), ("h", "e"), ("he", "l"), ("hel", "lo"), ("s", "t"),
]
TEXTS = [
    "The lowest and newer, THE lower!",
    "Hello   world... it's a test",
    "Héllo naïve café",  # accents are stripped
    "emoji \U0001F600 and xyz unknown chars",
    "tab\tnew\nline 中文 mixed",
    "",
    "the the the ... !!!",
]


def vocabulary():
    tokens = ["<unk>"] + CHARS + [c + "</w>" for c in CHARS] + ["".join(m) for m in MERGES]
    vocab = {}
    for t in tokens:
        vocab.setdefault(t, len(vocab))
    return vocab


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt_bpe")
    with open(path / "vocab.json", "w") as f:
        json.dump(vocabulary(), f)
    with open(path / "merges.txt", "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))
    return str(path)


def hf_ids(folder, text):
    tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(folder)
    return tokenizer.encode(text, add_special_tokens=False)


def test_ids_equal_transformers(folder):
    ours = GPTTokenizer.from_folder(folder)
    for text in TEXTS:
        assert ours.tokenize(text) == hf_ids(folder, text), text
    pieces = ours.tokenize_to_pieces("The lowest newer")
    assert pieces == ["the</w>", "low", "est</w>", "newer</w>"]
    assert ours.tokenize(TEXTS[:2]) == [ours.tokenize(TEXTS[0]), ours.tokenize(TEXTS[1])]


def test_detokenize(folder):
    ours = GPTTokenizer.from_folder(folder)
    assert ours.detokenize(ours.tokenize("The lowest and newer!")) == "the lowest and newer !"


def test_learned_bpe_matches_transformers(tmp_path):
    lines = ["the lowest and the newest lower", "hello there, the lower tower!", "newer and newest"] * 3
    tokenizer = learn_bpe(lines, vocabulary_size=70)
    assert tokenizer.vocabulary_size() <= 70 and len(tokenizer.merges) > 5
    tokenizer.save(str(tmp_path))
    for text in lines[:3] + ["unseen words: zebra lowers"]:
        assert tokenizer.tokenize(text) == hf_ids(str(tmp_path), text), text
    ids = tokenizer.add_special_tokens(["_start_", "_delimiter_", "_classify_"])
    assert ids == [tokenizer.vocabulary_size() - 3 + i for i in range(3)]


def test_from_huggingface_gives_the_tokenizer(folder, tmp_path):
    import shutil

    torch = pytest.importorskip("torch")  # noqa: F841
    config = transformers.OpenAIGPTConfig(vocab_size=len(vocabulary()), n_positions=8, n_embd=8, n_layer=1, n_head=2)
    transformers.OpenAIGPTModel(config).save_pretrained(str(tmp_path))
    for name in ("vocab.json", "merges.txt"):
        shutil.copy(os.path.join(folder, name), tmp_path / name)
    _, tokenizer = convert.from_huggingface(str(tmp_path))
    assert tokenizer.tokenize(TEXTS[0]) == hf_ids(folder, TEXTS[0])


def test_bad_files(tmp_path):
    with pytest.raises(ConfigError, match="merges.txt"):
        GPTTokenizer.from_folder(str(tmp_path))
    (tmp_path / "vocab.json").write_text('{"a": 0}')
    (tmp_path / "merges.txt").write_text("#version: 0.2\na b c\n")
    with pytest.raises(ConfigError, match="merges.txt:2"):
        GPTTokenizer.from_folder(str(tmp_path))
    (tmp_path / "merges.txt").write_text("")
    with pytest.raises(ConfigError, match="unknown token"):
        GPTTokenizer.from_folder(str(tmp_path))
