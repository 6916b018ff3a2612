"""The benchmarks package imports downward only (DESIGN.md, "Imports go down the list ... benchmarks/ included"):
no import cycle between its modules and no module importing itself, counting the imports inside functions too.

Read with `ast` only: nothing is imported, so the check takes milliseconds and needs no framework."""

import ast
import functools
import os

from tests.test_layering import ROOT
from tests.test_layering import cycles

PACKAGE = "benchmarks"
# The leaf modules and what of the package each may import (DESIGN.md: shared helpers in leaf modules).
LEAVES = {"benchmarks.report": set(), "benchmarks.machine": set(), "benchmarks.fixtures": {"benchmarks.machine"},
          "benchmarks.harness": {"benchmarks.machine", "benchmarks.report"}}


def imported_names(tree, package):
    """Every dotted name the `import` and `from ... import` statements of `tree` name, at any depth (relative
    ones resolved in the flat `package`)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = ".".join(part for part in (package if node.level else "", node.module or "") if part)
            yield module
            yield from (f"{module}.{alias.name}" for alias in node.names)


def graph(folder, package):
    """module name -> set of the modules of `package` (the .py files of `folder`) it imports, itself included
    when it imports itself; top-level and function-level `import` / `from ... import` alike."""
    files = {f"{package}.{file[:-3]}".removesuffix(".__init__"): os.path.join(folder, file)
             for file in os.listdir(folder) if file.endswith(".py")}

    def owner(name):  # the longest prefix of `name` that is a module of the package
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    edges = {}
    for module, path in files.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        # the package itself does not count: its __init__ only documents
        edges[module] = {owner(name) for name in imported_names(tree, package)} - {"", package}
    return edges


def self_imports(edges):
    return sorted(name for name, deps in edges.items() if name in deps)


@functools.cache
def benchmarks_graph():
    return graph(os.path.join(ROOT, PACKAGE), PACKAGE)


def test_benchmarks_have_no_import_cycle():
    assert cycles(benchmarks_graph()) == []


def test_no_benchmark_module_imports_itself():
    assert self_imports(benchmarks_graph()) == []


def test_leaf_modules_import_only_the_leaves_below_them():
    edges = benchmarks_graph()
    assert {"benchmarks.fixtures", "benchmarks.report"} <= edges["benchmarks.bench_serving"]  # the graph is read
    for leaf, allowed in LEAVES.items():
        assert edges[leaf] <= allowed, f"{leaf} imports {sorted(edges[leaf] - allowed)}"


def test_the_check_finds_planted_cycles_and_self_imports(tmp_path):
    files = {
        "__init__.py": '"""A package."""\n',
        "a.py": "from planted import b\n",
        "b.py": "def f():\n    from planted.c import g\n    return g\n",  # a function-level import
        "c.py": "import planted.a\n\n\ndef g():\n    return 1\n",
        "d.py": "def h():\n    from planted.d import h as again\n    return again\n",  # imports itself
        "e.py": "from . import a\nfrom .d import h\n",  # relative imports, no cycle
    }
    for file, text in files.items():
        (tmp_path / file).write_text(text)
    edges = graph(str(tmp_path), "planted")
    assert edges["planted.e"] == {"planted.a", "planted.d"}
    assert cycles(edges) == [["planted.a", "planted.b", "planted.c"]]
    assert self_imports(edges) == ["planted.d"]
