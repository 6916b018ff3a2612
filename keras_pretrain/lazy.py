"""Names a module serves from other modules, imported when first asked (a module `__getattr__`, PEP 562).

Used where importing at the top would cost TensorFlow for a name few callers need (a task folder's serving
graph, the pretraining data's tf.data parts), and where a name moved to a better home and its old path keeps
working. Lookups go by `importlib`, so they are not import edges (tests/test_layering.py).

```python
__getattr__ = lazy.attributes(__name__, {"export_serving": "keras_pretrain.tasks.classification.serving",
                                         "serving": "keras_pretrain.tasks.classification.serving:"})
```
"""

import importlib


def attributes(module_name, table):
    """A module `__getattr__` serving `table`: name -> "module" (the same name there), "module:attribute", or
    "module:" (the module itself)."""

    def __getattr__(name):
        if name not in table:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        module, _, attribute = table[name].partition(":")
        imported = importlib.import_module(module)
        if table[name].endswith(":"):
            return imported
        return getattr(imported, attribute or name)

    return __getattr__


def from_module(module, names):
    """`table` entries serving each of `names` from `module` (the module itself for its own last name)."""
    last = module.rpartition(".")[2]
    return {name: (f"{module}:" if name == last else module) for name in names}
