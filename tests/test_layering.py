"""The layer order of the package holds, with no exception, and no import circle exists anywhere.

Imports go down the order below (a module imports only modules of its own layer or of a lower one), and the
import graph of keras_pretrain/, hub_modules/ and recipes/ has no cycle. The graph counts imports at the top and
inside functions, and imports of a package, which run its `__init__` (`from keras_pretrain.models.elmo import
ElmoEmbedder` is an edge to the package `keras_pretrain.models.elmo`; `from keras_pretrain import families` an
edge to the module `keras_pretrain.families` alone). Imports by name through `importlib` (the registry's lazy
class names) are not edges: that is how the registry at the bottom reaches the families above it.
"""

import ast
import fnmatch
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("keras_pretrain", "hub_modules", "recipes")

# Bottom to top. A module's layer is that of the first pattern it matches (fnmatch on the dotted name).
LAYERS = (
    ("base", ("keras_pretrain.errors", "keras_pretrain.lazy", "keras_pretrain.text", "keras_pretrain.casing",
              "keras_pretrain.optimizers", "keras_pretrain.distribute.precision")),
    ("layers", ("keras_pretrain.layers", "keras_pretrain.layers.*", "keras_pretrain.losses")),
    # The registry and the behaviour objects a Family holds (packing, TF-Hub contract base, summaries).
    ("registry", ("keras_pretrain.families", "keras_pretrain.data.packing", "keras_pretrain.export.contracts",
                  "keras_pretrain.export.tracing")),
    # Backbones, tokenizers, pretrainers, checkpoint readers: the family folders below their task classes.
    ("models", ("keras_pretrain.models.*.*_backbone", "keras_pretrain.models.*.*_tokenizer",
                "keras_pretrain.models.*.*_layers", "keras_pretrain.models.*.*_block", "keras_pretrain.models.*.*_presets",
                "keras_pretrain.models.*.*_preprocessor", "keras_pretrain.models.*.*_pretrainer",
                "keras_pretrain.models.*.*_causal_lm", "keras_pretrain.models.*.*_contract",
                "keras_pretrain.models.*.*_family", "keras_pretrain.models.*.*_embedder",
                "keras_pretrain.models.*.*_inputs", "keras_pretrain.models.*.gpt2_unicode",
                "keras_pretrain.models.text_preprocessor", "keras_pretrain.models.pieces",
                "keras_pretrain.models.backbone", "keras_pretrain.models.task",
                "keras_pretrain.models.masked_lm", "keras_pretrain.models.block_weights",
                "keras_pretrain.models.special_tokens", "keras_pretrain.models.sentencepiece_text",
                "keras_pretrain.models.preset_preprocessor", "keras_pretrain.models.presets", "keras_pretrain.checkpoints.*",
                "keras_pretrain.checkpoints")),
    # Pretraining data, generic SavedModel writing, distribution engines.
    ("data and export", ("keras_pretrain.data", "keras_pretrain.data.*", "keras_pretrain.export",
                         "keras_pretrain.export.*", "keras_pretrain.distribute", "keras_pretrain.distribute.*")),
    # A task is a folder: its head, data, features, predictions, metrics and serving graph.
    ("tasks", ("keras_pretrain.tasks", "keras_pretrain.tasks.*")),
    # What the families build on the tasks: their named task classes, text preprocessors, converters, exports.
    ("family tasks and conversion", ("keras_pretrain.models.*", "keras_pretrain.models", "keras_pretrain.convert",
                                     "keras_pretrain.convert.*")),
    ("jobs", ("keras_pretrain.pretraining", "keras_pretrain.pretraining.*", "keras_pretrain.distill",
              "keras_pretrain.distill.*", "keras_pretrain.training", "keras_pretrain.training.*")),
    # The package's face: `import keras_pretrain` registers everything; old module paths re-export.
    ("package", ("keras_pretrain", "keras_pretrain.*")),
    ("hub_modules", ("hub_modules", "hub_modules.*")),
    ("recipes", ("recipes", "recipes.*")),
)


def layer_of(name):
    for index, (_, patterns) in enumerate(LAYERS):
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns):
            return index
    raise AssertionError(f"{name} is in no layer of tests/test_layering.py")


def module_files(packages=PACKAGES, root=ROOT):
    """dotted module name -> file, packages included (their `__init__.py`)."""
    names = {}
    for package in packages:
        for folder, _, files in os.walk(os.path.join(root, package)):
            for file in files:
                if file.endswith(".py"):
                    path = os.path.join(folder, file)
                    name = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                    names[name.removesuffix(".__init__")] = path
    return names


def imports(tree, names, name):
    """The project modules one module imports (a package counts: importing it runs its `__init__`)."""
    found = set()
    package = name if names[name].endswith("__init__.py") else name.rpartition(".")[0]
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            subs = [f"{module}.{a.name}" for a in node.names]
            targets = [s for s in subs if s in names]
            if len(targets) < len(subs):  # a name defined in the package or module itself
                targets.append(module)
        for target in targets:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def modules(packages=PACKAGES, root=ROOT):
    """module name -> set of the project modules it imports (at the top or inside functions)."""
    names = module_files(packages, root)
    graph = {}
    for name, path in names.items():
        with open(path, encoding="utf-8") as f:
            graph[name] = imports(ast.parse(f.read()), names, name)
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def upward(graph):
    """Imports that go up the layer order: (importer, its layer, imported, its layer)."""
    found = []
    for name, deps in sorted(graph.items()):
        for dep in sorted(deps):
            if layer_of(dep) > layer_of(name):
                found.append(f"{name} ({LAYERS[layer_of(name)][0]}) imports {dep} ({LAYERS[layer_of(dep)][0]})")
    return found


def test_no_import_cycle():
    assert cycles(modules()) == []


def test_every_import_goes_down_the_layer_order():
    found = upward(modules())
    assert found == [], "\n".join(found)


def test_the_registry_imports_nothing_above_it():
    registry = [index for index, (name, _) in enumerate(LAYERS) if name == "registry"][0]
    deps = modules()["keras_pretrain.families"]
    assert deps and all(layer_of(dep) < registry for dep in deps), sorted(deps)
    assert not any(dep.startswith(("keras_pretrain.models", "keras_pretrain.tasks", "keras_pretrain.export",
                                   "keras_pretrain.data")) for dep in deps)


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


def test_the_check_finds_the_circle_through_the_registry_of_2593cc1(tmp_path):
    """Before the registry moved to the bottom (2593cc1), families -> export.contracts -> the ELMo package ->
    its classifier -> tasks -> families was a circle once edges into packages count; the old check, which
    dropped them, saw none. The same files, written here, must show it."""
    files = {
        "kp/__init__.py": "",
        "kp/families.py": "from kp.export import contracts\n",
        "kp/export/__init__.py": "",
        "kp/export/contracts.py": "def f():\n    from kp.models.elmo import ElmoCharacterMapper\n",
        "kp/models/__init__.py": "",
        "kp/models/elmo/__init__.py": "from kp.models.elmo.elmo_classifier import ElmoClassifier\n",
        "kp/models/elmo/elmo_classifier.py": "from kp.tasks import SequenceClassifier\n",
        "kp/tasks/__init__.py": "from kp.tasks.sequence_classifier import SequenceClassifier\n",
        "kp/tasks/sequence_classifier.py": "def f():\n    from kp import families\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    assert cycles(modules(("kp",), str(tmp_path))) == [[
        "kp.export.contracts", "kp.families", "kp.models.elmo", "kp.models.elmo.elmo_classifier", "kp.tasks",
        "kp.tasks.sequence_classifier"]]
