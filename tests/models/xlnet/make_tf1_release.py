"""A tiny original XLNet release (zihangdai/xlnet layout), for tests.

`build(folder)` writes `folder/xlnet_cased_L-2_H-16_A-2/` holding exactly the
published files: `xlnet_model.ckpt.index`, `xlnet_model.ckpt.data-00000-of-00001`,
`xlnet_model.ckpt.meta` (saved with `tf.compat.v1.train.Saver`, no `checkpoint`
state file, as in the archives), `xlnet_config.json` (the original keys) and a
tiny `spiece.model` with XLNet's special pieces. Weights are random (fixed
seed, scale 0.3). `global_step` and optimizer slots of both kinds the original
scripts write (`AdamWeightDecayOptimizer`'s `adam_m` / `adam_v`, plain Adam's
`Adam` / `Adam_1` and `beta1_power`) are included: the importer must ignore them.

Also a script: `python -m tests.models.xlnet.make_tf1_release OUT [--tied-r] [--archive]`.
"""

import argparse
import dataclasses
import functools
import io
import json
import os
import zipfile

import numpy as np

CONFIG = dict(n_layer=2, d_model=16, n_head=2, d_head=8, d_inner=24, ff_activation="gelu")
# XLNet's special pieces and ids: <unk>=0, <s>=1, </s>=2, <cls>=3 ... <eop>=8.
SPECIAL = ["<unk>", "<s>", "</s>", "<cls>", "<sep>", "<pad>", "<mask>", "<eod>", "<eop>"]
TEXT = [
    "XLNet is a generalized autoregressive pretraining method.",
    "The Quick Brown Fox jumps over the lazy dog in New York.",
    "Transformer-XL keeps Memories of the previous Segment.",
    "Permutation language modeling predicts tokens in a random Order.",
    "Hello World, hello world, HELLO WORLD.",
]
SCALE = 0.3


@dataclasses.dataclass
class Release:
    """What `build` wrote: the release folder, the archive (or None), the
    json config and every checkpoint array by name."""

    folder: str
    archive: str
    config: dict
    arrays: dict


@functools.lru_cache(maxsize=None)
def train_sentencepiece(vocab_size=60):
    """The bytes of a SentencePiece model with XLNet's special pieces first (trained once)."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TEXT * 20), model_writer=buffer, vocab_size=vocab_size,
        model_type="unigram", unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        control_symbols=SPECIAL[3:], character_coverage=1.0, num_threads=1, minloglevel=2,
    )
    return buffer.getvalue()


def release_name(config):
    return f"xlnet_cased_L-{config['n_layer']}_H-{config['d_model']}_A-{config['n_head']}"


def random_arrays(config, seed=0, untie_r=True, pretraining=True):
    """The model's variables with the original names and shapes (random)."""
    rng = np.random.default_rng(seed)
    L, d, N, Dh, di, V = (config[k] for k in ("n_layer", "d_model", "n_head", "d_head", "d_inner", "n_token"))

    def normal(*shape, mean=0.0):
        return (mean + SCALE * rng.standard_normal(shape)).astype("float32")

    p = "model/transformer/"
    bias_shape = (L, N, Dh) if untie_r else (N, Dh)
    arrays = {
        p + "word_embedding/lookup_table": normal(V, d),
        p + "mask_emb/mask_emb": normal(1, 1, d),
        p + "seg_embed": normal(L, 2, N, Dh),
        **{p + name: normal(*bias_shape) for name in ("r_w_bias", "r_r_bias", "r_s_bias")},
    }
    for i in range(L):
        s = f"{p}layer_{i}/"
        for name in ("q", "k", "v", "o", "r"):
            arrays[f"{s}rel_attn/{name}/kernel"] = normal(d, N, Dh)
        arrays[s + "ff/layer_1/kernel"] = normal(d, di)
        arrays[s + "ff/layer_1/bias"] = normal(di)
        arrays[s + "ff/layer_2/kernel"] = normal(di, d)
        arrays[s + "ff/layer_2/bias"] = normal(d)
        for norm in ("rel_attn/LayerNorm", "ff/LayerNorm"):
            arrays[f"{s}{norm}/gamma"] = normal(d, mean=1.0)
            arrays[f"{s}{norm}/beta"] = normal(d)
    if pretraining:
        arrays["model/lm_loss/bias"] = normal(V)
    return arrays


def optimizer_arrays(arrays):
    """`global_step` and one variable's slots of each optimizer the original code uses."""
    embedding = "model/transformer/word_embedding/lookup_table"
    bias = "model/transformer/layer_0/ff/layer_1/bias"
    zeros = np.zeros_like
    return {
        "global_step": np.array(400000, "int64"),
        embedding + "/adam_m": zeros(arrays[embedding]),
        embedding + "/adam_v": zeros(arrays[embedding]),
        bias + "/Adam": zeros(arrays[bias]),
        bias + "/Adam_1": zeros(arrays[bias]),
        "beta1_power": np.array(0.9, "float32"),
    }


def write_checkpoint(arrays, prefix):
    """A TF1 checkpoint (`.index`, `.data-00000-of-00001`, `.meta`) holding `arrays`."""
    import tensorflow as tf

    with tf.Graph().as_default():
        variables = [tf.compat.v1.get_variable(name, initializer=value) for name, value in arrays.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_state=False)
    return prefix


def write_config(config, path):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def write_zip(folder):
    """`folder.zip` holding the folder itself (as the published archives)."""
    path = folder + ".zip"
    parent = os.path.dirname(folder)
    with zipfile.ZipFile(path, "w") as archive:
        for name in sorted(os.listdir(folder)):
            archive.write(os.path.join(folder, name), os.path.relpath(os.path.join(folder, name), parent))
    return path


def build(folder, config=None, seed=0, untie_r=True, pretraining=True, archive=False):
    """Writes the release under `folder` and returns a `Release`.

    Args:
        folder: the parent folder (created when missing).
        config: overrides of `CONFIG` (`n_token` is the SentencePiece size).
        seed: the weights' seed.
        untie_r: one set of relative biases per layer (`[L, N, Dh]`) or one
            shared set (`[N, Dh]`).
        pretraining: include `model/lm_loss/bias`.
        archive: also write `xlnet_cased_L-..._H-..._A-....zip` beside it.
    """
    spiece = train_sentencepiece()
    config = {**CONFIG, **(config or {}), "untie_r": untie_r}
    config.setdefault("n_token", _piece_count(spiece))
    release = os.path.join(folder, release_name(config))
    os.makedirs(release, exist_ok=True)
    with open(os.path.join(release, "spiece.model"), "wb") as f:
        f.write(spiece)
    write_config(config, os.path.join(release, "xlnet_config.json"))
    arrays = random_arrays(config, seed, untie_r, pretraining)
    arrays.update(optimizer_arrays(arrays))
    write_checkpoint(arrays, os.path.join(release, "xlnet_model.ckpt"))
    return Release(release, write_zip(release) if archive else None, config, arrays)


def _piece_count(model_bytes):
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=model_bytes).get_piece_size()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tied-r", action="store_true", help="one shared set of relative biases (untie_r=false)")
    parser.add_argument("--no-pretraining", action="store_true", help="leave out model/lm_loss/bias")
    parser.add_argument("--archive", action="store_true", help="also write the .zip")
    args = parser.parse_args(argv)
    release = build(args.folder, seed=args.seed, untie_r=not args.tied_r, pretraining=not args.no_pretraining,
                    archive=args.archive)
    print(release.archive or release.folder)


if __name__ == "__main__":
    main()
