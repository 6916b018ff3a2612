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


def test_no_family_name_comparisons():
    found = []
    for folder in FOLDERS:
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                path = os.path.join(base, name)
                if name.endswith(".py") and os.path.relpath(path, ROOT) not in ALLOWED:
                    with open(path, encoding="utf-8") as f:
                        found += [f"{os.path.relpath(path, ROOT)}: {line}" for line in comparisons(f.read())]
    assert found == [], "\n".join(found)


def test_the_check_finds_comparisons():
    assert comparisons('if family == "elmo":\n    pass') == ['if family == "elmo":']
    assert comparisons('x = contract in ("bert", "roberta")') == ['x = contract in ("bert", "roberta")']
    assert comparisons("if families.get(f).packing != 'gpt':") == ["if families.get(f).packing != 'gpt':"]
    assert comparisons("if family.contract.mlm:") == []
