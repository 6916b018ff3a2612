"""RobertaTokenizer ids == GPT-2's `encoder.py` byte-level BPE with fairseq's pre-tokenizer on fuzzed text (issue 43).

The reference (`gpt2_encode`, below) is the algorithm of GPT-2's `encoder.py`, which fairseq's RoBERTa runs, written
out here from its published description: the pre-tokenizer regex
`'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+` run by the `regex` package
(its `\\s`, `\\p{L}`, `\\p{N}`: the test-only dependency), each pre-token's UTF-8 bytes mapped by
`bytes_to_unicode`, then the greedy loop that merges every occurrence of the lowest-ranked adjacent pair until no
pair has a rank. The vocabulary is learned here (`learn_bpe`, a few hundred merges on fuzzed text of another seed)
so that merges cross letters, digits, punctuation, whitespace and multi-byte characters.

Ours is compared on the seeded strings of `tests.fuzz_text` (`FAST_COUNT` here, `FULL_COUNT` under `-m large`) on
every path a user reaches: an eager call, a `tf.function`, a `tf.data` pipeline through `RobertaPreprocessor`
(packing included) and the exported preprocessor SavedModel. `REGRESSIONS` keeps a minimal example of each class
the fuzz found.
"""

import json

import numpy as np
import pytest

from tests.fuzz_text import FAST_COUNT
from tests.fuzz_text import FULL_COUNT
from tests.fuzz_text import describe
from tests.fuzz_text import fuzz_strings
from tests.fuzz_text import with_regressions

pytestmark = pytest.mark.tf_only  # tokenizers are TF-side code
regex = pytest.importorskip("regex")

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]

# A minimal example of each class of difference the fuzz found (ours before the fix vs GPT-2's encoder).
REGRESSIONS = [
    ("NUL cuts the string in graphs", "hello\x00world"),
    ("NUL at the start and the end", "\x00a b\x00"),
    ("literal special tokens are text", "<s> </s> <pad> <mask> <unk> a<mask>b"),
    ("non-ASCII whitespace after a space is its own pre-token", " \u2007x"),
    ("... unless the text ends", " \u2007"),
    ("space then U+2007 then a word", "a  \u2007b"),
    ("CJK then emoji (the issue's example of merges across pre-tokens)", "\u888d\U0001f9d1"),
    ("contraction before letters", "'st"),
    ("contractions", "isn't we'll 'S 'RE 're'"),
    ("whitespace runs before a word keep their last space", "a   b\t\tc \n d"),
    ("whitespace run at the end", "a \t "),
    ("U+0085, U+00A0, U+3000 are \\s", "a\x85b\xa0 c\u3000\u3000d"),
    ("U+001C..U+001F and U+200B are not \\s", "a\x1cb \x1d\x1e\x1f c\u200bd"),
    ("U+000B is \\s", "s\x0b2 \x0b"),
    ("letters, marks and numbers split", "na\u0301i\u0308ve \u0946x \u2164\u00bd \u0663\u0664 12ab"),
    ("Devanagari digit six (keras-hub's split marker) is a number", "\u096c a \u096c"),
    ("a letter new in Unicode 16", "x\u1c89"),
    ("a digit new in Unicode 16", "1\U00010d40"),
    ("long repeated word", "ab" * 300),
    ("empty", ""),
]


# --- The reference: GPT-2's encoder.py algorithm ------------------------------------------------------------------


def bytes_to_unicode():
    """byte -> printable character: the printable Latin-1 bytes map to themselves, the rest to 256, 257, ..."""
    kept = [*range(ord("!"), ord("~") + 1), *range(ord("\xa1"), ord("\xac") + 1), *range(ord("\xae"), 256)]
    table, extra = {}, 0
    for byte in range(256):
        if byte in kept:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_UNICODE = bytes_to_unicode()
PRE_TOKENIZER = regex.compile(GPT2_PATTERN)


def pre_tokens(text):
    """GPT-2's pre-tokens of `text`, each as its byte-to-unicode characters."""
    return ["".join(BYTE_TO_UNICODE[b] for b in piece.encode("utf-8")) for piece in PRE_TOKENIZER.findall(text)]


