"""A tiny fairseq RoBERTa release (the `roberta.base.tar.gz` layout), for tests.

`build(folder)` writes `folder/roberta.base/` holding exactly the published
files: `model.pt` (`torch.save` of a dict with `args`, `model` (the state dict,
fairseq's names), `optimizer_history` and `extra_state`), `dict.txt` and
`NOTE`; with `archive=True` also `folder/roberta.base.tar.gz` of that folder
(before anything else is added to it). GPT-2's `encoder.json` + `vocab.bpe`
(a tiny byte-level BPE: the 256 byte symbols, the merges of
`tests.models.roberta.fixtures`, `<|endoftext|>`) go to `folder/gpt2_bpe/`
and, with `bpe_beside=True`, beside `model.pt` too.

`dict.txt` lists the GPT-2 ids in a shuffled "frequency" order (counts
descending), so ids are remapped; the id of `ABSENT` ("Ġfox") is left out
(fairseq encodes it as `<unk>`), and `madeupword0000 0` ... pad the
dictionary to a multiple of 8, as `fairseq-preprocess` does.

Variants (`variant=`):
- "args": an `argparse.Namespace` `args` (the published releases), names
  `decoder.sentence_encoder.*` / `decoder.lm_head.*`, q / k / v apart;
- "in_proj": the same with each attention's q, k, v stacked in
  `self_attn.in_proj_weight` [3d, d] / `in_proj_bias` (fairseq before 0.9),
  saved in torch's legacy (pre-1.6, not zip) format, as the 2019 releases;
- "cfg": newer fairseq: a `cfg` dict (`cfg["model"]` holds the settings,
  `args` None), names `encoder.*`, `layernorm_embedding`, a `version` buffer,
  and a `last_optimizer_state`.

Every variant holds the same weights (`Release.weights`, in the "args" naming).
"""

import argparse
import collections
import dataclasses
import json
import os
import tarfile

import numpy as np

from tests.models.roberta.fixtures import MERGES
from tests.models.roberta.fixtures import byte_alphabet

CONFIG = dict(encoder_layers=2, encoder_embed_dim=16, encoder_ffn_embed_dim=24, encoder_attention_heads=4,
              max_positions=20)
ABSENT = "Ġfox"  # a GPT-2 token whose id dict.txt lacks
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
SCALE = 0.3
NOTE = "Tiny RoBERTa for tests (fairseq layout): model.pt, dict.txt.\n"


@dataclasses.dataclass
class Release:
    """What `build` wrote; `weights`: the state dict (numpy, "args" naming, q / k / v apart)."""

    folder: str
    model_pt: str
    dict_txt: str
    encoder_json: str
    vocab_bpe: str
    archive: str
    config: dict
    vocabulary_size: int
    weights: dict


def gpt2_encoder():
    """GPT-2's `encoder.json` for the tiny BPE: bytes, merge results, `<|endoftext|>` last."""
    tokens = byte_alphabet() + ["".join(m.split()) for m in MERGES] + ["<|endoftext|>"]
    return {token: i for i, token in enumerate(dict.fromkeys(tokens))}


def write_bpe(folder):
    os.makedirs(folder, exist_ok=True)
    encoder_json, vocab_bpe = os.path.join(folder, "encoder.json"), os.path.join(folder, "vocab.bpe")
    with open(encoder_json, "w", encoding="utf-8") as f:
        json.dump(gpt2_encoder(), f, ensure_ascii=False)
    with open(vocab_bpe, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(MERGES) + "\n")
    return encoder_json, vocab_bpe


def dictionary_lines(seed=0):
    """dict.txt lines: GPT-2 ids (all but ABSENT's) shuffled, counts descending, madeupwords."""
    encoder = gpt2_encoder()
    ids = [i for t, i in encoder.items() if t != ABSENT]
    order = np.random.default_rng(seed).permutation(ids)
    lines = [f"{gpt2_id} {max(0, 1000 * (len(order) - 40 - rank))}" for rank, gpt2_id in enumerate(order)]
    pad = -(len(SPECIALS) + len(lines)) % 8
    lines += [f"madeupword{i:04d} 0" for i in range(pad)]
    return lines


def random_weights(vocabulary_size, config=CONFIG, seed=0):
    """A RoBERTa state dict in fairseq's names ("args" naming), random."""
    rng = np.random.default_rng(seed)
    d, f, L = config["encoder_embed_dim"], config["encoder_ffn_embed_dim"], config["encoder_layers"]

    def normal(*shape, mean=0.0):
        return (mean + SCALE * rng.standard_normal(shape)).astype("float32")

    s = "decoder.sentence_encoder."
    weights = {
        s + "embed_tokens.weight": normal(vocabulary_size, d),
        s + "embed_positions.weight": normal(config["max_positions"] + 2, d),
        s + "emb_layer_norm.weight": normal(d, mean=1.0),
        s + "emb_layer_norm.bias": normal(d),
    }
    for i in range(L):
        b = f"{s}layers.{i}."
        for name, (rows, cols) in {"self_attn.q_proj": (d, d), "self_attn.k_proj": (d, d),
                                   "self_attn.v_proj": (d, d), "self_attn.out_proj": (d, d),
                                   "fc1": (f, d), "fc2": (d, f)}.items():
            weights[b + name + ".weight"], weights[b + name + ".bias"] = normal(rows, cols), normal(rows)
        for name in ("self_attn_layer_norm", "final_layer_norm"):
            weights[b + name + ".weight"], weights[b + name + ".bias"] = normal(d, mean=1.0), normal(d)
    h = "decoder.lm_head."
    weights.update({
        h + "dense.weight": normal(d, d), h + "dense.bias": normal(d),
        h + "layer_norm.weight": normal(d, mean=1.0), h + "layer_norm.bias": normal(d),
        h + "bias": normal(vocabulary_size),
    })
    return weights


