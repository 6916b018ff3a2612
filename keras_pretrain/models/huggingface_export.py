"""Writing Hugging Face folders: the importers' placers run backwards.

A family's `HFSpec` (`keras_pretrain.models.conversion`) holds the placers its importer uses
(`load_backbone`, `load_heads`, and each fine-tuned head's `HFHead.place`). Called with a `WeightWriter`
instead of a `WeightLoader`, the same functions write the state dict the importer would read: one name
table per family, used both ways. This module adds what only an export needs: `config.json` (the inverse of
`HFSpec.config`, with `model_type` and `architectures`), `model.safetensors`, and the tokenizer files.

```python
from keras_pretrain import convert

convert.to_huggingface(classifier, "out/", tokenizer=tokenizer)
# transformers.AutoModelForSequenceClassification.from_pretrained("out/") gives the same logits
```
"""

import fnmatch
import json

import numpy as np

from keras_pretrain.checkpoints.output import write_new_folder
from keras_pretrain.checkpoints.weights import WeightWriter
from keras_pretrain.errors import ExportError
from keras_pretrain.layers.activations import HF_ACTIVATIONS
from keras_pretrain.models.conversion import ARCHITECTURE_KINDS
from keras_pretrain.models.conversion import BACKBONE
from keras_pretrain.models.conversion import PRETRAINER
from keras_pretrain.models.conversion import resolve
from keras_pretrain.models.conversion import sequence_classifier_config

# Our activation names -> transformers' (the first HF name that maps to ours).
HF_EXPORT_ACTIVATIONS = {}
for _theirs, _ours in HF_ACTIVATIONS.items():
    HF_EXPORT_ACTIVATIONS.setdefault(_ours, _theirs)


def hf_activation(name, what="activation", table=None):
    """transformers' name of our activation `name` (`gelu_approximate` -> `gelu_new`)."""
    table = HF_EXPORT_ACTIVATIONS if table is None else table
    if not isinstance(name, str) or name not in table:
        raise ExportError(f"{what} {name!r} has no transformers name (known: {sorted(table)}).")
    return table[name]


def model_kind(spec, model):
    """`(kind, head)`: "backbone", "pretrainer" (head None) or the kind of one of `spec.tasks`."""
    if isinstance(model, resolve(spec.backbone)):
        return BACKBONE, None
    for head in spec.tasks:
        if head_matches(head, model):
            return head.kind, head
    if isinstance(model, resolve(spec.pretrainer)):
        return PRETRAINER, None
    raise ExportError(
        f"{type(model).__name__}: no Hugging Face architecture for this model (exported: the backbone, the "
        f"pretrainer and the heads {[h.kind for h in spec.tasks]})."
    )


def head_matches(head, model):
    if head.matches is not None:
        return head.matches(model)
    return isinstance(model, resolve(head.task))


def architecture(spec, kind, head, model):
    """transformers' class name of the folder (`config.json` `architectures`)."""
    if kind == BACKBONE:
        suffix = "Model"
    elif kind == PRETRAINER:
        suffix = spec.pretrainer_suffix(model)
    else:
        suffix = head.suffix or next(s for s, k in ARCHITECTURE_KINDS.items() if k == kind)
    return spec.architecture + suffix


def state_dict(spec, model, kind=None, head=None):
    """`{name: float32 array}`: the weights as the family's importer reads them from a Hugging Face folder."""
    if kind is None:
        kind, head = model_kind(spec, model)
    backbone = model if kind == BACKBONE else model.backbone
    writer = WeightWriter(present=() if kind == BACKBONE else (spec.prefix + spec.probe,),
                          source=f"exporting {type(model).__name__}")
    spec.load_backbone(backbone, writer)
    if kind == PRETRAINER and spec.load_heads is not None:
        spec.load_heads(model, writer)
    if head is not None:
        head.place(model, writer)
    writer.finish()
    return writer.arrays


def hf_config(spec, model, kind=None, head=None):
    """The `config.json` dict of `model`."""
    if kind is None:
        kind, head = model_kind(spec, model)
    backbone = model if kind == BACKBONE else model.backbone
    config = {"architectures": [architecture(spec, kind, head, model)], "model_type": spec.model_type}
    config.update(spec.to_config(backbone))
    if head is not None:
        config.update((head.to_config or sequence_classifier_config)(model))
    return config


def safetensors_bytes(arrays):
    from safetensors.numpy import save

    return save({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in sorted(arrays.items())},
                metadata={"format": "pt"})


def export_huggingface(spec, model, folder, tokenizer=None):
    """Writes `model` (backbone, pretrainer or task) and `tokenizer` as a Hugging Face folder.

    `folder` must be new or empty (and no link): `keras_pretrain.checkpoints.output.write_new_folder`.
    Returns the folder.
    """
    if spec.model_type is None or spec.to_config is None:
        raise ExportError(f"{type(model).__name__}: its family has no Hugging Face export.")
    kind, head = model_kind(spec, model)
    config = hf_config(spec, model, kind, head)
    arrays = state_dict(spec, model, kind, head)
    left_out = spec.left_out(config["architectures"][0]) if spec.left_out else ()
    arrays = {k: v for k, v in arrays.items() if not any(fnmatch.fnmatchcase(k, p) for p in left_out)}
    files = {
        "config.json": (json.dumps(config, indent=2, sort_keys=True) + "\n").encode("utf-8"),
        "model.safetensors": safetensors_bytes(arrays),
    }
    if tokenizer is not None:
        if spec.write_tokenizer is None:
            raise ExportError(f"{type(tokenizer).__name__}: no Hugging Face tokenizer files for this family.")
        files.update(spec.write_tokenizer(tokenizer))
    return write_new_folder(folder, files)


def json_bytes(value):
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def sentencepiece_files(tokenizer_class, **options):
    """`write_tokenizer` of a SentencePiece family: `spiece.model` and `tokenizer_config.json`
    (`do_lower_case`, `keep_accents` and the `options` given)."""

    def write(tokenizer):
        if tokenizer.proto is None:
            raise ExportError(f"{type(tokenizer).__name__}: no SentencePiece model to write.")
        config = {"tokenizer_class": tokenizer_class, "do_lower_case": bool(tokenizer.lowercase),
                  "remove_space": True, "split_special_tokens": True, **options}
        if hasattr(tokenizer, "keep_accents"):
            config["keep_accents"] = bool(tokenizer.keep_accents)
        return {"spiece.model": bytes(tokenizer.proto), "tokenizer_config.json": json_bytes(config)}

    return write


def bpe_files(tokenizer_class, vocabulary, merges, **options):
    """`write_tokenizer` of a BPE family: `vocab.json`, `merges.txt` (`#version` line first) and
    `tokenizer_config.json`. `vocabulary(tokenizer)` -> {token: id}, `merges(tokenizer)` -> ["a b", ...]."""

    def write(tokenizer):
        rules = [m if isinstance(m, str) else " ".join(m) for m in merges(tokenizer)]
        lines = ["#version: 0.2"] + [m for m in rules if not m.startswith("#version")]  # keras-hub keeps it
        config = {"tokenizer_class": tokenizer_class, "split_special_tokens": True, **options}
        return {"vocab.json": json_bytes(vocabulary(tokenizer)),
                "merges.txt": ("\n".join(lines) + "\n").encode("utf-8"),
                "tokenizer_config.json": json_bytes(config)}

    return write
