"""Google's original tokenization code as test references, and the tricky texts.

`bert_reference(vocab_file, do_lower_case)` is `bert/tokenization.py`'s
`FullTokenizer` (PyPI `bert-tensorflow`); `albert_reference(model_file, lower)`
is `albert/tokenization.py`'s `preprocess_text` + `encode_ids` (PyPI
`albert-tensorflow`). Both are the `test` extra; tests skip without them.

The albert-tensorflow copy was checked against google-research/albert's
`tokenization.py` (commits 4135001f and 3c305463): `preprocess_text`,
`encode_pieces`, `encode_ids` and `printable_text` are identical; only
`load_vocab` (blank lines, WordPiece only) and how the SentencePiece model is
read differ, which the SentencePiece path does not use. Note that on Python 3
`encode_pieces` compares str pieces with the bytes `SPIECE_UNDERLINE`, so the
leading "▁" of a re-split digit-comma piece is never removed; that is the
behaviour of the original code as it runs (Python 3), and what we reproduce.
"""

import pytest

# (name, text): every case of issue 18, item 1 (and a few more).
TRICKY_TEXTS = [
    ("ideographic space", "hello\u3000world"),
    ("no-break space", "Hello\u00a0World"),
    ("thin space", "hello\u2009world"),
    ("line separator", "hello\u2028world\u2029the"),
    ("tab newline", "hello\tworld\r\nthe\x0bend"),
    ("NUL in a word", "hel\x00lo world"),
    ("NUL then text", "Hello\x00 World the end"),
    ("bell", "hel\x07lo wor\x07ld"),
    ("zero-width space", "hel\u200blo World"),
    ("BOM", "\ufeffHello world"),
    ("replacement char", "hel\ufffdlo"),
    ("accents", "Café naïve RÉSUMÉ résumé"),
    ("decomposed accent", "Cafe\u0301 cafe\u0301"),
    ("dotted capital I", "İstanbul"),
    ("greek", "ΟΔΟΣ οδος"),
    ("CJK without spaces", "中国人说你好"),
    ("CJK with spaces", "中 国 人 说"),
    ("CJK and latin", "hello中国world"),
    ("full-width punctuation", "你好：世界，再见。"),
    ("CJK compatibility ideograph", "\uf900中"),
    ("emoji", "I ❤️ the 😀 world😀s"),
    ("digits and punctuation", "$1,000.50 and 3.14% (42)!? 2019-10-01"),
    ("150-character word", "a" * 150),
    ("200-character word", "a" * 200 + " the"),
    ("201-character word", "a" * 201 + " the"),
    ("40-character Thai word", "ก" * 40),
    ("empty", ""),
    ("only controls", "\x00\x07\u200b"),
]

THAI_WORD = "ก" * 40


def bert_reference(vocab_file, do_lower_case):
    """`text -> ids` of Google's `FullTokenizer`."""
    tokenization = pytest.importorskip("bert.tokenization")
    from absl import flags

    if not flags.FLAGS.is_parsed():  # `preserve_unused_tokens` (default False) is read
        flags.FLAGS.mark_as_parsed()
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    return lambda text: tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


def albert_reference(model_file, lower):
    """`text -> ids` of the original ALBERT pipeline: `preprocess_text` + `encode_ids`."""
    tokenization = pytest.importorskip("albert.tokenization")
    import sentencepiece as spm

    processor = spm.SentencePieceProcessor(model_file=model_file)
    return lambda text: tokenization.encode_ids(
        processor, tokenization.preprocess_text(text, lower=lower)
    )


def write_vocab(path, pieces):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    return str(path)


SPECIALS = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"]
COMMON = [
    ",", ".", "!", "?", "$", "%", "(", ")", "-", ":", "0", "1", "2", "3", "4", "5", "9",
    "##0", "##1", "##4", "##5", "##9", "a", "##a", "the", "end", "world", "##s", "😀", "❤",
    "中", "国", "人", "说", "你", "好", "世", "界", "再", "见", "：", "，", "。", "豈", THAI_WORD,
]
# Uncased English: only lower-case pieces (plus the bracketed specials).
UNCASED_VOCAB = SPECIALS + COMMON + [
    "hello", "hel", "##lo", "wor", "##ld", "cafe", "naive", "resume", "istanbul", "i",
    "οδος", "οδοσ", "and", "##n", "##ul",
]
CASED_VOCAB = SPECIALS + COMMON + [
    "Hello", "hello", "hel", "##lo", "World", "wor", "##ld", "Café", "Cafe", "##́", "naïve", "RÉSUMÉ",
    "résumé", "İstanbul", "I", "ΟΔΟΣ", "οδος", "and", "cafe",
]
CHINESE_VOCAB = SPECIALS + COMMON + ["hello", "##lo", "##ld", "cafe", "i", "and"]


# The head of a subprocess script that imports the authors' TF1 code (after `import sys, types`): TensorFlow seen
# as `tensorflow.compat.v1`, and `tensorflow.contrib.*` as stand-ins whose attributes are never used.
TF1_SUBPROCESS_STUBS = '''import tensorflow as tf

class _Stub(types.ModuleType):
    def __getattr__(self, name):
        return _Stub(self.__name__ + "." + name)

sys.modules["tensorflow"] = tf.compat.v1
for name in ("contrib", "contrib.data", "contrib.metrics", "contrib.tpu", "contrib.layers"):
    sys.modules["tensorflow." + name] = _Stub("tensorflow." + name)
'''


def bert_run_squad():
    """bert-tensorflow's `run_squad.py` module (its readers are pure Python).

    It is TF1 code (`tf.flags`, `tf.gfile`, `tf.contrib` imports): imported with `tensorflow` seen as
    `tensorflow.compat.v1` and `tensorflow.contrib` as an empty stand-in, both restored afterwards.
    """
    import importlib
    import sys
    import types

    pytest.importorskip("bert.tokenization")
    import tensorflow as tf
    from absl import flags

    class _Stub(types.ModuleType):
        def __getattr__(self, name):
            return _Stub(name)

    saved = {name: sys.modules.get(name) for name in ("tensorflow", "tensorflow.contrib")}
    sys.modules["tensorflow"] = tf.compat.v1
    sys.modules["tensorflow.contrib"] = _Stub("tensorflow.contrib")
    try:
        module = importlib.import_module("bert.run_squad")
    finally:
        for name, value in saved.items():
            if value is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = value
    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    return module


def bert_squad_doc_tokens(path):
    """`doc_tokens` of each example `bert/run_squad.py`'s `read_squad_examples` reads from `path`.

    In a subprocess: the module defines absl flags that other authors' modules (`create_pretraining_data`)
    define too, which one process refuses.
    """
    import json
    import os
    import subprocess
    import sys

    pytest.importorskip("bert.tokenization")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = ("import json, sys\nfrom tests.originals import bert_run_squad\n"
            "examples = bert_run_squad().read_squad_examples(sys.argv[1], is_training=False)\n"
            "print('DOC ' + json.dumps([e.doc_tokens for e in examples]))")
    result = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=root,
                            env=dict(os.environ, PYTHONPATH=root))
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.split("DOC ", 1)[1])