def fairseq_state_dict(weights, variant):
    """`weights` as torch tensors in the naming of `variant`; lm_head.weight shares the embedding."""
    import torch

    tensors = {name: torch.tensor(value) for name, value in weights.items()}
    if variant == "in_proj":
        for name in [n for n in tensors if ".self_attn.q_proj." in n]:
            kind = name.rsplit(".", 1)[1]
            parts = [tensors.pop(name.replace(".q_proj.", f".{p}_proj.")) for p in "qkv"]
            tensors[name.replace("q_proj." + kind, "in_proj_" + kind)] = torch.cat(parts)
    state = collections.OrderedDict()
    for name, tensor in tensors.items():
        if variant == "cfg":
            name = "encoder." + name[len("decoder."):]
            name = name.replace(".emb_layer_norm.", ".layernorm_embedding.")
        state[name] = tensor
    p = "encoder." if variant == "cfg" else "decoder."
    state[p + "lm_head.weight"] = state[p + "sentence_encoder.embed_tokens.weight"]  # tied: one storage
    if variant == "cfg":
        state["encoder.sentence_encoder.version"] = torch.tensor([3.0])
    return state


def model_settings(config=CONFIG):
    return dict(arch="roberta_base", activation_fn="gelu", pooler_activation_fn="tanh", dropout=0.1,
                attention_dropout=0.1, activation_dropout=0.0, pooler_dropout=0.0,
                tokens_per_sample=config["max_positions"], encoder_layerdrop=0.0, untie_weights_roberta=False,
                **config)


def checkpoint(state_dict, variant):
    """The dict fairseq's `save_state` writes (trimmed), for `variant`."""
    settings = model_settings()
    history = [{"criterion_name": "MaskedLmLoss", "optimizer_name": "FairseqAdam",
                "lr_scheduler_state": {"best": 2.0625}, "num_updates": 500000}]
    extra = {"train_iterator": {"epoch": 1, "iterations_in_epoch": 0}, "val_loss": np.float64(2.0625)}
    if variant != "cfg":
        args = argparse.Namespace(task="masked_lm", criterion="masked_lm", optimizer="adam", lr=[0.0006],
                                  adam_betas="(0.9, 0.98)", bpe="gpt2", sample_break_mode="complete",
                                  **settings)
        return {"args": args, "model": state_dict, "optimizer_history": history, "extra_state": extra}
    cfg = {"common": {"fp16": True, "seed": 1}, "model": {"_name": settings.pop("arch"), **settings},
           "task": {"_name": "masked_lm", "tokens_per_sample": CONFIG["max_positions"]},
           "criterion": {"_name": "masked_lm"}, "optimizer": {"_name": "adam", "adam_betas": "(0.9, 0.98)"}}
    return {"cfg": cfg, "args": None, "model": state_dict, "optimizer_history": history, "extra_state": extra,
            "last_optimizer_state": {"state": {}, "param_groups": [{"lr": 0.0006, "params": [0, 1]}]}}


def build(folder, variant="args", archive=False, bpe_beside=True, edit=None, extra=None, seed=0):
    """Writes the release into `folder` (see the module docstring) and returns a `Release`.

    Args:
        edit: optional callable applied to the state dict (torch tensors,
            the variant's names) before saving: drop or change entries.
        extra: optional entries added to the saved top-level dict.
    """
    import torch

    release = os.path.join(folder, "roberta.base")
    os.makedirs(release, exist_ok=True)
    lines = dictionary_lines(seed)
    vocabulary_size = len(SPECIALS) + len(lines) + 1  # + <mask>
    weights = random_weights(vocabulary_size, seed=seed)
    state_dict = fairseq_state_dict(weights, variant)
    if edit is not None:
        edit(state_dict)
    model_pt, dict_txt = os.path.join(release, "model.pt"), os.path.join(release, "dict.txt")
    torch.save({**checkpoint(state_dict, variant), **(extra or {})}, model_pt,
               _use_new_zipfile_serialization=variant != "in_proj")
    with open(dict_txt, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(release, "NOTE"), "w", encoding="utf-8") as f:
        f.write(NOTE)
    archive_path = None
    if archive:
        archive_path = os.path.join(folder, "roberta.base.tar.gz")
        with tarfile.open(archive_path, "w:gz") as tar:
            tar.add(release, arcname="roberta.base")
    encoder_json, vocab_bpe = write_bpe(os.path.join(folder, "gpt2_bpe"))
    if bpe_beside:
        write_bpe(release)
    return Release(release, model_pt, dict_txt, encoder_json, vocab_bpe, archive_path, dict(CONFIG),
                   vocabulary_size, weights)
