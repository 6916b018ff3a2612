#!/usr/bin/env python3
"""Build the small bilingual demo corpus from Debian fortune-cookie packages.

Inputs (unpacked Debian packages, see README.md):
  * fortunes-min, fortunes (1:1.99.1-7.3, BSD licence): English fortune files.
  * fortunes-zh (2.98, GPL-3.0+): classical Chinese poems and sayings.

Outputs (written to --out-dir, default: the folder of this script):
  * pretrain.txt  BERT pretraining format: one sentence per line, a blank line
                  between documents, English and Chinese documents interleaved.
  * classify.tsv  label<TAB>text, four source categories (see README.md).
  * pairs.tsv     label<TAB>text_a<TAB>text_b, 1 = text_b follows text_a in
                  the same document, 0 = text_b comes from another document.

Deterministic: inputs are read in sorted order and every random choice uses
random.Random(--seed). Standard library only.

  python corpus/build_corpus.py --fortunes-dir /usr/share/games/fortunes
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import unicodedata
from dataclasses import dataclass, field

DEFAULT_FORTUNES_DIR = "/usr/share/games/fortunes"
MAX_LINE = 300

# English collections used (fortunes-min: fortunes, literature, riddles; the
# rest from fortunes). Left out on purpose: ascii-art (pictures),
# translate-me (non-English), disclaimer (boilerplate), zippy (nonsense
# comic strip lines), knghtbrd (IRC logs), and the collections most likely to hold jokes about
# groups of people or contested topics: ethnic, men-women, politics, drugs.
# fortunes-off (the offensive collections) is never read.
EN_FILES = (
    "art", "computers", "cookie", "debian", "definitions", "education",
    "food", "fortunes", "goedel", "humorists", "kids", "law",
    "linux", "linuxcookie", "literature", "love", "magic", "medicine",
    "miscellaneous", "news", "paradoxum", "people", "perl", "pets",
    "platitudes", "pratchett", "riddles", "science", "songs-poems", "sports",
    "startrek", "tao", "wisdom", "work",
)
ZH_POEM_FILES = ("song100", "tang300")
ZH_MIXED_FILE = "chinese"

# Works of the fortunes-zh "chinese" file that are kept, by attribution.
ZH_WORKS = (
    ("论语", "lunyu"),
    ("道德经", "daodejing"),
    ("菜根谭", "caigentan"),
    ("增广贤文", "zengguang"),
    ("谚语", "proverbs"),
)

# A few words that mark a fortune as unsuitable for a demo corpus.
PROFANITY = re.compile(
    r"\b(ass|asses|arse|fuck\w*|shit\w*|cunt\w*|bitch\w*|asshole\w*|bastard\w*|"
    r"cock|cocks|piss\w*|whore\w*|slut\w*|rape\w*|raping|nazi\w*|fag\w*|"
    r"retard\w*|porn\w*|sex\w*|nigg\w*)\b",
    re.IGNORECASE,
)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OVERSTRIKE = re.compile(r".\x08")
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

# Classification demo: label -> (language, source categories).
CLASSIFY_CLASSES = (
    ("computers", "en", ("computers",)),
    ("science", "en", ("science",)),
    ("poetry", "zh", ("tang300", "song100", "poetry")),
    ("sayings", "zh", ("lunyu", "daodejing", "caigentan", "zengguang", "proverbs")),
)


@dataclass
class Doc:
    lang: str
    source: str  # file name, e.g. "computers" or "tang300"
    category: str  # collection or work, e.g. "science", "lunyu", "poetry"
    sentences: list[str] = field(default_factory=list)
    body: list[bool] = field(default_factory=list)  # False: title/attribution
    merged: bool = False  # several short sayings of one work in one document

    def add(self, sentence: str, is_body: bool = True) -> None:
        self.sentences.append(sentence)
        self.body.append(is_body)

    def text(self) -> str:
        return "\n".join(self.sentences)


# --------------------------------------------------------------------------
# Reading fortune files


def source_entries(fortunes_dir: str, name: str, packages: str) -> list[str]:
    """The entries of the source file `name` of `fortunes_dir`; exits naming the `packages` to install when the
    file is missing."""
    path = os.path.join(fortunes_dir, name)
    if not os.path.exists(path):
        sys.exit(f"missing {path}: install {packages} (README.md)")
    return read_entries(path)


def read_entries(path: str) -> list[str]:
    """Entries of a strfile source file ('%' lines separate them), cleaned."""
    with open(path, "rb") as f:
        raw = f.read().decode("utf-8", errors="replace")
    raw = raw.replace("\r\n", "\n").replace("\r", "\n")
    entries = []
    for chunk in re.split(r"^%[ \t]*$", raw, flags=re.MULTILINE):
        if re.search(r"[\x80-\x9f\ufffd]|\u00e2\u0080|\u00c3[\u0080-\u00bf]", chunk):
            continue  # mis-encoded text (mojibake)
        chunk = ANSI.sub("", chunk)
        while OVERSTRIKE.search(chunk):
            chunk = OVERSTRIKE.sub("", chunk)
        chunk = unicodedata.normalize("NFC", chunk)
        chunk = "".join(ch for ch in chunk if unicodedata.category(ch) != "Cf")
        chunk = CONTROL.sub("", chunk.replace("\t", "    ").replace("\f", ""))
        # Keep tabs visible as runs of spaces: column layouts are detected later.
        chunk = chunk.strip("\n")
        if chunk.strip():
            entries.append(chunk)
    return entries


def collapse(text: str) -> str:
    return " ".join(text.split())


def collapse_zh(text: str) -> str:
    """Collapse whitespace; drop it entirely between two CJK characters."""
    text = collapse(text)
    return re.sub(r"(?<=[\u2e80-\uffff]) (?=[\u2e80-\uffff])", "", text)


def split_attribution(lines: list[str]) -> tuple[list[str], str]:
    """Split trailing '-- Author' lines (with their continuation lines) off."""
    for j in range(len(lines) - 1, max(-1, len(lines) - 5), -1):
        if re.match(r"^\s*(--|\u2014)\s*\S", lines[j]) and j > 0:
            attribution = collapse(" ".join(lines[j:]))
            attribution = re.sub(r"^(--|\u2014)\s*", "", attribution)
            return lines[:j], attribution
    return lines, ""


# --------------------------------------------------------------------------
# Sentence splitting

EN_ABBREV = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "rev", "gen", "col",
    "capt", "lt", "sgt", "gov", "sen", "rep", "pres", "vs", "etc", "e.g", "i.e",
    "cf", "no", "nos", "vol", "fig", "mt", "ft", "inc", "ltd", "co", "corp",
    "dept", "univ", "approx", "u.s", "u.k", "a.m", "p.m", "ph.d", "b.c", "a.d",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec", "ave", "adj", "adv", "prep", "pron", "conj", "interj", "tr",
    "intr", "pl", "vt", "vi", "abbr", "blvd", "esq", "op", "ed", "eds", "pp", "ch", "sec",
}
EN_END = re.compile(r"[.!?]+[\"'\)\]]*(?=\s|$)")


def split_en(text: str) -> list[str]:
    """Split English text (lines joined with '\\n') into sentences.

    A sentence ends at . ! ? (plus closing quotes/brackets) followed by
    whitespace, unless the word is a known abbreviation or an initial, or the
    next word starts with a lower-case letter.
    """
    sentences, start = [], 0
    for m in EN_END.finditer(text):
        if m.group(0) == ".":
            so_far = text[start:m.start()]
            word = re.search(r"[\w.]*$", so_far).group(0).lower().strip(".")
            if word in EN_ABBREV or re.fullmatch(r"[a-z]", word):
                continue
            # Enumerations: "1.", "iv." at the start of a sentence or after ':'.
            if re.search(r"(^|[:\n])\s*(\d{1,2}|[ivxIVX]{1,4})$", so_far.strip(" ")):
                continue
        rest = text[m.end():].lstrip()
        if rest and rest[0].islower():
            continue
        sentences.append(text[start:m.end()])
        start = m.end()
    sentences.append(text[start:])
    return [s for s in sentences if s.strip()]


ZH_END = re.compile(r"[。！？；!?]+[”’」』）)\"']*")


def split_zh(text: str) -> list[str]:
    parts, start = [], 0
    for m in ZH_END.finditer(text):
        parts.append(text[start:m.end()])
        start = m.end()
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def fit_length(sentence: str, lang: str) -> list[str]:
    """Break a sentence longer than MAX_LINE characters.

    English: at original line breaks ('\\n'), then ; : , and spaces.
    Chinese: after '，' (then '、' and any character as a last resort).
    """
    flat = collapse(sentence) if lang == "en" else collapse_zh(sentence)
    if len(flat) <= MAX_LINE:
        return [flat]
    if lang == "en":
        seps = ["\n", "; ", ": ", ", ", " "]
    else:
        seps = ["，", "、", "：", ""]
    return _greedy(sentence, seps, lang)


def _greedy(text: str, seps: list[str], lang: str) -> list[str]:
    norm = collapse if lang == "en" else collapse_zh
    if len(norm(text)) <= MAX_LINE:
        return [norm(text)]
    if not seps:
        flat = norm(text)
        return [flat[i:i + MAX_LINE].strip() for i in range(0, len(flat), MAX_LINE)]
    sep, rest = seps[0], seps[1:]
    if sep == "":
        return _greedy(text, [], lang)
    pieces = [p + sep for p in text.split(sep)]
    pieces[-1] = pieces[-1][: -len(sep)]
    out, cur = [], ""
    for p in pieces:
        if cur and len(norm(cur + p)) > MAX_LINE:
            out.append(cur)
            cur = p
        else:
            cur += p
    if cur:
        out.append(cur)
    result = []
    for chunk in out:
        result.extend(_greedy(chunk, rest, lang))
    return [r for r in result if r]


# --------------------------------------------------------------------------
# English documents


def english_docs(fortunes_dir: str) -> list[Doc]:
    docs = []
    for name in sorted(EN_FILES):
        for entry in source_entries(fortunes_dir, name, "fortunes and fortunes-min"):
            doc = english_doc(entry, name)
            if doc is not None:
                docs.append(doc)
    return docs


def english_doc(entry: str, source: str) -> Doc | None:
    if PROFANITY.search(entry):
        return None
    lines = entry.split("\n")
    # Column layouts (two poems side by side, tables) and code do not survive
    # joining lines: skip them.
    if any(re.search(r"\S {3,}\S", ln.strip()) for ln in lines):
        return None
    if any(ch in entry for ch in "{}<>|\\@") or re.search(r"[=#*_~^]{2,}|\$[A-Za-z_]|/\*|\w\(.*\);", entry):
        return None  # code, IRC logs, e-mail addresses
    if any(not ch.isascii() and unicodedata.category(ch)[0] not in "LP" for ch in entry):
        return None
    lines, attribution = split_attribution(lines)
    # Paragraphs: lines joined with '\n' so that over-long sentences can be
    # broken at the original line ends.
    text = "\n".join(ln.strip() for ln in lines if ln.strip())
    doc = Doc("en", source, source)
    for sentence in split_en(text):
        for piece in fit_length(sentence, "en"):
            doc.add(piece)
    if attribution:
        for piece in fit_length(attribution, "en"):
            doc.add(piece, is_body=False)
    if len(doc.sentences) < 2 or not good_doc(doc):
        return None
    return doc


def good_doc(doc: Doc) -> bool:
    for s in doc.sentences:
        # Placeholders for characters missing from the source, private-use
        # and unassigned code points.
        if any(ch in "□○" or unicodedata.category(ch) in ("Co", "Cn", "Cs") for ch in s):
            return False
        letters = sum(ch.isalnum() for ch in s)
        if letters < 0.5 * len(s) or len(s) > MAX_LINE:
            return False
    return True


# --------------------------------------------------------------------------
# Chinese documents

ZH_PUNCT = set("，。！？；：、,.!?;")
ZH_HEADING = re.compile(r"^(其[一二三四五六七八九十]+|[一二三四五六七八九十]+)$")


def zh_sentences(lines: list[str]) -> tuple[str, list[str]]:
    """(header, sentences) of Chinese body lines.

    Leading lines without any punctuation (title, dynasty and author) form
    one header sentence; numbering lines (其一) are dropped; the other lines
    are joined without separator and split after 。！？；.
    """
    lines = [collapse_zh(ln) for ln in lines]
    lines = [ln for ln in lines if ln]
    header = []
    while lines and not (set(lines[0]) & ZH_PUNCT) and len(lines[0]) <= 60:
        header.append(lines.pop(0))
    sentences, buf = [], ""
    for ln in lines:
        if ZH_HEADING.match(ln):
            sentences.extend(split_zh(buf))
            buf = ""
            continue
        buf += ln
    sentences.extend(split_zh(buf))
    out = []
    for s in sentences:
        out.extend(fit_length(s, "zh"))
    return " ".join(h for h in header if not ZH_HEADING.match(h)), out


def zh_poem_docs(fortunes_dir: str) -> list[Doc]:
    """tang300 / song100: title line, author line, then the poem."""
    docs = []
    for name in sorted(ZH_POEM_FILES):
        for entry in source_entries(fortunes_dir, name, "fortunes-zh"):
            lines = entry.split("\n")
            title = collapse_zh(re.sub(r"^题目[:：]", "", lines[0].strip()))
            author = collapse_zh(lines[1].strip()) if len(lines) > 1 else ""
            if not author.startswith("作者"):
                author, rest = "", lines[1:]
            else:
                rest = lines[2:]
            author = re.sub(r"^作者[:：]\s*", "", author)
            header, sentences = zh_sentences(rest)
            doc = Doc("zh", name, name)
            doc.add(collapse_zh(f"{author}{title}"), is_body=False)
            if header:
                sentences = [header] + sentences
            for s in sentences:
                doc.add(s)
            if sum(doc.body) >= 1 and len(doc.sentences) >= 2 and good_doc(doc):
                docs.append(doc)
    return docs


def zh_mixed_docs(fortunes_dir: str) -> list[Doc]:
    """The fortunes-zh 'chinese' file: keep only the classical parts.

    Kept: the sayings attributed to 论语, 道德经, 菜根谭, 增广贤文 and 谚语
    (proverbs), and the classical poetry that the file holds between its
    first 菜根谭 entry and its last 增广贤文 entry (Tang and Song poems and
    ci, the Shijing, the Great Learning), less the 20th-century poems of that
    stretch. Left out: the Debian documentation, free-software and computing
    quotes, and quotes from modern authors and films.

    Consecutive one-sentence sayings of the same work are merged into one
    document of up to four sayings, followed by the work's title.
    """
    entries = []
    for entry in source_entries(fortunes_dir, ZH_MIXED_FILE, "fortunes-zh"):
        lines = entry.split("\n")
        body, attribution = split_attribution(lines)
        attribution = collapse_zh(attribution)
        category = ""
        for work, cat in ZH_WORKS:
            if work in attribution:
                category = cat
                attribution = f"《{work}》"
                break
        entries.append((body, attribution, category))
    first = next(i for i, e in enumerate(entries) if e[2] == "caigentan")
    last = max(i for i, e in enumerate(entries) if e[2] == "zengguang")

    docs: list[Doc] = []
    group: list[str] = []
    group_cat, group_attr = "", ""

    def flush() -> None:
        nonlocal group, group_cat
        if group:
            doc = Doc("zh", ZH_MIXED_FILE, group_cat, merged=len(group) > 1)
            for s in group:
                doc.add(s)
            doc.add(group_attr, is_body=False)
            if good_doc(doc):
                docs.append(doc)
        group, group_cat = [], ""

    for i, (body, attribution, category) in enumerate(entries):
        if not category:
            if not first <= i <= last or "毛泽东" in "".join(body) + attribution:
                continue
            category = "poetry"
            if re.search(r"[A-Za-z]{3,}", attribution + "".join(body)):
                continue
        header, sentences = zh_sentences(body)
        if category != "poetry" and header and not sentences:
            header, sentences = "", [header]
        if category in dict((c, w) for w, c in ZH_WORKS) and len(sentences) == 1 and not header:
            if group and (group_cat != category or len(group) >= 4):
                flush()
            group.append(sentences[0])
            group_cat, group_attr = category, attribution
            continue
        flush()
        doc = Doc("zh", ZH_MIXED_FILE, category)
        if header:
            doc.add(header, is_body=False)
        for s in sentences:
            doc.add(s)
        if attribution:
            doc.add(attribution, is_body=False)
        if sum(doc.body) >= 1 and len(doc.sentences) >= 2 and good_doc(doc):
            docs.append(doc)
    flush()
    return docs


# --------------------------------------------------------------------------
# Assembling the outputs


def dedup(docs: list[Doc]) -> list[Doc]:
    seen, out = set(), []
    for d in docs:
        key = hashlib.sha1(re.sub(r"\W", "", "".join(d.sentences).lower()).encode()).hexdigest()
        if key not in seen:
            seen.add(key)
            out.append(d)
    return out


def doc_bytes(doc: Doc) -> int:
    return len(doc.text().encode("utf-8")) + 2


def choose(en: list[Doc], zh: list[Doc], max_bytes: int, rng: random.Random):
    """Same number of documents per language, as many as max_bytes allows."""
    rng.shuffle(en)
    rng.shuffle(zh)
    n = min(len(en), len(zh))
    while n > 0:
        total = sum(doc_bytes(d) for d in en[:n]) + sum(doc_bytes(d) for d in zh[:n])
        if total <= max_bytes:
            break
        n -= max(1, n // 100)
    return en[:n], zh[:n]


def interleave(en: list[Doc], zh: list[Doc]) -> list[Doc]:
    out, i, j = [], 0, 0
    while i < len(en) or j < len(zh):
        # Keep the two languages in proportion along the whole file.
        if j >= len(zh) or (i < len(en) and i * len(zh) <= j * len(en)):
            out.append(en[i])
            i += 1
        else:
            out.append(zh[j])
            j += 1
    return out


def write_pretrain(path: str, docs: list[Doc]) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n\n".join(d.text() for d in docs) + "\n")


def tsv_field(text: str) -> str:
    return collapse(text.replace("\t", " "))


def write_classify(path: str, docs: list[Doc], per_class: int, rng: random.Random):
    rows = []
    for label, lang, cats in CLASSIFY_CLASSES:
        pool = []
        for d in docs:
            if d.lang == lang and d.category in cats:
                for s, is_body in zip(d.sentences, d.body):
                    min_len = 30 if lang == "en" else 10
                    if is_body and len(s) >= min_len:
                        pool.append(s)
        pool = sorted(set(pool))
        if len(pool) < per_class:
            sys.exit(f"class {label}: only {len(pool)} sentences")
        rows.extend((label, s) for s in rng.sample(pool, per_class))
    rng.shuffle(rows)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("label\ttext\n")
        for label, s in rows:
            f.write(f"{label}\t{tsv_field(s)}\n")
    return rows


def write_pairs(path: str, docs: list[Doc], per_lang_label: int, rng: random.Random):
    rows = []
    for lang in ("en", "zh"):
        ds = [d for d in docs if d.lang == lang]
        # Consecutive body sentences; documents merged from separate sayings
        # are left out (their sentences do not continue one another).
        cands = [(k, i) for k, d in enumerate(ds) if not d.merged
                 for i in range(len(d.sentences) - 1) if d.body[i] and d.body[i + 1]]
        picks = rng.sample(cands, 2 * per_lang_label)
        for n, (k, i) in enumerate(picks):
            a = ds[k].sentences[i]
            if n < per_lang_label:
                rows.append((1, a, ds[k].sentences[i + 1]))
            else:
                while True:
                    k2 = rng.randrange(len(ds))
                    if k2 != k:
                        break
                body = [s for s, b in zip(ds[k2].sentences, ds[k2].body) if b]
                rows.append((0, a, rng.choice(body)))
    rng.shuffle(rows)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("label\ttext_a\ttext_b\n")
        for label, a, b in rows:
            f.write(f"{label}\t{tsv_field(a)}\t{tsv_field(b)}\n")
    return rows


def stats(docs: list[Doc], lang: str) -> str:
    ds = [d for d in docs if d.lang == lang]
    sents = sum(len(d.sentences) for d in ds)
    chars = sum(len(s) for d in ds for s in d.sentences)
    nbytes = sum(len(s.encode()) for d in ds for s in d.sentences)
    return f"{lang}: {len(ds)} documents, {sents} sentences, {chars} characters, {nbytes} bytes"


def main(argv=None) -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fortunes-dir", default=DEFAULT_FORTUNES_DIR,
                   help="folder holding the fortune files of fortunes, fortunes-min and fortunes-zh")
    p.add_argument("--out-dir", default=here)
    p.add_argument("--max-bytes", type=int, default=1_700_000, help="size limit of pretrain.txt")
    p.add_argument("--seed", type=int, default=20240501)
    p.add_argument("--classify-per-class", type=int, default=400)
    p.add_argument("--pairs-per-label", type=int, default=100,
                   help="rows per (language, label); pairs.tsv has 4 times as many")
    args = p.parse_args(argv)

    en_all = dedup(english_docs(args.fortunes_dir))
    zh_all = dedup(zh_poem_docs(args.fortunes_dir) + zh_mixed_docs(args.fortunes_dir))

    rng = random.Random(args.seed)
    en, zh = choose(list(en_all), list(zh_all), args.max_bytes, rng)
    docs = interleave(en, zh)
    os.makedirs(args.out_dir, exist_ok=True)
    write_pretrain(os.path.join(args.out_dir, "pretrain.txt"), docs)
    classify = write_classify(os.path.join(args.out_dir, "classify.tsv"), en_all + zh_all,
                              args.classify_per_class, random.Random(args.seed + 1))
    pairs = write_pairs(os.path.join(args.out_dir, "pairs.tsv"), docs,
                        args.pairs_per_label, random.Random(args.seed + 2))

    size = os.path.getsize(os.path.join(args.out_dir, "pretrain.txt"))
    print(f"pretrain.txt: {size} bytes, {len(docs)} documents "
          f"(of {len(en_all)} English and {len(zh_all)} Chinese available)")
    print("  " + stats(docs, "en"))
    print("  " + stats(docs, "zh"))
    print(f"classify.tsv: {len(classify)} rows, {args.classify_per_class} per class: "
          + ", ".join(c[0] for c in CLASSIFY_CLASSES))
    print(f"pairs.tsv: {len(pairs)} rows, {sum(r[0] for r in pairs)} positive")


if __name__ == "__main__":
    main()
