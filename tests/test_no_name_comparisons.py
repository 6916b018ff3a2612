"""Code asks a family's objects, never its names (issue 38, item 1): no comparison of a family, contract,
packing, vocabulary or kind with a string outside the registry (`keras_pretrain/families.py`)."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("keras_pretrain", "recipes", "hub_modules", "benchmarks")
ALLOWED = {os.path.join("keras_pretrain", "families.py")}
COMPARISON = re.compile(r"""(contract|packing|family|vocabulary|kind)[a-z_.]*\s*(==|!=|\bin\b|\bnot in\b)\s*[(\["']""")


def comparisons(text):
    return [line.strip() for line in text.splitlines() if COMPARISON.search(line)]


def offending_lines(check, allowed):
    """`path: line` for every line `check(text)` returns, in the project's Python files outside `allowed`."""
    found = []
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(base, name)
                if name.endswith(".py") and os.path.relpath(path, ROOT) not in allowed:
                    with open(path, encoding="utf-8") as f:
                        found += [f"{os.path.relpath(path, ROOT)}: {line}" for line in check(f.read())]
    return found


def test_no_family_name_comparisons():
    found = offending_lines(comparisons, ALLOWED)
    assert found == [], "\n".join(found)


def test_the_check_finds_comparisons():
    assert comparisons('if family == "elmo":\n    pass') == ['if family == "elmo":']
    assert comparisons('x = contract in ("bert", "roberta")') == ['x = contract in ("bert", "roberta")']
    assert comparisons("if families.get(f).packing != 'gpt':") == ["if families.get(f).packing != 'gpt':"]
    assert comparisons("if family.contract.mlm:") == []


# Tokenizer type switches (issue 66, item 2): the kind of a tokenizer is asked of `keras_pretrain.models.pieces`
# (how its pieces mark words) or of the SQuAD feature pipelines' registry, never switched on elsewhere.
TOKENIZER_REGISTRIES = {os.path.join("keras_pretrain", "models", "pieces.py"),
                        os.path.join("keras_pretrain", "tasks", "question_answering", "pipelines.py")}
# Checks that refuse a tokenizer of the wrong class (an error, not a choice of behaviour).
TOKENIZER_CHECKS = ("not isinstance(tokenizer, family.our_tokenizer)",)
TOKENIZER_SWITCH = re.compile(r"""isinstance\(\s*[\w.]*tokenizer\w*\s*,\s*(?!keras\.layers\.Layer\b)[\w.(]""")


def tokenizer_switches(text):
    return [line.strip() for line in text.splitlines()
            if TOKENIZER_SWITCH.search(line) and not any(check in line for check in TOKENIZER_CHECKS)]


def test_no_tokenizer_type_switches_outside_the_registries():
    found = offending_lines(tokenizer_switches, TOKENIZER_REGISTRIES)
    assert found == [], "\n".join(found)


def test_the_check_finds_tokenizer_switches():
    assert tokenizer_switches("if isinstance(tokenizer, BertTokenizer):") == ["if isinstance(tokenizer, BertTokenizer):"]
    assert tokenizer_switches("bpe = isinstance(self.tokenizer, keras_hub.tokenizers.BytePairTokenizer)") == [
        "bpe = isinstance(self.tokenizer, keras_hub.tokenizers.BytePairTokenizer)"]
    assert tokenizer_switches("return not isinstance(tokenizer, keras.layers.Layer)") == []
    assert tokenizer_switches("if isinstance(tokens, list):") == []
