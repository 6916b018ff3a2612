"""What the benchmark cases are built from: shapes, batches, models, the corpus, vocabularies and TFRecords.

A leaf module: of `benchmarks` it imports only `benchmarks.machine`; every case module (`benchmarks.cases`,
`benchmarks.bench_*`) takes its shared pieces from here. Frameworks are imported inside the functions that
use them, so importing this module costs nothing.
"""

import inspect
import os
import random
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from benchmarks.machine import keras_backend

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "corpus", "pretrain.txt")

# Encoder shapes: layers, hidden, heads, intermediate, vocabulary (+ family extras).
# transformers' tanh GELU for the references whose model computes it (BERT, ALBERT: ours too): the fused kernel
# `F.gelu(approximate="tanh")`. Its `gelu_new` computes the same function (3e-6 apart on BERT-base) in seven
# unfused elementwise kernels, which made the reference 34% slower per BERT-base training step and 41% per
# batch-32 forward on this CPU (2026-12-05): extra work our side did not have to beat (issue 45).
TANH_GELU = "gelu_pytorch_tanh"
MLM_SHAPES = {
    "small": dict(L=4, H=256, A=4, I=1024, V=30522),
    "base": dict(L=12, H=768, A=12, I=3072, V=30522),
    # --quick: tiny shapes that exercise every code path in seconds.
    "tiny": dict(L=2, H=64, A=2, I=128, V=1000),
}
ENCODERS = {
    "bert": dict(L=12, H=768, A=12, I=3072, V=30522),
    "albert": dict(L=12, H=768, A=12, I=3072, V=30000, E=128),
    "roberta": dict(L=12, H=768, A=12, I=3072, V=50265),
    "distil_bert": dict(L=6, H=768, A=12, I=3072, V=30522),
}
GPT = dict(L=12, H=768, A=12, I=3072, V=40478)
TINY = dict(L=2, H=64, A=2, I=128, V=1000, E=32)



def mlm_step_flops(L, H, I, V, batch, seq, predictions, **_):
    """Model FLOPs of one MLM training step (forward + backward = 3 x forward), the useful work only.

    Per layer and token, 2 * (4 H^2 + 2 H I) forward FLOPs for the matmuls (Q, K, V, output, two FFN)
    and 4 T H for attention (scores and weighted values). Only the hidden states at the P predicted
    positions reach the loss, so the useful work of the last layer is its K and V projections at all T
    tokens and the rest at the P positions only (attention P x T). Then the MLM head (transform dense
    and tied decoder) at the P positions: 2 (H^2 + H V) per prediction. x3 for training. Embedding
    lookups, LayerNorm, softmax, GELU, the optimizer update and the pooler are not counted.
    keras-hub's BertMaskedLM runs its last layer at all T positions, transformers' BertForMaskedLM
    also its decoder: that extra work is not counted as useful (ours skips both).
    """
    per_token = 2 * (4 * H * H + 2 * H * I)
    forward = (L - 1) * batch * seq * (per_token + 4 * seq * H)
    forward += batch * seq * 2 * (2 * H * H)  # last layer: K and V at every token
    forward += batch * predictions * (2 * (2 * H * H + 2 * H * I) + 4 * seq * H)  # Q, out, FFN, attention
    forward += batch * predictions * 2 * (H * H + H * V)  # MLM head
    return 3 * forward


class Skip(Exception):
    """The case cannot run here (a family not implemented yet)."""


# --- Models ------------------------------------------------------------------------------------------


def mlm_batch(batch, seq, vocab, predictions, seed=0):
    """A fixed masked-LM batch: (masked ids, sorted positions, labels, weights of ones)."""
    rs = np.random.RandomState(seed)
    ids = rs.randint(5, vocab, size=(batch, seq)).astype("int32")
    ids[:, 0], ids[:, -1] = 2, 3
    positions = np.sort(
        np.stack([rs.choice(np.arange(1, seq - 1), predictions, replace=False) for _ in range(batch)]),
        axis=1,
    ).astype("int32")
    labels = np.take_along_axis(ids, positions, axis=1)
    masked = ids.copy()
    np.put_along_axis(masked, positions, 4, axis=1)
    return masked, positions, labels, np.ones(labels.shape, "float32")


