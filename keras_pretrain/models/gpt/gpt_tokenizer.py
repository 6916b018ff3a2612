"""GPT-1's BPE tokenizer (`vocab.json` + `merges.txt`, '</w>' word ends).

Why not keras-hub's `BytePairTokenizer`: it implements GPT-2's byte-level
BPE (bytes mapped to printable characters, GPT-2's regex pre-split, a space
prefix marker "Ġ" and no end-of-word suffix). GPT-1's BPE works on Unicode
characters of lower-cased, BERT-style pre-tokenized words and marks the last
character of each word with the suffix "</w>" (the GPT-1 vocabulary holds
entries such as "the</w>"), so `BytePairTokenizer` cannot produce its pieces.
This small pure-Python tokenizer reproduces the `transformers`
`OpenAIGPTTokenizer` (the `tokenizers` pipeline `BertNormalizer(lowercase)`
+ `BertPreTokenizer` + `BPE(end_of_word_suffix="</w>")`, which is also the
ftfy/spaCy-less fallback of the original port), id for id, including the
Unicode tables of `tokenizers` (see "The reference's character classes"
below). Special tokens written in the text are text unless
`special_tokens_in_strings=True`. Tokenization runs in Python, also inside
`tf.function` / `tf.data` (`GPTPreprocessor` wraps it in one
`tf.numpy_function`): one code path.
"""

import bisect
import json
import os
import re
import unicodedata

from keras_pretrain.errors import ConfigError

SUFFIX = "</w>"


