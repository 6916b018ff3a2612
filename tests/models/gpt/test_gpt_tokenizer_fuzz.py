"""GPTTokenizer (and GPTPreprocessor) ids equal transformers' `OpenAIGPTTokenizer` on the seeded fuzz set
(issue 43, items 1 and 2).

The reference is `transformers.OpenAIGPTTokenizer` (the `tokenizers` pipeline `BertNormalizer(lowercase=True)`
+ `BertPreTokenizer` + `BPE(end_of_word_suffix="</w>")`, what `transformers` runs without ftfy/spaCy). By
default a special token written in the text is text (`split_special_tokens=True` on the reference's side);
`special_tokens_in_strings=True` reads it as the reference does by default. The vocabulary holds every
character the generator writes (raw, decomposed and lower-cased), so a character kept by one side and deleted,
split or mapped otherwise by the other changes the ids.
"""

import json
import unicodedata

import pytest

from keras_pretrain.models.gpt import GPTTokenizer
from keras_pretrain.models.gpt import gpt_tokenizer
from tests import fuzz_text

transformers = pytest.importorskip("transformers")

MERGES = [
    ("t", "h"), ("th", "e</w>"), ("e", "r"), ("l", "o"), ("lo", "w</w>"), ("e", "s"), ("es", "t</w>"),
    ("a", "n"), ("an", "d</w>"), ("i", "n"), ("in", "g</w>"), ("h", "e"), ("he", "l"), ("hel", "l"),
    ("hell", "o</w>"), ("w", "o"), ("wo", "r"), ("wor", "l"), ("worl", "d</w>"), ("a", "a"), ("aa", "aa"),
    ("a", "a</w>"), ("a", "b"), ("ab", "ab"), ("x", "1"), ("n", "a"), ("c", "a"), ("ca", "f"), ("caf", "e</w>"),
    ("ก", "ก"), ("กก", "กก"), ("中", "国"), ("υ", "σ</w>"), ("υ", "ς</w>"), ("ο", "δ"), ("οδ", "ο"),
    ("unk", ">"), ("<", "unk"), ("s", ">"), ("<", "s>"), ("m", "a"), ("ma", "s"), ("mas", "k</w>"),
    ("1", "0"), ("10", "0"), ("100", "0</w>"), ("i", "\u0307"), ("n", "'"),
    ("'", "t</w>"),
]

# Minimal examples of every class the fuzz (final sigma, private use, new marks and punctuation, the
# literal <unk>) and the every-code-point comparison of `reference_tables` found; comments: the old code.
REGRESSIONS = [
    "ΥΣ", "οδος ΟΔΟΣ",  # final sigma: ours lower-cased with `str.lower` (ς), the reference per character (σ)
    "a\ue000b", "\uf8ff", "x\U000f0000",  # private use: ours kept it, the reference deletes it
    "a\u0898b", "\u07fd", "ab\u0c3c",  # marks newer than Unicode 8: ours deleted them, the reference keeps them
    "a\u0890b", "\U000110cd",  # format characters newer than Unicode 8: ours deleted them, the reference not
    "a\u1734",  # Mn in Unicode 8, Mc since 14: ours kept it, the reference deletes it
    "a\u061db", "x\u2e55y",  # punctuation newer than Unicode 8: ours split there, the reference does not
    "a\u166db",  # Po in Unicode 8, So since: ours kept it in the word, the reference splits there
    "\U0002b820\U0002b91f",  # CJK Extension E's first 256: the reference does not space them out
    "a\U00011938",  # a decomposition newer than the reference's NFD tables
    "a\u07fd\u0c3c",  # a mark newer than the reference's NFD tables is a starter: no reordering
    "\u1c89\ua7cb",  # lower-case mappings newer than Python's Unicode 14.0
    "<unk>", "a<unk>b", "<unk>s>",  # literal unknown token: text by default, the unknown id when asked
]