def build_mlm(impl, shape, batch, seq=128, predictions=20, keras_adamw=False, full_last_block=False):
    """(step, params, backend) of one AdamW float32 MLM step on a fixed batch; `step()` returns the loss.

    The same work for every implementation: dropout 0.1 (embeddings, attention probabilities,
    attention output, feed-forward output), tanh GELU in the encoder, MLM logits at the same
    `predictions` positions, AdamW(1e-4, weight decay 0.01), the loss and an accuracy metric: ours
    with our AdamW (Keras' math, one fused kernel on PyTorch; `keras_adamw=True`: Keras' own) and
    its last encoder layer run only at the predicted positions (`full_last_block=True`: at all),
    keras-hub with Keras' AdamW, transformers with torch's. Ours:
    `BertPretrainer(sentence_head=False)` with its default loss and metric; keras-hub:
    `BertMaskedLM` with its default ones; transformers: `BertForMaskedLM`'s encoder, then its MLM
    head (`cls`) on the hidden states gathered at the predicted positions ([B x P, H]: the work ours
    does; `hf_mlm_loss`), the mean cross-entropy over the predictions (what its `labels` loss computes).
    The transformers step has `.model` and `.compiled()` (`torch_train_step`).
    """
    dims = MLM_SHAPES[shape]
    L, H, A, I, V = (dims[k] for k in "LHAIV")
    ids, positions, labels, weights = mlm_batch(batch, seq, V, predictions)
    segments = np.zeros_like(ids)
    mask = np.ones_like(ids)
    if impl == "transformers":
        import torch
        from transformers import BertConfig
        from transformers import BertForMaskedLM

        torch.manual_seed(0)
        config = BertConfig(
            vocab_size=V, hidden_size=H, num_hidden_layers=L, num_attention_heads=A,
            intermediate_size=I, hidden_act=TANH_GELU, max_position_embeddings=512,
        )
        model = BertForMaskedLM(config)
        inputs = {
            "input_ids": torch.from_numpy(ids.astype("int64")),
            "token_type_ids": torch.from_numpy(segments.astype("int64")),
            "attention_mask": torch.from_numpy(mask.astype("int64")),
        }
        # The same work as ours: the decoder at the predicted positions only ([B x P, H] in), not at all T.
        loss_fn = hf_mlm_loss(model.bert, model.cls, inputs, positions, labels)
        step = torch_train_step(model, loss_fn)
        return step, sum(p.numel() for p in model.parameters()), "torch"

    import keras

    keras.utils.set_random_seed(0)
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01)
    if impl == "ours":
        from keras_pretrain.optimizers import AdamW

        # Ours trains with our AdamW (Keras' math; one fused kernel on PyTorch) unless told otherwise.
        if not keras_adamw:
            optimizer = AdamW(1e-4, weight_decay=0.01)
        from keras_pretrain.models.bert import BertBackbone
        from keras_pretrain.models.bert import BertPretrainer

        backbone = BertBackbone(vocabulary_size=V, num_layers=L, num_heads=A, hidden_dim=H, intermediate_dim=I)
        # MLM only, as keras-hub's BertMaskedLM and transformers' BertForMaskedLM.
        model = BertPretrainer(backbone, sentence_head=False)
        model.last_block_at_predictions = not full_last_block
        model.compile(optimizer=optimizer)  # our default MLM loss and accuracy metric
        x = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask, "masked_lm_positions": positions}
        y, sw = {"mlm": labels}, {"mlm": weights}
    elif impl == "keras_hub":
        import keras_hub

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=V, num_layers=L, num_heads=A, hidden_dim=H, intermediate_dim=I
        )
        model = keras_hub.models.BertMaskedLM(backbone)
        model.compile(optimizer=optimizer)  # keras-hub's default loss and accuracy metric
        x = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask, "mask_positions": positions}
        y, sw = labels, weights
        keras_hub_build_first(model, x, y, sw)
    else:
        raise ValueError(f"unknown impl {impl!r}")

    def step():
        # Each model's own train_on_batch (the compiled train step; ours accepts dict targets).
        return float(model.train_on_batch(x, y, sample_weight=sw, return_dict=True)["loss"])

    step.model = model
    return step, model.count_params(), keras_backend()


def keras_hub_build_first(model, x, y=None, sample_weight=None):
    """Builds a compiled keras-hub model's loss, metrics and optimizer from a batch's shapes before its first step.

    Keras' TensorFlow trainer does so only under a `tf.distribute` strategy; without one it creates those variables
    inside the first trace of the train step and `tf.function` traces the step twice (our tasks build first:
    `keras_pretrain.models.task.TaskMixin`; Keras' JAX and PyTorch trainers always do). The traced step is the same
    graph either way, so the timed steps do not change; the untimed warm-up is one trace shorter."""
    import keras

    if keras.config.backend() == "tensorflow":
        model._symbolic_build(data_batch=(x, y, sample_weight))  # private API: Keras' strategy-path build


