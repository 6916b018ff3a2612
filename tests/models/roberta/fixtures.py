"""Shared RoBERTa test fixtures: a tiny byte-level BPE vocabulary written to disk."""

import json

MERGES = ["Ġ t", "h e", "Ġt he", "Ġ a", "i n", "Ġ w", "o r", "l l", "Ġw or", "Ġwor l", "Ġworl d",
          "e r", "Ġ f", "o x", "Ġf ox", "H e", "He ll", "Hell o", "Ġ q", "u i", "c k", "ui ck", "Ġq uick"]
TEXTS = ["Hello world, the quick fox.", "the fox jumped over the lazy dog", "Ünïcödé 100 tokens!!  ok",
         "quickquick\tworld"]


def byte_alphabet():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [chr(c) for c in cs]


def write_bpe_files(folder):
    """Writes vocab.json + merges.txt into `folder` (a pathlib.Path); returns their paths."""
    tokens = ["<s>", "<pad>", "</s>", "<unk>"] + byte_alphabet()
    tokens += ["".join(m.split()) for m in MERGES] + ["<mask>"]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(tokens))}
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(MERGES) + "\n", encoding="utf-8")
    return str(folder / "vocab.json"), str(folder / "merges.txt")