def characters():
    """Every character the generator writes, raw, decomposed and lower-cased, and printable ASCII."""
    lists = [fuzz_text.WORDS, fuzz_text.NUMBERS, fuzz_text.SCRIPTS, fuzz_text.EMOJI, fuzz_text.ODD,
             fuzz_text.SPECIAL_TOKENS, fuzz_text.MARKUP, fuzz_text.COMBINING, REGRESSIONS]
    text = "".join(s for items in lists for s in items) + "".join(chr(c) for c in range(0x21, 0x7F))
    text += unicodedata.normalize("NFD", text) + text.lower() + "".join(ch.lower() for ch in text) + "σςi̇"
    return sorted(set(text) - set(" \t\n\r"))


def vocabulary():
    vocab = {"<unk>": 0}
    for ch in characters():
        vocab.setdefault(ch, len(vocab))
        vocab.setdefault(ch + "</w>", len(vocab))
    for a, b in MERGES:
        for token in (a, b, a + b):
            vocab.setdefault(token, len(vocab))
    return vocab


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("gpt_fuzz")
    with open(path / "vocab.json", "w", encoding="utf-8") as f:
        json.dump(vocabulary(), f, ensure_ascii=False)
    with open(path / "merges.txt", "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))
    return str(path)


def references(folder):
    """`(as_text, parsing)`: the reference's ids with special tokens as text, and as it reads them by default."""
    tokenizer = transformers.OpenAIGPTTokenizer.from_pretrained(folder)

    def as_text(text):
        return tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    def parsing(text):
        return tokenizer(text, add_special_tokens=False, split_special_tokens=False)["input_ids"]

    return as_text, parsing


def check(folder, texts):
    as_text, parsing = references(folder)
    diffs = fuzz_text.differences(GPTTokenizer.from_folder(folder).tokenize, as_text, texts)
    assert not diffs, fuzz_text.describe(diffs)
    reading = GPTTokenizer.from_folder(folder, special_tokens_in_strings=True)
    diffs = fuzz_text.differences(reading.tokenize, parsing, texts)
    assert not diffs, "special_tokens_in_strings=True: " + fuzz_text.describe(diffs)


@pytest.mark.one_backend
def test_regressions(folder):
    check(folder, REGRESSIONS)
    plain = GPTTokenizer.from_folder(folder)
    unk = plain.token_to_id("<unk>")
    assert plain.tokenize_to_pieces("<unk>") == ["<</w>", "u", "n", "k</w>", "></w>"]  # text, as OpenAI's code
    assert GPTTokenizer.from_folder(folder, special_tokens_in_strings=True).tokenize("a<unk>b")[1] == unk


@pytest.mark.one_backend
def test_the_unknown_token_merges_like_the_reference(tmp_path):
    """`tokenizers`' BPE merges the unknown symbol like any other ("<unk> a</w>"); ours kept it apart."""
    vocab = {"<unk>": 0, "a</w>": 1, "<unk>a</w>": 2, "a": 3, "b": 4, "b</w>": 5, "ab": 6}
    (tmp_path / "vocab.json").write_text(json.dumps(vocab))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n<unk> a</w>\na b\n")
    as_text, _ = references(str(tmp_path))
    ours = GPTTokenizer.from_folder(str(tmp_path))
    for text in ("ßa", "xab a", "zb", "ab"):
        assert ours.tokenize(text) == as_text(text), text
    assert ours.tokenize("ßa") == [2]


@pytest.mark.one_backend
def test_fuzz(folder):
    check(folder, fuzz_text.fuzz_strings(fuzz_text.FAST_COUNT))


@pytest.mark.large
@pytest.mark.one_backend
def test_fuzz_full(folder):
    check(folder, fuzz_text.fuzz_strings(fuzz_text.FULL_COUNT))


@pytest.mark.tf_only
def test_the_preprocessor_gives_the_reference_ids_eagerly_and_in_tf_data(folder):
    """One code path (`tf.numpy_function` around `GPTTokenizer`): eager, `tf.function` and `tf.data` give the
    reference's ids packed by `transform_inputs`, and literal "_start_" ... stay text."""
    import numpy as np
    import tensorflow as tf

    from keras_pretrain.models.gpt import GPTPreprocessor
    from keras_pretrain.models.gpt import transform_inputs

    texts = fuzz_text.fuzz_strings(48) + REGRESSIONS + ["_start_ a _delimiter_ b _classify_"]
    length = 24
    preprocessor = GPTPreprocessor(tokenizer=GPTTokenizer.from_folder(folder), sequence_length=length)
    as_text, _ = references(folder)
    expected = transform_inputs("classification", [as_text(t) for t in texts], *preprocessor.special_ids, length)
    eager = preprocessor(tf.constant(texts))
    graph = tf.function(preprocessor)(tf.constant(texts))
    mapped = next(iter(tf.data.Dataset.from_tensor_slices(texts).batch(len(texts)).map(preprocessor)))
    for x in (eager, graph, mapped):
        for key in ("token_ids", "padding_mask"):
            np.testing.assert_array_equal(np.asarray(x[key]), expected[key])
    row = expected["token_ids"][-1].tolist()
    assert [row.count(i) for i in preprocessor.special_ids] == [1, 0, 1]  # only the packing's own
    assert GPTPreprocessor.from_config(preprocessor.get_config()).special_tokens_in_strings is False


def reference_tables():
    """The character classes of `tokenizers`' `BertNormalizer` / `BertPreTokenizer`, measured on every code
    point, in the form `gpt_tokenizer._parse_tables` reads (see the tables in gpt_tokenizer.py)."""
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers

    def step(clean=False, cjk=False, strip=False, lower=False):
        return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=cjk, strip_accents=strip,
                                          lowercase=lower).normalize_str

    clean, cjk, strip, lower = step(clean=True), step(cjk=True), step(strip=True), step(lower=True)
    split = pre_tokenizers.BertPreTokenizer().pre_tokenize_str
    found = {name: [] for name in ("removed", "space", "cjk", "opaque", "nonspacing", "split_space",
                                   "punctuation", "lower")}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        ch = chr(cp)
        cleaned = clean(ch)
        if cleaned == "":
            found["removed"].append(cp)
        elif cleaned == " " and ch != " ":
            found["space"].append(cp)
        if cjk(ch) == f" {ch} ":
            found["cjk"].append(cp)
        if unicodedata.normalize("NFD", ch) == ch and strip(ch) == "":
            found["nonspacing"].append(cp)
        if lower(ch) != ch.lower():
            found["lower"].append((cp, lower(ch)))
        words = [w for w, _ in split("a" + ch + "b")]
        if words == ["a", "b"]:
            found["split_space"].append(cp)
        elif words == ["a", ch, "b"]:
            found["punctuation"].append(cp)
    nonspacing = set(found["nonspacing"])
    anchor_high, anchor_low = "\U0001d165", "\u1b44"  # kept marks of combining class 216 and 9
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF or cp in nonspacing:
            continue
        ch = chr(cp)
        decomposed = unicodedata.normalize("NFD", ch)
        if decomposed != ch and strip(ch) != "".join(c for c in decomposed if ord(c) not in nonspacing):
            found["opaque"].append(cp)  # not decomposed by the reference
        elif unicodedata.combining(ch):  # a starter for the reference when nothing reorders around it
            probe = "a" + anchor_high + ch if unicodedata.combining(ch) < 216 else "a" + ch + anchor_low
            if strip(probe) == probe:
                found["opaque"].append(cp)
    tables = {"lower": found.pop("lower")}
    for name, cps in found.items():
        ranges = []
        for cp in sorted(cps):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
        tables[name] = ranges
    return tables


@pytest.mark.large
@pytest.mark.one_backend
def test_the_tables_are_the_references():
    """Every code point: the classes written in gpt_tokenizer.py are what `tokenizers` does (on this Python's
    `unicodedata` for NFD and lower case). Fails when either side moves to another Unicode version."""
    pytest.importorskip("tokenizers")
    ours = gpt_tokenizer._parse_tables(gpt_tokenizer._TABLES)
    reference = reference_tables()
    for name in reference:
        assert ours[name] == reference[name], name
