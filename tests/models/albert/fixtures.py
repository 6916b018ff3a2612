"""Tiny ALBERT archives in the exact published layouts (test fixtures).

Weights come from a randomly initialised `transformers` `AlbertForPreTraining`
(the independent reference), renamed to the original TF1 names and written
with `tf.compat.v1` Saver as `model.ckpt-best`, together with Adam slots and
`global_step` as in the released checkpoints.
"""

import io
import json
import os
import tarfile

import numpy as np

from tests.testing import randomize_torch_module
from tests.testing import write_tf1_checkpoint

SP_TEXT = [
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT is a lite BERT for self-supervised learning of language representations.",
    "Cafe au lait, naive resume, quoted text and numbers 12, 345.",
    "Sentence order prediction replaces next sentence prediction.",
    "Parameter sharing across layers keeps the model small.",
]
SP_SPECIAL = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
ZH_VOCAB = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    + list("的一是不了人我在有他这中大来上个国到说们为子和你地出道也时年")
    + ["，", "。", "a", "b", "##a", "##b", "hello", "world"]
)
# Hidden size etc. of every fixture: small, with E != H so the projection matters.
TINY = dict(embedding_size=8, hidden_size=32, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=40, type_vocab_size=2)


def train_sentencepiece(path, vocab_size=64):
    """A SentencePiece model with the published special ids (<pad>=0 ... [MASK]=4)."""
    import sentencepiece as spm

    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(SP_TEXT * 10), model_writer=buffer, vocab_size=vocab_size,
        model_type="unigram", pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        pad_piece="<pad>", unk_piece="<unk>", control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        minloglevel=2,
    )
    with open(path, "wb") as f:
        f.write(buffer.getvalue())
    processor = spm.SentencePieceProcessor(model_file=path)
    assert [processor.id_to_piece(i) for i in range(5)] == SP_SPECIAL
    assert processor.get_piece_size() == vocab_size
    with open(path[: -len(".model")] + ".vocab", "w", encoding="utf-8") as f:
        for i in range(processor.get_piece_size()):
            f.write(f"{processor.id_to_piece(i)}\t{processor.get_score(i)}\n")
    return processor.get_piece_size()


def hf_albert(vocab_size, num_layers=2, groups=1, inner=1, hidden_act="gelu_new", seed=0):
    import transformers

    config = transformers.AlbertConfig(
        vocab_size=vocab_size, num_hidden_layers=num_layers, num_hidden_groups=groups,
        inner_group_num=inner, hidden_act=hidden_act, hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0, classifier_dropout_prob=0.0, **TINY,
    )
    return randomize_torch_module(transformers.AlbertForPreTraining(config), seed=seed)


def google_config(model, hidden_act):
    c = model.config
    return {
        "vocab_size": c.vocab_size, "embedding_size": c.embedding_size, "hidden_size": c.hidden_size,
        "num_hidden_layers": c.num_hidden_layers, "num_attention_heads": c.num_attention_heads,
        "intermediate_size": c.intermediate_size, "hidden_act": hidden_act,
        "hidden_dropout_prob": 0, "attention_probs_dropout_prob": 0,
        "max_position_embeddings": c.max_position_embeddings, "type_vocab_size": c.type_vocab_size,
        "initializer_range": 0.02, "num_hidden_groups": c.num_hidden_groups,
        "inner_group_num": c.inner_group_num, "down_scale_factor": 1, "net_structure_type": 0,
        "gap_size": 0, "num_memory_blocks": 0, "layers_to_keep": [],  # unknown keys are tolerated
    }


def hf_to_tf1_names(model):
    """The Google TF1 variable dict of an HF `AlbertForPreTraining` (test side)."""
    state = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    t = lambda k: state[k].T  # noqa: E731
    out = {}
    e = "albert.embeddings."
    out["bert/embeddings/word_embeddings"] = state[e + "word_embeddings.weight"]
    out["bert/embeddings/position_embeddings"] = state[e + "position_embeddings.weight"]
    out["bert/embeddings/token_type_embeddings"] = state[e + "token_type_embeddings.weight"]
    out["bert/embeddings/LayerNorm/gamma"] = state[e + "LayerNorm.weight"]
    out["bert/embeddings/LayerNorm/beta"] = state[e + "LayerNorm.bias"]
    m = "albert.encoder.embedding_hidden_mapping_in."
    out["bert/encoder/embedding_hidden_mapping_in/kernel"] = t(m + "weight")
    out["bert/encoder/embedding_hidden_mapping_in/bias"] = state[m + "bias"]
    c = model.config
    for g in range(c.num_hidden_groups):
        for i in range(c.inner_group_num):
            p = f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}."
            q = f"bert/encoder/transformer/group_{g}/inner_group_{i}/"
            for hf, tf in [("attention.query", "attention_1/self/query"), ("attention.key", "attention_1/self/key"),
                           ("attention.value", "attention_1/self/value"), ("attention.dense", "attention_1/output/dense"),
                           ("ffn", "ffn_1/intermediate/dense"), ("ffn_output", "ffn_1/intermediate/output/dense")]:
                out[q + tf + "/kernel"] = t(p + hf + ".weight")
                out[q + tf + "/bias"] = state[p + hf + ".bias"]
            for hf, tf in [("attention.LayerNorm", "LayerNorm"), ("full_layer_layer_norm", "LayerNorm_1")]:
                out[q + tf + "/gamma"] = state[p + hf + ".weight"]
                out[q + tf + "/beta"] = state[p + hf + ".bias"]
    out["bert/pooler/dense/kernel"] = t("albert.pooler.weight")
    out["bert/pooler/dense/bias"] = state["albert.pooler.bias"]
    out["cls/predictions/transform/dense/kernel"] = t("predictions.dense.weight")
    out["cls/predictions/transform/dense/bias"] = state["predictions.dense.bias"]
    out["cls/predictions/transform/LayerNorm/gamma"] = state["predictions.LayerNorm.weight"]
    out["cls/predictions/transform/LayerNorm/beta"] = state["predictions.LayerNorm.bias"]
    out["cls/predictions/output_bias"] = state["predictions.bias"]
    out["cls/seq_relationship/output_weights"] = state["sop_classifier.classifier.weight"]
    out["cls/seq_relationship/output_bias"] = state["sop_classifier.classifier.bias"]
    return {k: np.ascontiguousarray(v, dtype="float32") for k, v in out.items()}