# --- The reference's character classes ------------------------------------
#
# `OpenAIGPTTokenizer` normalizes and splits with the `tokenizers` library's `BertNormalizer` and
# `BertPreTokenizer` (Rust), whose character classes come from Unicode tables of their own, not from Python's
# `unicodedata`: general categories as of Unicode 8.0 (so marks, format characters and punctuation added since
# are plain characters; private-use characters are removed as controls), canonical decompositions and combining
# classes as of an older Unicode version (marks added since are starters that nothing reorders), Rust's current
# lower-case mappings, and CJK ranges with 2B820..2B91F left out. Python's `unicodedata` changes with the
# Python version (Unicode 13.0 on 3.10, 14.0 on 3.11, 15.0 on 3.12), so the classes are written out below
# (code point ranges, hexadecimal), measured on every code point against `tokenizers` 0.23 on Python 3.11
# (tests/models/gpt/test_gpt_tokenizer_fuzz.py re-derives them). NFD and lower-casing of the rest come from
# `unicodedata`; `lower` lists the characters whose Rust lower case `str.lower` on Unicode 14.0 lacks. On another
# Python, characters whose decomposition, combining class or case Unicode added after 8.0 and other than 14.0 may
# still differ (none in the fuzz set; the large test `test_the_tables_are_the_references` lists them).
#   removed      deleted by the normalizer (NUL, U+FFFD, controls, format and private-use characters)
#   space        turned into " " by the normalizer
#   cjk          surrounded by spaces by the normalizer
#   opaque       neither decomposed nor reordered by the reference's NFD
#   nonspacing   deleted after NFD (accents: the reference's Mn)
#   split_space  whitespace for the pre-tokenizer
#   punctuation  a word of its own for the pre-tokenizer
_TABLES = """
removed: 0-8 B-C E-1F 7F-9F AD 600-605 61C 6DD 70F 180E 200B-200F 202A-202E 2060-2064 2066-206F E000-F8FF FEFF
    FFF9-FFFB FFFD 110BD 1BCA0-1BCA3 1D173-1D17A E0001 E0020-E007F F0000-FFFFD 100000-10FFFD
space: 9-A D A0 1680 2000-200A 2028-2029 202F 205F 3000
cjk: 3400-4DBF 4E00-9FFF F900-FAFF 20000-2A6DF 2A700-2B81F 2B920-2CEAF 2F800-2FA1F
opaque: 7FD 898-89F 8CA-8D3 9FE C3C D3B-D3C EBA 1715 1ABF-1ACE 1DF6-1DFA A82C 10D24-10D27 10EAB-10EAC
    10F46-10F50 10F82-10F85 11070 1133B 1145E 11839-1183A 11938 1193D-1193E 11943 119E0 11A34 11A47 11A99 11D42
    11D44-11D45 11D97 16FF0-16FF1 1E130-1E136 1E2AE 1E2EC-1E2EF
nonspacing: 300-33F 342 345-36F 483-487 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670 6D6-6DC 6DF-6E4
    6E7-6E8 6EA-6ED 711 730-74A 7A6-7B0 7EB-7F3 816-819 81B-823 825-827 829-82D 859-85B 8E3-902 93A 93C 941-948 94D
    951-957 962-963 981 9BC 9C1-9C4 9CD 9E2-9E3 A01-A02 A3C A41-A42 A47-A48 A4B-A4D A51 A70-A71 A75 A81-A82 ABC
    AC1-AC5 AC7-AC8 ACD AE2-AE3 B01 B3C B3F B41-B44 B4D B56 B62-B63 B82 BC0 BCD C00 C3E-C40 C46-C47 C4A-C4D C55-C56
    C62-C63 C81 CBC CBF CC6 CCC-CCD CE2-CE3 D01 D41-D44 D4D D62-D63 DCA DD2-DD4 DD6 E31 E34-E3A E47-E4E EB1 EB4-EB9
    EBB-EBC EC8-ECD F18-F19 F35 F37 F39 F71-F72 F74 F77 F79-F7E F80 F82-F84 F86-F87 F8D-F92 F94-F97 F99-F9C F9E-FA1
    FA3-FA6 FA8-FAB FAD-FB8 FBA-FBC FC6 102D-1030 1032-1037 1039-103A 103D-103E 1058-1059 105E-1060 1071-1074 1082
    1085-1086 108D 109D 135D-135F 1712-1714 1732-1734 1752-1753 1772-1773 17B4-17B5 17B7-17BD 17C6 17C9-17D3 17DD
    180B-180D 18A9 1920-1922 1927-1928 1932 1939-193B 1A17-1A18 1A1B 1A56 1A58-1A5E 1A60 1A62 1A65-1A6C 1A73-1A7C
    1A7F 1AB0-1ABD 1B00-1B03 1B34 1B36-1B3A 1B3C 1B42 1B6B-1B73 1B80-1B81 1BA2-1BA5 1BA8-1BA9 1BAB-1BAD 1BE6
    1BE8-1BE9 1BED 1BEF-1BF1 1C2C-1C33 1C36-1C37 1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED 1CF4 1CF8-1CF9 1DC0-1DF5
    1DFC-1DFF 20D0-20DC 20E1 20E5-20F0 2CEF-2CF1 2D7F 2DE0-2DFF 302A-302D 3099-309A A66F A674-A67D A69E-A69F
    A6F0-A6F1 A802 A806 A80B A825-A826 A8C4 A8E0-A8F1 A926-A92D A947-A951 A980-A982 A9B3 A9B6-A9B9 A9BC A9E5
    AA29-AA2E AA31-AA32 AA35-AA36 AA43 AA4C AA7C AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 AAEC-AAED AAF6 ABE5 ABE8
    ABED FB1E FE00-FE0F FE20-FE2F 101FD 102E0 10376-1037A 10A01-10A03 10A05-10A06 10A0C-10A0F 10A38-10A3A 10A3F
    10AE5-10AE6 11001 11038-11046 1107F-11081 110B3-110B6 110B9-110BA 11100-11102 11127-1112B 1112D 11130-11134
    11173 11180-11181 111B6-111BE 111CA-111CC 1122F-11231 11234 11236-11237 112DF 112E3-112EA 11300-11301 1133C
    11340 11366-1136C 11370-11374 114B3-114B8 114BA 114BF-114C0 114C2-114C3 115B2-115B5 115BC-115BD 115BF-115C0
    115DC-115DD 11633-1163A 1163D 1163F-11640 116AB 116AD 116B0-116B5 116B7 1171D-1171F 11722-11725 11727-1172B
    16AF0-16AF4 16B30-16B36 16F8F-16F92 1BC9D-1BC9E 1D167-1D169 1D17B-1D182 1D185-1D18B 1D1AA-1D1AD 1D242-1D244
    1DA00-1DA36 1DA3B-1DA6C 1DA75 1DA84 1DA9B-1DA9F 1DAA1-1DAAF 1E8D0-1E8D6 E0100-E01EF
split_space: 9-D 20 85 A0 1680 2000-200A 2028-2029 202F 205F 3000
punctuation: 21-2F 3A-40 5B-60 7B-7E A1 A7 AB B6-B7 BB BF 37E 387 55A-55F 589-58A 5BE 5C0 5C3 5C6 5F3-5F4
    609-60A 60C-60D 61B 61E-61F 66A-66D 6D4 700-70D 7F7-7F9 830-83E 85E 964-965 970 AF0 DF4 E4F E5A-E5B F04-F12 F14
    F3A-F3D F85 FD0-FD4 FD9-FDA 104A-104F 10FB 1360-1368 1400 166D-166E 169B-169C 16EB-16ED 1735-1736 17D4-17D6
    17D8-17DA 1800-180A 1944-1945 1A1E-1A1F 1AA0-1AA6 1AA8-1AAD 1B5A-1B60 1BFC-1BFF 1C3B-1C3F 1C7E-1C7F 1CC0-1CC7
    1CD3 2010-2027 2030-2043 2045-2051 2053-205E 207D-207E 208D-208E 2308-230B 2329-232A 2768-2775 27C5-27C6
    27E6-27EF 2983-2998 29D8-29DB 29FC-29FD 2CF9-2CFC 2CFE-2CFF 2D70 2E00-2E2E 2E30-2E42 3001-3003 3008-3011
    3014-301F 3030 303D 30A0 30FB A4FE-A4FF A60D-A60F A673 A67E A6F2-A6F7 A874-A877 A8CE-A8CF A8F8-A8FA A8FC
    A92E-A92F A95F A9C1-A9CD A9DE-A9DF AA5C-AA5F AADE-AADF AAF0-AAF1 ABEB FD3E-FD3F FE10-FE19 FE30-FE52 FE54-FE61
    FE63 FE68 FE6A-FE6B FF01-FF03 FF05-FF0A FF0C-FF0F FF1A-FF1B FF1F-FF20 FF3B-FF3D FF3F FF5B FF5D FF5F-FF65
    10100-10102 1039F 103D0 1056F 10857 1091F 1093F 10A50-10A58 10A7F 10AF0-10AF6 10B39-10B3F 10B99-10B9C
    11047-1104D 110BB-110BC 110BE-110C1 11140-11143 11174-11175 111C5-111C9 111CD 111DB 111DD-111DF 11238-1123D
    112A9 114C6 115C1-115D7 11641-11643 1173C-1173E 12470-12474 16A6E-16A6F 16AF5 16B37-16B3B 16B44 1BC9F
    1DA87-1DA8B
lower: 1C89:1C8A A7CB:264 A7CC:A7CD A7CE:A7CF A7D2:A7D3 A7D4:A7D5 A7DA:A7DB A7DC:19B 10D50:10D70 10D51:10D71
    10D52:10D72 10D53:10D73 10D54:10D74 10D55:10D75 10D56:10D76 10D57:10D77 10D58:10D78 10D59:10D79 10D5A:10D7A
    10D5B:10D7B 10D5C:10D7C 10D5D:10D7D 10D5E:10D7E 10D5F:10D7F 10D60:10D80 10D61:10D81 10D62:10D82 10D63:10D83
    10D64:10D84 10D65:10D85 16EA0:16EBB 16EA1:16EBC 16EA2:16EBD 16EA3:16EBE 16EA4:16EBF 16EA5:16EC0 16EA6:16EC1
    16EA7:16EC2 16EA8:16EC3 16EA9:16EC4 16EAA:16EC5 16EAB:16EC6 16EAC:16EC7 16EAD:16EC8 16EAE:16EC9 16EAF:16ECA
    16EB0:16ECB 16EB1:16ECC 16EB2:16ECD 16EB3:16ECE 16EB4:16ECF 16EB5:16ED0 16EB6:16ED1 16EB7:16ED2 16EB8:16ED3
"""


