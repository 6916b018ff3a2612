"""A seeded generator of hostile real-world text for differential tokenizer tests.

`fuzz_strings(n, seed)` returns `n` strings that mix every class the issue-43
fuzz found differences in: each Unicode whitespace and control character
class (ASCII and Unicode spaces, U+0085, U+000B, U+001C..U+001F, NUL, bidi and
zero-width format characters), combining marks (Mn, and spacing Mc with
combining class 0), CJK, Indic and Thai scripts, emoji sequences (ZWJ, skin
tones, U+FE0F), private-use and unassigned code points, very long words,
numbers with separators (the digit-comma re-split), literal markup and every
family's special-token spelling (`<s>`, `[CLS]`, `<mask>`, ...), Greek final
sigma, and surrogate-free astral characters.

The stream depends only on `seed` (Python's `random.Random`), so a failing
string can be reproduced by its index. `FAST_COUNT` strings run in `make test`,
`FULL_COUNT` under `make test-large`.
"""

import io
import random

FAST_COUNT = 400
FULL_COUNT = 3200
SEED = 20261204

WHITESPACE = [
    " ", "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f",
    "\x85", "\xa0", "\u1680", "\u2000", "\u2002", "\u2007", "\u2009", "\u200a",
    "\u2028", "\u2029", "\u202f", "\u205f", "\u3000",
]
CONTROLS = [
    "\x00", "\x01", "\x07", "\x08", "\x1b", "\x7f", "\x80", "\x9f",
    "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\u202e",
    "\ufeff", "\ufffd", "\ufff9", "\U000e0001",
]
COMBINING = [
    "\u0300", "\u0301", "\u0308", "\u0327", "\u0335", "\u20dd", "\u0903",
    "\u093e", "\u0940", "\u0946", "\u09be", "\u0e31", "\u0e33", "\u0e40",
    "\ufe0f", "\u0f71", "\U0001d165",
]
SPECIAL_TOKENS = [
    "<s>", "</s>", "<pad>", "<mask>", "<unk>", "[CLS]", "[SEP]", "[MASK]",
    "[UNK]", "[PAD]", "<cls>", "<sep>", "<eod>", "<eop>", "</w>", "<bos>",
    "<eos>", "<|endoftext|>", "<S>", "</S>",
]
MARKUP = [
    "<b>", "</p>", "&amp;", "&#39;", "<br/>", "{{x}}", "\\n", "@@", "##",
    "▁", "Ġ", "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "n't", "...",
    "http://a.b/c?d=1", "a@b.co", "--", "``", "''",
]
WORDS = [
    "the", "The", "THE", "hello", "World", "isn't", "don't", "we'll", "naïve",
    "Café", "résumé", "İstanbul", "straße", "ΟΔΟΣ", "ΥΣ", "οδος", "Москва",
    "ﬁne", "Ⅻ", "½", "²", "ℌ", "Å", "ǅ", "ß", "ŉ", "ﬀ",
]
NUMBERS = [
    "1", "42", "3.14", "1,000", "£3,", "$1,000.50", "2019-10-01", "12,34,5",
    "٣٤", "१२३", "１２３", "0x1F", "1e-5", "7,", "3,a", "99%",
]
SCRIPTS = [
    "中国人说你好", "東京", "한국어", "ひらがな", "カタカナ", "\uf900",
    "\U00020000\U0002a6df", "नमस्ते", "हिन्दी", "বাংলা", "தமிழ்", "ภาษาไทย",
    "กขค", "ไม่", "العربية", "עברית", "ქართული", "Ελληνικά", "ᚠᛇᚻ",
]
EMOJI = [
    "😀", "❤️", "👍🏽", "👩\u200d💻", "🇫🇷", "🧑", "1️⃣", "👨\u200d👩\u200d👧",
    "🏳️\u200d🌈", "☺", "✌︎",
]
ODD = [
    "\ue000", "\uf8ff", "\U000f0000", "\u0378", "\u2fff", "\U0001fae8",
    "\u0e3f", "\u00ad", "\u0640", "\u3164", "\u115f",
]


def _long_word(rng):
    base = rng.choice(["a", "ab", "x1", "ก", "中", "é", "na\u0301"])
    return base * rng.randint(60, 320)


def _pick(rng, table, otherwise):
    """`make(rng)` of the first `(bound, make)` of `table` above one uniform roll, else `otherwise(rng)`."""
    roll = rng.random()
    for bound, make in table:
        if roll < bound:
            return make(rng)
    return otherwise(rng)


def _one_of(choices):
    return lambda rng: rng.choice(choices)


def _control_inside_a_word(rng):
    word = rng.choice(WORDS)
    cut = rng.randint(0, len(word))
    return word[:cut] + rng.choice(CONTROLS) + word[cut:]


