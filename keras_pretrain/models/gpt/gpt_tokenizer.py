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
ftfy/spaCy-less fallback of the original port). Tokenization runs in Python,
before tf.data (pretraining streams are built once from the corpus).
"""

import json
import os
import unicodedata

from keras_pretrain.errors import ConfigError

SUFFIX = "</w>"


def _is_control(ch):
    if ch in "\t\n\r":
        return False
    return unicodedata.category(ch) in ("Cc", "Cf")


def _is_whitespace(ch):
    return ch in " \t\n\r" or unicodedata.category(ch) == "Zs" or ch.isspace()


def _is_punctuation(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def _is_chinese(cp):
    return (
        0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF or 0x2F800 <= cp <= 0x2FA1F
    )


def normalize(text):
    """BERT normalization, lower-cased: clean, split CJK, strip accents, lower."""
    out = []
    for ch in text:
        cp = ord(ch)
        if cp == 0 or cp == 0xFFFD or _is_control(ch):
            continue
        if _is_whitespace(ch):
            out.append(" ")
        elif _is_chinese(cp):
            out.append(f" {ch} ")
        else:
            out.append(ch)
    text = unicodedata.normalize("NFD", "".join(out))
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Mn")
    return text.lower()


def pre_tokenize(text):
    """Split on whitespace (dropped) and punctuation (kept, one per word)."""
    words, current = [], []
    for ch in text:
        if _is_whitespace(ch):
            if current:
                words.append("".join(current))
                current = []
        elif _is_punctuation(ch):
            if current:
                words.append("".join(current))
                current = []
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

    Example:
    ```python
    tokenizer = GPTTokenizer("vocab.json", "merges.txt")
    ids = tokenizer.tokenize("Hello world!")
    text = tokenizer.detokenize(ids)
    ```

    Reference: https://github.com/openai/finetune-transformer-lm (text_utils.py).
    """

    def __init__(self, vocabulary, merges, unk_token="<unk>"):
        self.vocabulary = _read_vocabulary(vocabulary)
        self.merges = _read_merges(merges)
        self.unk_token = unk_token
        if unk_token not in self.vocabulary:
            raise ConfigError(f"The unknown token {unk_token!r} is not in the vocabulary.")
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
        of plain text; use the ids in `transform_inputs`.
        """
        ids = []
        for token in tokens:
            if token not in self.vocabulary:
                self.vocabulary[token] = self.vocabulary_size()
                self.inverse[self.vocabulary[token]] = token
            ids.append(self.vocabulary[token])
        return ids

    # --- Encoding ----------------------------------------------------------

    def bpe(self, word):
        """The BPE pieces of one pre-tokenized word (lowest rank merged first)."""
        if word in self._cache:
            return self._cache[word]
        symbols = list(word[:-1]) + [word[-1] + SUFFIX]
        # Characters outside the vocabulary become <unk> and never merge.
        symbols = [s if s in self.vocabulary else None for s in symbols]
        while len(symbols) > 1:
            best, best_rank = None, None
            for i in range(len(symbols) - 1):
                a, b = symbols[i], symbols[i + 1]
                if a is None or b is None:
                    continue
                rank = self.ranks.get((a, b))
                if rank is not None and (best_rank is None or rank < best_rank):
                    best, best_rank = i, rank
            if best is None:
                break
            symbols[best : best + 2] = [symbols[best] + symbols[best + 1]]
        pieces = [self.unk_token if s is None else s for s in symbols]
        self._cache[word] = pieces
        return pieces

    def tokenize_to_pieces(self, text):
        """Token strings of `text` (e.g. ["hello</w>", "wor", "ld</w>"])."""
        pieces = []
        for word in pre_tokenize(normalize(text)):
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
    def from_folder(cls, folder, unk_token="<unk>"):
        vocab = os.path.join(folder, "vocab.json")
        merges = os.path.join(folder, "merges.txt")
        for path in (vocab, merges):
            if not os.path.exists(path):
                raise ConfigError(f"{folder}: no {os.path.basename(path)} (GPT BPE needs vocab.json and merges.txt).")
        return cls(vocab, merges, unk_token=unk_token)


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