def gather_rows(hidden, positions):
    """torch: `hidden` [B, T, H] at `positions` [B, P] -> [B x P, H] (row b's positions of row b)."""
    import torch

    rows = torch.arange(hidden.shape[0], device=hidden.device)[:, None]
    return hidden[rows, positions].reshape(-1, hidden.shape[-1])


def hf_mlm_loss(encoder, mlm_head, inputs, positions, labels, sentence_head=None, sentence_labels=None):
    """`loss_fn()` of a transformers masked-LM model doing ours' work: `encoder(**inputs)`, its MLM head
    (`mlm_head`, e.g. `BertForMaskedLM.cls`) on the hidden states gathered at `positions` only ([B x P, H] in,
    [B x P, V] logits, not [B, T, V]), the mean cross-entropy over the predictions (what the model's
    `labels` loss computes with -100 elsewhere), plus `sentence_head(pooler_output)`'s cross-entropy against
    `sentence_labels` (NSP / SOP) when given. `positions`, `labels`: [B, P] numpy arrays."""
    import torch
    import torch.nn.functional as F

    positions = torch.from_numpy(np.asarray(positions, "int64"))
    labels = torch.from_numpy(np.asarray(labels, "int64")).reshape(-1)
    if sentence_labels is not None:
        sentence_labels = torch.from_numpy(np.asarray(sentence_labels, "int64"))

    def loss_fn():
        out = encoder(**inputs)
        loss = F.cross_entropy(mlm_head(gather_rows(out.last_hidden_state, positions)), labels)
        if sentence_head is not None:
            loss = loss + F.cross_entropy(sentence_head(out.pooler_output), sentence_labels)
        return loss

    return loss_fn


def torch_train_step(model, loss_fn, lr=1e-4, weight_decay=0.01):
    """`step()`: `loss_fn()`, backward, `torch.optim.AdamW` step, zero_grad; returns the loss (float).

    The step carries `.model` and `.compiled()`: a step of `torch.compile(loss_fn)` (forward and backward
    compiled by inductor) sharing the model and the optimizer (`benchmarks.harness.torch_compiled` builds it)."""
    import torch

    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr,
                                  weight_decay=weight_decay)

    def make(fn):
        def step():
            loss = fn()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            return float(loss.detach())

        step.model = model
        return step

    step = make(loss_fn)
    step.compiled = lambda: make(torch.compile(loss_fn))
    return step


def our_backbone(family, d):
    """`family`'s backbone (the registry's class, `keras_pretrain.families`) at dims `d`, random weights;
    `d["E"]` goes to a backbone that takes `embedding_dim` (ALBERT's factorised embedding)."""
    from keras_pretrain import families

    cls = families.get(family).backbone_class
    kwargs = dict(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"], hidden_dim=d["H"],
                  intermediate_dim=d["I"])
    if "E" in d and "embedding_dim" in inspect.signature(cls).parameters:  # ALBERT's factorised embedding
        kwargs["embedding_dim"] = d["E"]
    return cls(**kwargs)


def our_encoder(family, d, outputs=("sequence_output",)):
    """(Keras model of `outputs`, its sorted input names, backbone params) of `our_backbone(family, d)`;
    `Skip` where the family's module cannot be imported."""
    import keras

    try:
        backbone = our_backbone(family, d)
    except ImportError as e:
        raise Skip(f"keras_pretrain.models.{family} not importable: {e}")
    # Only the last hidden states, as transformers returns by default (no per-layer outputs to host).
    inputs = {name: backbone.input[name] for name in backbone.input}
    out = backbone(inputs)
    out = [out[name] for name in outputs] if len(outputs) > 1 else out[outputs[0]]
    return keras.Model(inputs, out), sorted(inputs), backbone.count_params()


def _hf_sizes(d):
    """The dims `d` under transformers' BERT-style config names."""
    return dict(vocab_size=d["V"], hidden_size=d["H"], num_hidden_layers=d["L"], num_attention_heads=d["A"],
                intermediate_size=d["I"])