PIECES = [  # (cumulative probability bound, piece)
    (0.30, _one_of(WORDS)),
    (0.40, _one_of(NUMBERS)),
    (0.50, _one_of(SCRIPTS)),
    (0.57, _one_of(EMOJI)),
    (0.64, _one_of(SPECIAL_TOKENS)),
    (0.70, _one_of(MARKUP)),
    (0.76, _one_of(ODD)),
    (0.80, lambda rng: _long_word(rng) if rng.random() < 0.3 else rng.choice(WORDS) * 3),
    (0.88, lambda rng: rng.choice(WORDS) + rng.choice(COMBINING)),
    (0.94, _control_inside_a_word),
]
SEPARATORS = [  # (cumulative probability bound, separator)
    (0.55, lambda rng: " "),
    (0.80, lambda rng: rng.choice(WHITESPACE) * rng.randint(1, 2)),
    (0.90, lambda rng: ""),
    (0.95, lambda rng: " " + rng.choice(WHITESPACE)),
]


def _piece(rng):
    return _pick(rng, PIECES, lambda rng: chr(rng.randint(0x20, 0x2FFF)))


def _separator(rng):
    return _pick(rng, SEPARATORS, _one_of(CONTROLS))


def fuzz_string(rng):
    """One string of 0-12 pieces with mixed separators."""
    pieces = []
    for _ in range(rng.randint(0, 12)):
        pieces.append(_piece(rng))
        pieces.append(_separator(rng))
    text = "".join(pieces)
    if rng.random() < 0.1:
        text = rng.choice(WHITESPACE) + text
    return text


def fuzz_strings(n=FAST_COUNT, seed=SEED):
    """`n` seeded strings; the first ones are the same for every `n`."""
    rng = random.Random(seed)
    return [fuzz_string(rng) for _ in range(n)]


def with_regressions(regressions, n):
    """The texts of a test's `(name, text)` regression cases, then `fuzz_strings(n)`."""
    return [text for _, text in regressions] + fuzz_strings(n)


# Numbers whose digit-comma pieces the SentencePiece originals re-split ("9," with and without "\u2581").
COMMA_NUMBERS = ["1,000", "9,", "10,", "2,500,", "\u00a33,", "$1,000.50", "19,", "x9,", "300,000,", "7,", "12,34,5"]


def sentencepiece_lines(seed, words, count):
    """Training text for a tiny SentencePiece model: 1,500 fuzzed strings of `seed` (another seed than the
    strings compared), then `count` lines of 8 words drawn from `COMMA_NUMBERS + words`."""
    rng = random.Random(1)
    lines = fuzz_strings(1500, seed=seed)
    lines += [" ".join(rng.choice(COMMA_NUMBERS + words) for _ in range(8)) for _ in range(count)]
    return lines


def sentencepiece_model(lines, **options):
    """The serialized unigram SentencePiece model trained on `lines` (one thread: deterministic) with `options`."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=buffer, model_type="unigram",
                                   num_threads=1, minloglevel=2, **options)
    return buffer.getvalue()


def assert_digit_comma_pieces(processor):
    """The model has "<digit>," pieces both with and without "\u2581" (so the originals' re-split changes ids)."""
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    resplit = [p for p in pieces if len(p) > 1 and p[-1] == "," and p[-2].isdigit()]
    assert any(p.startswith("\u2581") for p in resplit) and any(not p.startswith("\u2581") for p in resplit)


def differences(ours, reference, texts):
    """`[(index, text, ours, reference)]` where the two callables disagree."""
    out = []
    for i, text in enumerate(texts):
        a, b = ours(text), reference(text)
        if list(a) != list(b):
            out.append((i, text, list(a), list(b)))
    return out


def describe(diffs, limit=8):
    lines = [f"{len(diffs)} strings differ; first {min(limit, len(diffs))}:"]
    for i, text, a, b in diffs[:limit]:
        lines.append(f"  #{i} {text!r}\n    ours {a}\n    orig {b}")
    return "\n".join(lines)


def to_lists(ids):
    """Token ids (a ragged or dense tensor, or nested lists) as lists of Python ints, one per string."""
    rows = ids.to_list() if hasattr(ids, "to_list") else ids
    return [[int(i) for i in row] for row in rows]


def word_ids_as_lists(ids):
    """`to_lists` of a SavedModel's `tokenize` output, its words' pieces merged when it is ragged per word."""
    return to_lists(ids.merge_dims(1, -1) if ids.ragged_rank > 1 else ids)


def is_tie(processor, ours, theirs):
    """The same pieces in another order, spelling the same text: a SentencePiece segmentation of the same score."""
    return sorted(ours) == sorted(theirs) and processor.decode(ours) == processor.decode(theirs)


def assert_sentencepiece_equal(processor, texts, ours, expected, path):
    """The number of strings whose ids differ; fails on any difference other than an exact score tie, and on a
    tie too unless the installed sentencepiece is 0.2.x (0.1.99 breaks ties as tensorflow-text does)."""
    import sentencepiece as spm

    differing = [(i, t, a, b) for i, (t, a, b) in enumerate(zip(texts, ours, expected)) if a != b]
    ties_allowed = not spm.__version__.startswith("0.1.")
    unexplained = [d for d in differing if not (ties_allowed and is_tie(processor, d[2], d[3]))]
    assert not unexplained, f"{path}: " + describe(unexplained)
    return len(differing)