def with_optimizer_slots(arrays):
    out = dict(arrays)
    for name in ("bert/pooler/dense/kernel", "cls/predictions/output_bias"):
        out[name + "/adam_m"] = np.zeros_like(arrays[name])
        out[name + "/adam_v"] = np.zeros_like(arrays[name])
    out["global_step"] = np.array(125000, "int64")
    return out


def write_albert(folder, kind, model, arrays=None, layout="archive", top="albert_base"):
    """Writes the published layout of `kind` ("v2" or "zh") under `folder`.

    layout "archive": `folder/top/{albert_config.json, model.ckpt-best.*, vocab}`;
    layout "hub": a TF1 hub module (`saved_model.pb`, `tfhub_module.pb`,
    `variables/variables.*`, `assets/`) at `folder`'s root.
    Returns the folder holding the files.
    """
    hidden_act = "gelu" if kind == "v2" else "relu"
    arrays = with_optimizer_slots(hf_to_tf1_names(model)) if arrays is None else arrays
    if layout == "hub":
        root, assets = folder, os.path.join(folder, "assets")
        os.makedirs(assets, exist_ok=True)
        for name in ("saved_model.pb", "tfhub_module.pb"):
            with open(os.path.join(root, name), "wb") as f:
                f.write(b"\x08\x01")  # placeholder: the loader reads only variables/
        write_tf1_checkpoint(arrays, os.path.join(root, "variables", "variables"))
    else:
        root = assets = os.path.join(folder, top)
        os.makedirs(root, exist_ok=True)
        write_tf1_checkpoint(arrays, os.path.join(root, "model.ckpt-best"))
        with open(os.path.join(root, "model.ckpt-best.meta"), "wb") as f:
            f.write(b"\x08\x01")
    with open(os.path.join(assets, "albert_config.json"), "w") as f:
        json.dump(google_config(model, hidden_act), f, indent=2)
    if kind == "v2":
        train_sentencepiece(os.path.join(assets, "30k-clean.model"), model.config.vocab_size)
    else:
        with open(os.path.join(assets, "vocab_chinese.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(ZH_VOCAB) + "\n")
    return root


def make_tarball(folder, path):
    """`path` (.tar.gz) holding `folder`'s contents (one top folder, as published)."""
    with tarfile.open(path, "w:gz") as tar:
        for name in sorted(os.listdir(folder)):
            tar.add(os.path.join(folder, name), arcname=name)
    return path


def build_albert_archive(tmp, kind="v2", num_layers=2, groups=1, inner=1, tarball=True, layout="archive", seed=0):
    """(path, hf_model): a tiny published-style ALBERT of `kind`."""
    vocab_size = 64 if kind == "v2" else len(ZH_VOCAB)
    model = hf_albert(vocab_size, num_layers, groups, inner, "gelu_new" if kind == "v2" else "relu", seed)
    src = os.path.join(tmp, f"src_{kind}_{layout}_{groups}_{inner}")
    write_albert(src, kind, model, layout=layout)
    if not tarball:
        return src, model
    return make_tarball(src, os.path.join(tmp, f"albert_base_{kind}.tar.gz")), model


def reference_outputs(model, data, positions):
    """transformers' outputs (sequence, pooled, gathered MLM logits, SOP logits)."""
    import torch

    kwargs = dict(
        input_ids=torch.tensor(data["token_ids"], dtype=torch.long),
        token_type_ids=torch.tensor(data["segment_ids"], dtype=torch.long),
        attention_mask=torch.tensor(data["padding_mask"], dtype=torch.long),
    )
    with torch.no_grad():
        out = model(**kwargs)
        base = model.albert(**kwargs, output_hidden_states=True)
    # transformers records one hidden state per inner block (AlbertLayer):
    # ours are one per layer, i.e. every `inner_group_num`-th block output.
    c = model.config
    blocks = [h.numpy() for h in base.hidden_states[-c.num_hidden_layers * c.inner_group_num:]]
    mlm = np.take_along_axis(out.prediction_logits.numpy(), np.asarray(positions)[..., None].astype("int64"), axis=1)
    return {
        "sequence_output": base.last_hidden_state.numpy(),
        "pooled_output": base.pooler_output.numpy(),
        "encoder_outputs": blocks[c.inner_group_num - 1 :: c.inner_group_num],
        "mlm": mlm,
        "sop": out.sop_logits.numpy(),
    }