def bpe(word, ranks):
    """GPT-2's merge loop on one pre-token: merge every occurrence of the lowest-ranked pair, until none ranks."""
    symbols = list(word)
    while len(symbols) > 1:
        pairs = {(a, b) for a, b in zip(symbols, symbols[1:])}
        best = min(pairs, key=lambda pair: ranks.get(pair, float("inf")))
        if best not in ranks:
            break
        merged, i = [], 0
        while i < len(symbols):
            if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                merged.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return symbols


def gpt2_encode(text, vocab, ranks):
    return [vocab[piece] for word in pre_tokens(text) for piece in bpe(word, ranks)]


def learn_bpe(texts, num_merges):
    """Merges learned on `texts` (most frequent pair first, ties by the pair itself: deterministic)."""
    counts = {}
    for text in texts:
        for word in pre_tokens(text):
            counts[word] = counts.get(word, 0) + 1
    words = [(list(word), count) for word, count in counts.items()]
    merges = []
    for _ in range(num_merges):
        pairs = {}
        for symbols, count in words:
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] = pairs.get(pair, 0) + count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        merges.append(best)
        for symbols, _ in words:
            i = 0
            while i + 1 < len(symbols):
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
                i += 1
    return merges


TRAINING_TEXT = [
    "Hello world, the quick brown fox isn't here; we'll see. 1,000 tokens cost $3.14!",
    "The THE the    the\t\tthe\n\nthe  \u3000 the\xa0the",
    "figure \u2007",  # a space and U+2007 ending the text are one pre-token: the merge of the two is learned
    # A letter and a digit of Unicode 16 (regex's \p{L}, \p{N}, not RE2's) are one pre-token with what precedes.
    "x\u1c89",
    "1\U00010d40",
]


