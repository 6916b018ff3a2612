"""Writes a tiny GPT-1 release in the layout of OpenAI's finetune-transformer-lm `model/` folder.

`model/params_shapes.json` (the list of shapes), `model/params_0.npy` ...
`model/params_9.npy` (one flat float32 array of every parameter, in order,
cut into ten parts), `model/encoder_bpe_40000.json` (token -> id) and
`model/vocab_40000.bpe` (a "#version" header line, then one merge per line).
The order: the position table [n_ctx, d], the token table [V, d], then for
each block the 12 arrays of `BLOCK` (`Conv1D` weights as [1, in, out]).
"""

import json
import os

import numpy as np

from tests.models.gpt.test_gpt_tokenizer import MERGES
from tests.models.gpt.test_gpt_tokenizer import vocabulary

MODEL = "model"
BLOCK = (
    ("attn/c_attn/w", lambda d: (1, d, 3 * d)),
    ("attn/c_attn/b", lambda d: (3 * d,)),
    ("attn/c_proj/w", lambda d: (1, d, d)),
    ("attn/c_proj/b", lambda d: (d,)),
    ("ln_1/g", lambda d: (d,)),
    ("ln_1/b", lambda d: (d,)),
    ("mlp/c_fc/w", lambda d: (1, d, 4 * d)),
    ("mlp/c_fc/b", lambda d: (4 * d,)),
    ("mlp/c_proj/w", lambda d: (1, 4 * d, d)),
    ("mlp/c_proj/b", lambda d: (d,)),
    ("ln_2/g", lambda d: (d,)),
    ("ln_2/b", lambda d: (d,)),
)


def random_params(n_layer, d, n_ctx, n_vocab, seed=0):
    """{name: float32 array} in the release's order, random (LayerNorm gains near 1)."""
    rng = np.random.default_rng(seed)

    def normal(shape, mean=0.0, scale=0.2):
        return (mean + scale * rng.standard_normal(shape)).astype("float32")

    params = {"positions": normal((n_ctx, d)), "tokens": normal((n_vocab, d))}
    for i in range(n_layer):
        for name, shape in BLOCK:
            gain = name.endswith("/g")
            params[f"h{i}/{name}"] = normal(shape(d), mean=1.0 if gain else 0.0, scale=0.1 if gain else 0.2)
    return params


def write_params(model_folder, arrays):
    """`params_shapes.json` and the ten `params_k.npy` for the list `arrays`, as the release stores them."""
    os.makedirs(model_folder, exist_ok=True)
    with open(os.path.join(model_folder, "params_shapes.json"), "w") as f:
        json.dump([list(a.shape) for a in arrays], f)
    flat = np.concatenate([np.asarray(a, "float32").reshape(-1) for a in arrays])
    for k, part in enumerate(np.array_split(flat, 10)):
        np.save(os.path.join(model_folder, f"params_{k}.npy"), part)


def write_bpe(model_folder, vocab, merges):
    with open(os.path.join(model_folder, "encoder_bpe_40000.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f)
    with open(os.path.join(model_folder, "vocab_40000.bpe"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))


def build(folder, n_layer=2, d=16, n_ctx=16, vocab=None, merges=None, seed=0):
    """Writes `folder/model/` and returns its parameters {name: array} in the stored order.

    `vocab` (token -> id) and `merges` default to the tiny GPT BPE of
    `test_gpt_tokenizer` ('</w>'-suffixed word ends); the token table has
    one row per vocabulary entry.
    """
    vocab = vocabulary() if vocab is None else vocab
    merges = MERGES if merges is None else merges
    model_folder = os.path.join(os.fspath(folder), MODEL)
    params = random_params(n_layer, d, n_ctx, len(vocab), seed)
    write_params(model_folder, list(params.values()))
    write_bpe(model_folder, vocab, merges)
    return params
