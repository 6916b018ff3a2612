"""TF-Hub-style modules for keras_pretrain models.

- `export(model, out_dir, tokenizer=...)` writes a module folder: `encoder/`
  and `preprocessor/` SavedModels (TF-Hub TF2 conventions), `model.keras` and
  `tokenizer/` (so the module rebuilds on any backend) and `metadata.json`.
- `load(path_or_handle)` returns a Keras layer usable in `model.fit` on every
  backend; `load_tokenizer(path)` the tokenizer.
- `resolve(handle)` maps a registry handle (published ALBERT archives, ...) to
  a local file, never downloading.
"""

from hub_modules.exporting import export
from hub_modules.loading import load
from hub_modules.loading import load_tokenizer
from hub_modules.loading import read_metadata
from hub_modules.registry import HANDLES
from hub_modules.registry import resolve