@pytest.fixture(scope="module")
def bpe_files(tmp_path_factory):
    """vocab.json + merges.txt as RoBERTa's: specials, the 256 byte characters, the merged tokens, `<mask>` last."""
    texts = fuzz_strings(500, seed=11) + TRAINING_TEXT * 20  # another seed than the strings compared
    merges = learn_bpe(texts, 400)
    tokens = SPECIALS + [BYTE_TO_UNICODE[b] for b in range(256)] + [a + b for a, b in merges] + ["<mask>"]
    vocab = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    folder = tmp_path_factory.mktemp("roberta_bpe")
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    lines = ["#version: 0.2"] + [f"{a} {b}" for a, b in merges]
    (folder / "merges.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(folder / "vocab.json"), str(folder / "merges.txt"), vocab, {pair: i for i, pair in enumerate(merges)}


def to_lists(ids):
    rows = ids.to_list() if hasattr(ids, "to_list") else ids
    return [[int(i) for i in row] for row in rows]


def tokenizer_of(bpe_files, **kwargs):
    from keras_pretrain.models.roberta import RobertaTokenizer

    return RobertaTokenizer(vocabulary=bpe_files[0], merges=bpe_files[1], **kwargs)


def every_path(tokenizer, texts, tmp_path, export=True):
    """Ids of `texts` eagerly, in a `tf.function`, through `RobertaPreprocessor` (eagerly and in `tf.data`,
    `<s>` and `</s>` taken off) and from the exported preprocessor SavedModel's `tokenize`."""
    import tensorflow as tf

    from keras_pretrain.models.roberta import RobertaPreprocessor

    paths = {"eager": to_lists(tokenizer(texts))}
    paths["tf.function"] = to_lists(tf.function(lambda x: tokenizer(x))(tf.constant(texts)))
    preprocessor = RobertaPreprocessor(tokenizer, sequence_length=max(map(len, paths["eager"])) + 2)

    def unpacked(batch):
        ids, mask = np.asarray(batch["token_ids"]), np.asarray(batch["padding_mask"]).astype(bool)
        return [[int(i) for i in row[m]][1:-1] for row, m in zip(ids, mask)]

    paths["RobertaPreprocessor (eager)"] = unpacked(preprocessor(texts))
    packed = []
    for batch in tf.data.Dataset.from_tensor_slices(texts).batch(128).map(preprocessor):
        packed += unpacked(batch)
    paths["tf.data + RobertaPreprocessor"] = packed
    if export:
        import tensorflow_text  # noqa: F401 - registers the ops of the SavedModel

        from keras_pretrain.export import export_preprocessor

        path = str(tmp_path / "preprocessor")
        export_preprocessor(tokenizer, path, seq_length=16)
        ids = tf.saved_model.load(path).tokenize(tf.constant(texts))
        paths["exported preprocessor"] = to_lists(ids.merge_dims(1, -1))
    return paths


def check_all_paths(bpe_files, texts, tmp_path, export=True):
    """Every path equals GPT-2's encoder on `texts`; returns the count of differing strings per path."""
    _, _, vocab, ranks = bpe_files
    expected = [gpt2_encode(text, vocab, ranks) for text in texts]
    counts = {}
    for name, ids in every_path(tokenizer_of(bpe_files), texts, tmp_path, export).items():
        differing = [(i, t, a, b) for i, (t, a, b) in enumerate(zip(texts, ids, expected)) if a != b]
        counts[name] = len(differing)
        assert not differing, f"{name}: " + describe(differing)
    return counts


def test_the_vocabulary_exercises_the_classes(bpe_files):
    _, _, vocab, ranks = bpe_files
    assert len(ranks) == 400
    merged = [a + b for a, b in ranks]
    space = BYTE_TO_UNICODE[ord(" ")]
    assert any(token[0] == space and token[1:].isalpha() for token in merged)  # " word"
    assert any(token[0] == space and not token[1:].isalnum() for token in merged)  # " <", " $"
    assert any(token.isdigit() for token in merged)
    assert any(len(token.encode("latin-1", "ignore")) < len(token) for token in merged)  # multi-byte characters
    # "'st" is GPT-2's "'s" + "t" (no "'s" merge): "s t" exists, so merging across the boundary shows.
    assert ("s", "t") in ranks and ("'", "s") not in ranks


@pytest.fixture(scope="module")
def tokenizer(bpe_files):
    return tokenizer_of(bpe_files)


@pytest.fixture(scope="module")
def graph(tokenizer):
    import tensorflow as tf

    return tf.function(lambda texts: tokenizer(texts), input_signature=[tf.TensorSpec([None], tf.string)])


@pytest.mark.parametrize("name,text", REGRESSIONS, ids=[n for n, _ in REGRESSIONS])
def test_regressions(bpe_files, tokenizer, graph, name, text):
    """Each class by name, eagerly and in a `tf.function` (`test_fuzz_equals_gpt2` runs them on every path)."""
    _, _, vocab, ranks = bpe_files
    expected = gpt2_encode(text, vocab, ranks)
    assert to_lists(tokenizer([text]))[0] == expected, "eager"
    assert to_lists(graph([text]))[0] == expected, "tf.function"


def test_fuzz_equals_gpt2(bpe_files, tmp_path):
    """The regression cases and `FAST_COUNT` fuzz strings on every path, the SavedModel included."""
    texts = with_regressions(REGRESSIONS, FAST_COUNT)
    check_all_paths(bpe_files, texts, tmp_path)


def dense_strings(count, seed=5):
    """Short strings over a few characters of every class the pre-tokenizer tells apart, densely mixed."""
    import random

    alphabet = [" ", " ", "\t", "\n", "\u2007", "\x85", "\xa0", "\u3000", "\x1c", "\x0b", "'", "'", "s", "t", "re",
                "ll", "a", "T", "1", "\u0663", "\u096c", ".", "!", "\x00", "\u0301", "\u4e2d", "\U0001f9d1",
                "<mask>", "<s>", "\ufffd"]
    rng = random.Random(seed)
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(count)]


def test_dense_mixtures_equal_gpt2(bpe_files, tokenizer):
    """Whitespace runs, contractions and class changes next to each other: eagerly (the graphs run the same ops)."""
    _, _, vocab, ranks = bpe_files
    texts = dense_strings(1500)
    ours = to_lists(tokenizer(texts))
    differing = [(i, t, a, gpt2_encode(t, vocab, ranks)) for i, (t, a) in enumerate(zip(texts, ours))]
    differing = [d for d in differing if d[2] != d[3]]
    assert not differing, describe(differing)


