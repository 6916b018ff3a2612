"""The layering of DESIGN.md holds: imports go down (layers -> models -> tasks -> data -> pretraining /
distill / export -> hub_modules -> recipes), with no cycle between modules, data/, tasks/ and models/ import
nothing above them (a family's named task classes subclass the generic ones in tasks/), and backend-specific
code in `layers/` sits in one module."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("keras_pretrain", "hub_modules")


def modules(packages=PACKAGES):
    """module name -> set of the project modules it imports (at the top or inside functions)."""
    names = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(ROOT, package)):
            for file in files:
                if file.endswith(".py"):
                    path = os.path.join(folder, file)
                    name = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                    names[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in names.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read())
        imported = set()
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
            for target in targets:
                while target and target not in names:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    imported.add(target)
        graph[name] = imported
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), ignoring package __init__ re-exports."""
    packages = {n for n in graph if os.path.isdir(os.path.join(ROOT, *n.split(".")))}
    graph = {n: {m for m in deps if m not in packages} for n, deps in graph.items() if n not in packages}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = set()
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.add(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle():
    assert cycles(modules()) == []


def test_models_never_import_data_or_pretraining():
    for name, deps in modules().items():
        if name.startswith("keras_pretrain.models") or name.startswith("keras_pretrain.layers"):
            bad = sorted(d for d in deps if d.startswith(("keras_pretrain.data", "keras_pretrain.pretraining",
                                                          "keras_pretrain.export", "hub_modules")))
            assert not bad, f"{name} imports {bad}"


def test_data_never_imports_the_layers_above_it():
    above = ("keras_pretrain.models", "keras_pretrain.pretraining", "keras_pretrain.export",
             "keras_pretrain.distill", "hub_modules", "recipes")
    for name, deps in modules(PACKAGES + ("recipes",)).items():
        if name == "keras_pretrain.data" or name.startswith("keras_pretrain.data."):
            bad = sorted(d for d in deps if d.startswith(above))
            assert not bad, f"{name} imports {bad}"


def test_data_never_imports_tasks_and_tasks_never_import_what_is_above_them():
    for name, deps in modules(PACKAGES + ("recipes",)).items():
        if name == "keras_pretrain.data" or name.startswith("keras_pretrain.data."):
            assert not [d for d in deps if d.startswith("keras_pretrain.tasks")], f"{name} imports tasks"
        if name == "keras_pretrain.tasks" or name.startswith("keras_pretrain.tasks."):
            above = ("keras_pretrain.data", "keras_pretrain.pretraining", "keras_pretrain.export",
                     "keras_pretrain.distill", "hub_modules", "recipes")
            bad = sorted(d for d in deps if d.startswith(above))
            assert not bad, f"{name} imports {bad}"


def test_backend_specific_layer_code_is_in_one_module():
    for file in sorted(os.listdir(os.path.join(ROOT, "keras_pretrain", "layers"))):
        if not file.endswith(".py") or file == "backend_kernels.py":
            continue
        with open(os.path.join(ROOT, "keras_pretrain", "layers", file), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for imported in names:
                assert imported.split(".")[0] not in ("tensorflow", "jax", "torch"), f"layers/{file} imports {imported}"


def test_the_check_finds_a_cycle():
    graph = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "a.w": {"a.x"}}
    assert cycles(graph) == [["a.x", "a.y", "a.z"]]