def _parse_tables(text):
    tables, name = {}, None
    for item in text.split():
        if item.endswith(":"):
            name = item[:-1]
            tables[name] = []
        elif name == "lower":
            cp, lower = item.split(":")
            tables[name].append((int(cp, 16), chr(int(lower, 16))))
        else:
            first, _, last = item.partition("-")
            tables[name].append((int(first, 16), int(last or first, 16)))
    return tables


class _Ranges:
    """Membership in sorted, disjoint code point ranges."""

    def __init__(self, ranges):
        self.starts = [a for a, _ in ranges]
        self.ends = [b for _, b in ranges]

    def __contains__(self, ch):
        i = bisect.bisect_right(self.starts, ord(ch)) - 1
        return i >= 0 and ord(ch) <= self.ends[i]


_T = _parse_tables(_TABLES)
_REMOVED, _SPACE, _CJK, _NONSPACING, _SPLIT_SPACE, _PUNCTUATION = (
    _Ranges(_T[name]) for name in ("removed", "space", "cjk", "nonspacing", "split_space", "punctuation"))
_OPAQUE = frozenset(chr(c) for a, b in _T["opaque"] for c in range(a, b + 1))
_LOWER = {chr(cp): lower for cp, lower in _T["lower"]}
del _T

# Per-character results (the classes never change, so the caches only grow with the characters seen).
_CLEANED, _FINISHED, _SPLIT = {}, {}, {}