# transformers' encoder timed against ours, per family: (config class, model class, the config's arguments
# from the dims, the model's own arguments).
HF_ENCODERS = {
    "bert": ("BertConfig", "BertModel", lambda d: dict(_hf_sizes(d), hidden_act=TANH_GELU), {}),
    "albert": ("AlbertConfig", "AlbertModel",
               lambda d: dict(_hf_sizes(d), embedding_size=d["E"], hidden_act=TANH_GELU), {}),
    "roberta": ("RobertaConfig", "RobertaModel",
                lambda d: dict(_hf_sizes(d), max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5),
                {"add_pooling_layer": False}),
    "distil_bert": ("DistilBertConfig", "DistilBertModel",
                    lambda d: dict(vocab_size=d["V"], dim=d["H"], n_layers=d["L"], n_heads=d["A"], hidden_dim=d["I"]),
                    {}),
}


def hf_encoder(family, d):
    """transformers' encoder of `family` (`HF_ENCODERS`) at dims `d`, random weights, in eval mode."""
    import transformers as t

    try:
        config_class, model_class, config_args, model_args = HF_ENCODERS[family]
    except KeyError:
        raise ValueError(family) from None
    model = getattr(t, model_class)(getattr(t, config_class)(**config_args(d)), **model_args)
    return model.eval()


# --- Corpus and vocabularies -------------------------------------------------------------------------


def corpus_lines():
    """The non-empty lines of the bundled corpus/pretrain.txt, stripped."""
    with open(CORPUS, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()]


def documents():
    """The bundled corpus's documents (blank-line separated), stripped."""
    with open(CORPUS, encoding="utf-8") as f:
        return [d.strip() for d in f.read().split("\n\n") if d.strip()]


def quick_vocab(lines, size):
    """A WordPiece vocabulary in seconds: specials, every character (and its ## form), frequent words."""
    import collections
    import re
    import unicodedata

    words = collections.Counter()
    chars = set()
    for line in lines:
        text = unicodedata.normalize("NFD", line.lower())
        text = "".join(c for c in text if unicodedata.category(c) != "Mn")
        for word in re.findall(r"\w+|[^\w\s]", text):
            words[word] += 1
            chars.update(word)
    chars = sorted(chars)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    taken = set(vocab)
    for word, _ in words.most_common():
        if len(vocab) >= size:
            break
        if word not in taken:
            vocab.append(word)
            taken.add(word)
    return vocab


def write_vocab(path, size=8000, lines=None):
    """`quick_vocab` of `lines` (default: every line of the bundled corpus's documents) as a vocab.txt."""
    if lines is None:
        lines = [line for d in documents() for line in d.split("\n")]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(quick_vocab(lines, size)) + "\n")
    return path


def write_corpus(folder, shards, documents_per_shard=None):
    """`shards` files of the bundled corpus's documents, reordered per shard (seeded). Returns the paths."""
    docs = documents()
    os.makedirs(folder, exist_ok=True)
    paths = []
    for shard in range(shards):
        order = list(docs)
        random.Random(shard).shuffle(order)
        path = os.path.join(folder, f"part-{shard:05d}.txt")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n\n".join(order[:documents_per_shard] if documents_per_shard else order) + "\n")
        paths.append(path)
    return paths


def run_command(command, env=None):
    """Run a command; returns (wall seconds, cpu seconds, peak RSS MB of its largest process, stdout+err)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2", **(env or {})))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = proc.stdout + proc.stderr
    if proc.returncode:
        raise RuntimeError(f"{' '.join(command[:4])}... exit {proc.returncode}: {output.strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss / 1024, output


def write_records(folder, seq=128, predictions=20, copies=4):
    """8 TFRecord shards of `copies` copies of the bundled corpus (`recipes.create_pretraining_data`, NSP, token
    masking, dupe factor 1) and their vocabulary, under `folder`. Returns (record files, vocab.txt)."""
    import tensorflow as tf

    write_corpus(os.path.join(folder, "corpus"), copies)
    vocab = write_vocab(os.path.join(folder, "vocab.txt"))
    run_command([sys.executable, "-m", "recipes.create_pretraining_data", "--input_file",
                 os.path.join(folder, "corpus"), "--vocab_file", vocab, "--output_file",
                 f"{folder}/records/train-{{shard}}.tfrecord", "--num_shards", "8", "--num_examples_to_print", "0",
                 "--dupe_factor", "1", "--max_seq_length", str(seq), "--max_predictions_per_seq", str(predictions)])
    return sorted(tf.io.gfile.glob(f"{folder}/records/*.tfrecord")), vocab