def test_special_tokens_in_strings(bpe_files):
    """`special_tokens_in_strings=True`: the text is cut at each special token (its id), the pieces between are
    GPT-2's; off (the default), the same text is plain text."""
    import tensorflow as tf

    _, _, vocab, ranks = bpe_files
    parsing = tokenizer_of(bpe_files, special_tokens_in_strings=True)
    text = "a <mask>b</s>\x00<s><s>  "
    expected = (gpt2_encode("a ", vocab, ranks) + [vocab["<mask>"]] + gpt2_encode("b", vocab, ranks)
                + [vocab["</s>"]] + gpt2_encode("\x00", vocab, ranks) + [vocab["<s>"]] * 2
                + gpt2_encode("  ", vocab, ranks))
    assert to_lists(parsing([text]))[0] == expected
    assert to_lists(tf.function(lambda x: parsing(x))(tf.constant([text])))[0] == expected
    assert to_lists(tokenizer_of(bpe_files)([text]))[0] == gpt2_encode(text, vocab, ranks)  # the default


def test_invalid_utf8_reads_as_replacement_characters(bpe_files, tokenizer):
    import tensorflow as tf

    _, _, vocab, ranks = bpe_files
    ours = to_lists(tokenizer(tf.constant([b"ab\xff c\xc3"])))[0]
    assert ours == gpt2_encode(b"ab\xff c\xc3".decode("utf-8", "replace"), vocab, ranks)


def unicode_classes():
    """The RE2 class bodies of the `regex` package's `\\s`, `\\p{L}`, `\\p{N}` (as in `gpt2_unicode`)."""
    classes = {}
    for name, pattern in [("WHITESPACE", r"\s"), ("LETTERS", r"\p{L}"), ("NUMBERS", r"\p{N}")]:
        compiled, runs, start = regex.compile(pattern), [], None
        for code in range(0x110001):
            hit = code < 0x110000 and not 0xD800 <= code <= 0xDFFF and compiled.match(chr(code)) is not None
            if hit and start is None:
                start = code
            elif not hit and start is not None:
                runs.append(f"\\x{{{start:X}}}" + (f"-\\x{{{code - 1:X}}}" if code - 1 > start else ""))
                start = None
        classes[name] = "".join(runs)
    return classes


@pytest.mark.large
def test_unicode_classes_are_the_regex_packages():
    from keras_pretrain.models.roberta import gpt2_unicode

    classes = unicode_classes()
    for name, body in classes.items():
        assert getattr(gpt2_unicode, name) == body, (
            f"gpt2_unicode.{name} is not the `regex` package's ({regex.__version__}) class: regenerate it with "
            "`python -m tests.models.roberta.test_roberta_tokenizer_fuzz`")


@pytest.mark.large
def test_full_fuzz_equals_gpt2(bpe_files, tmp_path):
    texts = with_regressions(REGRESSIONS, FULL_COUNT)
    counts = check_all_paths(bpe_files, texts, tmp_path)
    print(f"{len(texts)} strings, differing per path: {counts}")


@pytest.mark.large
def test_transformers_agrees_with_the_reference(bpe_files):
    """A cross-check of the reference: transformers' RoBERTa tokenizer (the Rust `tokenizers`), special tokens
    split as text, gives the same ids on the full fuzz set."""
    import os

    transformers = pytest.importorskip("transformers")
    _, _, vocab, ranks = bpe_files
    reference = transformers.RobertaTokenizer.from_pretrained(os.path.dirname(bpe_files[0]))
    texts = with_regressions(REGRESSIONS, FULL_COUNT) + dense_strings(1500)
    differing = []
    for i, text in enumerate(texts):
        theirs = reference(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        ours = gpt2_encode(text, vocab, ranks)
        if theirs != ours:
            differing.append((i, text, theirs, ours))
    assert not differing, describe(differing)


if __name__ == "__main__":  # prints keras_pretrain/models/roberta/gpt2_unicode.py's tables from the `regex` package
    for name, body in unicode_classes().items():
        print(f"{name} = (")
        for start in range(0, len(body), 112):
            print(f'    r"{body[start:start + 112]}"')
        print(")\n")