def _clean(ch):
    """The normalizer's first steps for one character: delete controls, spaces to " ", space out CJK."""
    if ch in _REMOVED:
        return ""
    if ch in _SPACE:
        return " "
    if ch in _CJK:
        return f" {ch} "
    return ch


def _finish(ch):
    """The normalizer's last steps for one decomposed character: drop accents, lower-case it."""
    if ch in _NONSPACING:
        return ""
    return _LOWER.get(ch) or ch.lower()  # per character: no final sigma (Rust's `char::to_lowercase`)


def _map(text, cache, function):
    out = []
    for ch in text:
        mapped = cache.get(ch)
        if mapped is None:
            mapped = cache[ch] = function(ch)
        out.append(mapped)
    return "".join(out)


def _nfd(text):
    """NFD, leaving alone the characters the reference's tables do not decompose or reorder."""
    if text.isascii():
        return text
    if _OPAQUE.isdisjoint(text):
        return unicodedata.normalize("NFD", text)
    out, start = [], 0
    for i, ch in enumerate(text):
        if ch in _OPAQUE:  # a starter: canonical reordering never crosses it
            out.append(unicodedata.normalize("NFD", text[start:i]))
            out.append(ch)
            start = i + 1
    out.append(unicodedata.normalize("NFD", text[start:]))
    return "".join(out)


def normalize(text):
    """`BertNormalizer(lowercase=True)`: clean, space out CJK, NFD, strip accents, lower-case."""
    return _map(_nfd(_map(text, _CLEANED, _clean)), _FINISHED, _finish)


def _split_class(ch):
    return 1 if ch in _SPLIT_SPACE else 2 if ch in _PUNCTUATION else 0


def pre_tokenize(text):
    """`BertPreTokenizer`: split on whitespace (dropped) and punctuation (kept, one per word)."""
    words, current = [], []
    for ch in text:
        kind = _SPLIT.get(ch)
        if kind is None:
            kind = _SPLIT[ch] = _split_class(ch)
        if kind:
            if current:
                words.append("".join(current))
                current = []
            if kind == 2:
                words.append(ch)
        else:
            current.append(ch)
    if current:
        words.append("".join(current))
    return words


