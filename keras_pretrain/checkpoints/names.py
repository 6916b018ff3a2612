"""Checkpoint-name helpers: one relative name, two layouts (Hugging Face and TF1).

The same network is named `encoder.layer.3.attention.self.query.weight` in a
Hugging Face (PyTorch) state dict and `bert/encoder/layer_3/attention/self/query/kernel`
in Google's TF1 checkpoints. Converters write the relative names once, with
"/" as separator (`"encoder/layer"`, `"attention/self/query"`), and a `Layout`
spells them for one format:

- `HF`: "." separator, `.weight` / `.bias`, numbered items `layer.3`, PyTorch
  `Linear` kernels transposed (`torch_linear`), LayerNorms named
  `.weight` / `.bias` or (older exports) `.gamma` / `.beta`;
- `TF1`: "/" separator, `/kernel` / `/bias`, numbered items `layer_3`,
  kernels already [in, out], LayerNorms `/gamma` / `/beta`.

`block_names` fills the name map that `keras_pretrain.models.block_weights`
reads for one transformer block; `BERT_BLOCK` / `BERT_BLOCK_NORMS` are the
relative names of the BERT-style block (BERT, ERNIE, RoBERTa, both layouts).
"""

import dataclasses
import os
from typing import Callable
from typing import Optional

from keras_pretrain.checkpoints.weights import torch_linear


def hf_norm(loader, prefix):
    """(gamma, beta) names of an HF LayerNorm, new (weight/bias) or old (gamma/beta) naming."""
    return (
        loader.first_present(prefix + ".weight", prefix + ".gamma"),
        loader.first_present(prefix + ".bias", prefix + ".beta"),
    )


def hf_prefix(loader, model_prefix, probe="embeddings.word_embeddings.weight"):
    """`model_prefix` ('bert.') when the state dict comes from a *ForXxx model, else ''."""
    return model_prefix if (model_prefix + probe) in loader else ""


def find_file(folder, *names):
    """The first of `names` that exists in `folder`, else None."""
    for name in names:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


@dataclasses.dataclass(frozen=True)
class Layout:
    """How one checkpoint format spells relative names (see the module docstring).

    Attributes:
        sep: the separator ("." or "/").
        kernel: the name of a dense kernel ("weight" or "kernel").
        embedding_suffix: what follows an embedding table's name (".weight" or "").
        numbered: the format of the `index`-th item of a list ("{}.{}", "{}_{}").
        linear: the transform of dense kernels into Keras' [in, out] layout, or None.
        old_norms: LayerNorms may be named gamma / beta instead of weight / bias.
    """

    sep: str
    kernel: str
    embedding_suffix: str
    numbered: str
    linear: Optional[Callable]
    old_norms: bool

    def name(self, prefix, relative=""):
        """`prefix` + `relative` with "/" spelled as this layout's separator."""
        return prefix + relative.replace("/", self.sep)

    def scope(self, prefix, relative):
        """A prefix for the names inside `relative` (ends with the separator)."""
        return self.name(prefix, relative) + self.sep

    def item(self, relative, index):
        """The relative name of the `index`-th of a list (`layer.3` / `layer_3`)."""
        return self.numbered.format(relative, index)

    def dense(self, prefix, relative=""):
        """(kernel, bias) names of a dense layer."""
        base = self.name(prefix, relative)
        return base + self.sep + self.kernel, base + self.sep + "bias"

    def embedding(self, prefix, relative=""):
        """The name of an embedding table."""
        return self.name(prefix, relative) + self.embedding_suffix

    def norm(self, loader, prefix, relative=""):
        """(gamma, beta) names of a LayerNorm."""
        base = self.name(prefix, relative)
        if self.old_norms:
            return hf_norm(loader, base)
        return base + self.sep + "gamma", base + self.sep + "beta"


HF = Layout(".", "weight", ".weight", "{}.{}", torch_linear, old_norms=True)
TF1 = Layout("/", "kernel", "", "{}_{}", None, old_norms=False)


def block_names(loader, layout, prefix, denses, norms=()):
    """The name map of `keras_pretrain.models.block_weights.load_transformer_encoder`.

    Args:
        loader: the `WeightLoader` (to choose between old and new LayerNorm names).
        layout: `HF` or `TF1`.
        prefix: the block's prefix (ends with the separator).
        denses: pairs (part, relative name) of the dense layers (`query`,
            `key`, `value`, `attention_output`, `intermediate`, `output`);
            a LayerNorm named like a dense layer (`.weight` / `.bias`) may
            be listed here too.
        norms: pairs (part, relative name) of the LayerNorms
            (`attention_norm`, `output_norm`).
    """
    names = {}
    for part, relative in denses:
        names[part], names[part + "_bias"] = layout.dense(prefix, relative)
    for part, relative in norms:
        names[part], names[part + "_bias"] = layout.norm(loader, prefix, relative)
    return names


# The BERT-style transformer block (BERT, ERNIE, RoBERTa): relative names.
BERT_BLOCK = (
    ("query", "attention/self/query"),
    ("key", "attention/self/key"),
    ("value", "attention/self/value"),
    ("attention_output", "attention/output/dense"),
    ("intermediate", "intermediate/dense"),
    ("output", "output/dense"),
)
BERT_BLOCK_NORMS = (
    ("attention_norm", "attention/output/LayerNorm"),
    ("output_norm", "output/LayerNorm"),
)


def bert_block_names(loader, layout, prefix):
    """Names of one BERT-style block under `prefix` in `layout`."""
    return block_names(loader, layout, prefix, BERT_BLOCK, BERT_BLOCK_NORMS)