def _read_file(path, what):
    """The text of the `what` file at `path` (ConfigError naming it when missing)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ConfigError(f"{path}: {what} file not found.")
    with open(path, encoding="utf-8") as f:
        return f.read()


def _read_merges(merges):
    if isinstance(merges, (str, os.PathLike)):
        source = os.fspath(merges)
        lines = _read_file(source, "merges").split("\n")
        merges = []
        for number, line in enumerate(lines, 1):
            if not line.strip() or (number == 1 and line.startswith("#version")):
                continue
            parts = line.split(" ")
            if len(parts) != 2:
                raise ConfigError(
                    f"{source}:{number}: expected two space-separated symbols, found {line!r}."
                )
            merges.append(tuple(parts))
        return merges
    return [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]


def _read_vocabulary(vocabulary):
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        try:
            vocabulary = json.loads(_read_file(path, "vocabulary"))
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}: not valid JSON ({e}).") from None
    if not isinstance(vocabulary, dict):
        vocabulary = {token: i for i, token in enumerate(vocabulary)}
    return dict(vocabulary)


class GPTTokenizer:
    """GPT-1 byte-pair encoding over characters, lower-cased, '</w>' suffix.

    Args:
        vocabulary: `vocab.json` path, dict token -> id, or token list.
        merges: `merges.txt` path or list of "a b" strings / (a, b) pairs,
            in priority order.
        unk_token: the unknown token (must be in the vocabulary).
        special_tokens_in_strings: bool. False (the default): a special token
            written in the text (`"<unk>"`, `"_start_"`, ...) is text, split
            and encoded like any other word, as OpenAI's original code does,
            so a string cannot inject special ids. True: the unknown token
            and the tokens of `add_special_tokens` written in the text are
            read as their ids, as `transformers`' `OpenAIGPTTokenizer` does.

    Example:
    ```python
    tokenizer = GPTTokenizer("vocab.json", "merges.txt")
    ids = tokenizer.tokenize("Hello world!")
    text = tokenizer.detokenize(ids)
    ```

    Reference: `transformers.OpenAIGPTTokenizer` (its ids, character for
    character: see the tables above); the model is
    https://github.com/openai/finetune-transformer-lm (text_utils.py, which
    pre-tokenizes with ftfy and spaCy instead).
    """

    def __init__(self, vocabulary, merges, unk_token="<unk>", special_tokens_in_strings=False):
        self.vocabulary = _read_vocabulary(vocabulary)
        self.merges = _read_merges(merges)
        self.unk_token = unk_token
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        if unk_token not in self.vocabulary:
            raise ConfigError(f"The unknown token {unk_token!r} is not in the vocabulary.")
        self.special_tokens = [unk_token]
        self._special_pattern = None
        self.ranks = {pair: rank for rank, pair in enumerate(self.merges)}
        self.inverse = {i: t for t, i in self.vocabulary.items()}
        self._cache = {}

    # --- Vocabulary --------------------------------------------------------

    def vocabulary_size(self):
        return max(self.vocabulary.values()) + 1

    def get_vocabulary(self):
        return [self.inverse.get(i, "") for i in range(self.vocabulary_size())]

    def token_to_id(self, token):
        return self.vocabulary.get(token, self.vocabulary[self.unk_token])

    def id_to_token(self, index):
        return self.inverse[int(index)]

    def add_special_tokens(self, tokens):
        """Appends tokens (e.g. "_start_", "_delimiter_", "_classify_").

        Returns their ids. Special tokens are never produced by `tokenize`
        of plain text (unless `special_tokens_in_strings`); use the ids in
        `transform_inputs`.
        """
        ids = []
        for token in tokens:
            if token not in self.vocabulary:
                self.vocabulary[token] = self.vocabulary_size()
                self.inverse[self.vocabulary[token]] = token
            if token not in self.special_tokens:
                self.special_tokens.append(token)
                self._special_pattern = None
            ids.append(self.vocabulary[token])
        return ids

    # --- Encoding ----------------------------------------------------------

    def bpe(self, word):
        """The BPE pieces of one pre-tokenized word (lowest rank merged first)."""
        if word in self._cache:
            return self._cache[word]
        symbols = list(word[:-1]) + [word[-1] + SUFFIX]
        # Characters outside the vocabulary become the unknown token, which merges like any symbol (as in
        # `tokenizers`' BPE: a merge "<unk> a</w>" applies to it).
        symbols = [s if s in self.vocabulary else self.unk_token for s in symbols]
        while len(symbols) > 1:
            best, best_rank = None, None
            for i in range(len(symbols) - 1):
                rank = self.ranks.get((symbols[i], symbols[i + 1]))
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = i, rank
            if best is None:
                break
            symbols[best : best + 2] = [symbols[best] + symbols[best + 1]]
        self._cache[word] = symbols
        return symbols

    def _segments(self, text):
        """`text` cut around the special tokens written in it (when they are read as such)."""
        if not self.special_tokens_in_strings:
            return [text]
        if self._special_pattern is None:  # longest first: the leftmost, longest token wins
            tokens = sorted(self.special_tokens, key=len, reverse=True)
            self._special_pattern = re.compile("(" + "|".join(re.escape(t) for t in tokens) + ")")
        return self._special_pattern.split(text)  # odd positions: the special tokens

    def tokenize_to_pieces(self, text):
        """Token strings of `text` (e.g. ["hello</w>", "wor", "ld</w>"])."""
        pieces = []
        for i, segment in enumerate(self._segments(text)):
            if i % 2:
                pieces.append(segment)
                continue
            for word in pre_tokenize(normalize(segment)):
                pieces.extend(self.bpe(word))
        return pieces

    def tokenize(self, text):
        """Ids of one string, or a list of id lists for a list of strings."""
        if not isinstance(text, str):
            return [self.tokenize(t) for t in text]
        return [self.token_to_id(p) for p in self.tokenize_to_pieces(text)]

    def __call__(self, text):
        """Token strings (the callable form `tokenize_documents` accepts)."""
        return self.tokenize_to_pieces(text)

    def detokenize(self, ids):
        """Text of one id list: pieces joined, '</w>' read as a space."""
        if len(ids) and not isinstance(ids[0], (int,)) and hasattr(ids[0], "__len__"):
            return [self.detokenize(row) for row in ids]
        text = "".join(self.inverse.get(int(i), self.unk_token) for i in ids)
        return text.replace(SUFFIX, " ").strip()

    # --- Files -------------------------------------------------------------

    def save(self, folder):
        """Writes `vocab.json` and `merges.txt` into `folder`."""
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "vocab.json"), "w", encoding="utf-8") as f:
            json.dump(self.vocabulary, f, ensure_ascii=False)
        with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n")
            f.write("".join(f"{a} {b}\n" for a, b in self.merges))

    @classmethod
    def from_folder(cls, folder, unk_token="<unk>", special_tokens_in_strings=False):
        vocab = os.path.join(folder, "vocab.json")
        merges = os.path.join(folder, "merges.txt")
        for path in (vocab, merges):
            if not os.path.exists(path):
                raise ConfigError(f"{folder}: no {os.path.basename(path)} (GPT BPE needs vocab.json and merges.txt).")
        return cls(vocab, merges, unk_token=unk_token, special_tokens_in_strings=special_tokens_in_strings)


def learn_bpe(texts, vocabulary_size, unk_token="<unk>", min_frequency=2):
    """Learns GPT-1 style BPE merges (with '</w>') from an iterable of texts.

    The vocabulary is `unk_token`, every character seen (inside a word and
    word-final with '</w>'), then one entry per merge, most frequent pair
    first, until `vocabulary_size` entries or no pair occurs `min_frequency`
    times. Returns a `GPTTokenizer`.
    """
    import collections

    counts = collections.Counter()
    for text in texts:
        counts.update(pre_tokenize(normalize(text)))
    words = {w: list(w[:-1]) + [w[-1] + SUFFIX] for w in counts}
    vocabulary = {unk_token: 0}
    for symbols in words.values():
        for s in symbols:
            vocabulary.setdefault(s, len(vocabulary))
    pairs = collections.Counter()
    where = collections.defaultdict(set)
    for w, symbols in words.items():
        for a, b in zip(symbols, symbols[1:]):
            pairs[a, b] += counts[w]
            where[a, b].add(w)
    merges = []
    while len(vocabulary) < vocabulary_size and pairs:
        (a, b), freq = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if freq < min_frequency:
            break
        merges.append((a, b))
        vocabulary.setdefault(a + b, len(vocabulary))
        for w in list(where.pop((a, b), ())):
            symbols = words[w]
            for x, y in zip(symbols, symbols[1:]):
                pairs[x, y] -= counts[w]
                if pairs[x, y] <= 0:
                    del pairs[x, y]
            merged, i = [], 0
            while i < len(symbols):
                if i < len(symbols) - 1 and symbols[i] == a and symbols[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            words[w] = merged
            for x, y in zip(merged, merged[1:]):
                pairs[x, y] += counts[w]
                where[x, y].add(w)
        pairs.pop((a, b), None)
    return GPTTokenizer(vocabulary, merges, unk_token=unk_token)
