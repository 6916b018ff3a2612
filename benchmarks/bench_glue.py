"""GLUE regression (STS-B) and multiple-choice (SWAG / RACE) fine-tuning steps (issue 45, item 3), measured by
issue 45's rules as `bench_qa.qa_step` and `bench_tagging.ner_step`: both sides in ONE process, the same threads,
the same work, interleaved rounds, paired ratios.

    KERAS_BACKEND=jax python -m benchmarks.cases glue_step '{"task": "regression", "shape": "tiny", "rounds": 2}'

`glue_step(task="regression")`: one step of `SequenceClassifier(BertBackbone(...), 1, problem_type="regression")`
(its compiled `train_on_batch`) vs transformers' `BertForSequenceClassification(num_labels=1,
problem_type="regression")`: the pooled `[CLS]`, dropout, `Dense(1)`, mean squared error on float labels in
[0, 5] (STS-B's scores). `glue_step(task="multiple_choice")`: `MultipleChoice(BertBackbone(...), num_choices=4)` vs
`BertForMultipleChoice`: `[B, 4, T]` inputs folded to `[4 B, T]`, one score per choice from the pooled `[CLS]`,
softmax cross-entropy over the 4 choices (labels: the right choice's index).

Same config as the other fine-tuning steps (BERT-base: L12 H768 A12 I3072 V30522, 512 positions, tanh GELU:
transformers' fused `gelu_pytorch_tanh`), dropout 0.1 at the same places (embeddings, attention probabilities,
attention and feed-forward outputs, the head's dropout before its output layer), AdamW(lr 1e-4, weight decay
0.01) (ours: `keras_pretrain.optimizers.AdamW`), float32, the same random batch (`[CLS]` a `[SEP]` b `[SEP]`, every
position real) and labels. Both heads read BERT's pooler, so the trainable parameter counts are equal (checked). Ours is
compiled with its default loss and no metrics (transformers computes none). The regression batch is 8 x 128
tokens; the multiple-choice batch 2 x 4 choices x 128: the same 1,024 tokens per step.
"""

import time

import numpy as np

from benchmarks.bench_qa import _dims, _hf_config, _hf_side, _hf_train_step, _our_train_step, _step_result
from benchmarks.bench_qa import _trainable
from benchmarks.harness import same_params, step_report, time_steps, with_threads

TASKS = ("regression", "multiple_choice")
CHOICES = 4  # SWAG's and RACE's
STSB_MAX = 5.0  # STS-B's scores lie in [0, 5]


def pair_batch(rows, seq, vocab, seed=0):
    """`rows` packed pairs `[CLS] a [SEP] b [SEP]` of random ids (every position real), the second segment 1."""
    rs = np.random.RandomState(seed)
    ids = rs.randint(5, vocab, size=(rows, seq)).astype("int32")
    first = rs.randint(seq // 4, seq // 2, size=rows)
    segments = np.zeros_like(ids)
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS], [SEP] ids of the benchmark vocabularies
    for row, end in enumerate(first):
        ids[row, end] = 3
        segments[row, end + 1:] = 1
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": np.ones_like(ids)}


def glue_batch(task, batch, seq, vocab, seed=0):
    """`(x, labels)`: regression `[B, T]` inputs and float32 labels `[B]` in [0, 5]; multiple choice `[B, 4, T]`
    inputs and int32 labels `[B]` (the right choice)."""
    rs = np.random.RandomState(seed + 1)
    if task == "regression":
        return pair_batch(batch, seq, vocab, seed), rs.uniform(0, STSB_MAX, size=batch).astype("float32")
    x = {name: a.reshape(batch, CHOICES, seq) for name, a in pair_batch(batch * CHOICES, seq, vocab, seed).items()}
    return x, rs.randint(0, CHOICES, size=batch).astype("int32")


def _our_task(task, d, dropout=0.1):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.tasks import MultipleChoice
    from keras_pretrain.tasks import SequenceClassifier

    backbone = BertBackbone(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"], hidden_dim=d["H"],
                            intermediate_dim=d["I"], dropout=dropout, max_sequence_length=512)
    if task == "regression":
        return SequenceClassifier(backbone, 1, dropout=dropout, problem_type="regression")
    return MultipleChoice(backbone, num_choices=CHOICES, dropout=dropout)


def glue_step(task="regression", shape="base", batch=None, seq=128, rounds=5, threads=1):
    """One GLUE-style fine-tuning step, ours (KERAS_BACKEND, `train_on_batch`) vs transformers.

    Args:
        task: "regression" (STS-B: `BertForSequenceClassification`, num_labels 1) or "multiple_choice" (SWAG /
            RACE: `BertForMultipleChoice`, 4 choices).
        shape: "base" (BERT-base) or "tiny" (`benchmarks.fixtures.TINY`, a smoke run).
        batch: examples per step (default: 8 for regression, 2 for multiple choice: 8 sequences either way).
        seq: tokens per sequence.
        rounds: timed rounds (>= 5 for a reported number), after one untimed warm-up step each (it compiles).
        threads: threads per library (`benchmarks.harness.set_threads`).

    Returns:
        A JSON-serialisable dict: task, backend, shape, dims, batch, seq, rounds, threads (the settings), per side
        {step_s (median), times, first_step_s, build_s, params, loss_first, loss_last}; `vs_transformers`
        {median, min, max, per_round} of transformers step / ours step; notes; peak_rss_mb.
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    batch = batch or (8 if task == "regression" else 2)
    return with_threads(threads, _glue_step, task, shape, batch, seq, rounds)


def _glue_step(settings, task, shape, batch, seq, rounds):
    import keras
    import torch
    import transformers as t

    from keras_pretrain.optimizers import AdamW

    d = _dims(shape)
    x, labels = glue_batch(task, batch, seq, d["V"])
    sequences = batch * (CHOICES if task == "multiple_choice" else 1)
    result = {"task": task, **_step_result(shape, d, batch, seq, rounds, settings, sequences=sequences)}

    # Ours: the task's default loss (MSE / softmax cross-entropy over the choices), no metrics.
    keras.utils.set_random_seed(0)
    begin = time.perf_counter()
    model = _our_task(task, d)
    model.compile(optimizer=AdamW(1e-4, weight_decay=0.01), loss=model.default_compile_args()["loss"], metrics=None)
    ours = _our_train_step(model, x, labels)
    result["ours"] = {"params": _trainable(model), "build_s": time.perf_counter() - begin}

    # transformers.
    torch.manual_seed(0)
    begin = time.perf_counter()
    config = _hf_config(d)  # classifier_dropout None: the head's dropout is hidden_dropout_prob (0.1)
    if task == "regression":
        config.num_labels, config.problem_type = 1, "regression"
        hf = t.BertForSequenceClassification(config)
    else:
        hf = t.BertForMultipleChoice(config)
    # its loss: MSELoss on the squeezed logits / CrossEntropyLoss over the choices
    transformers_ = _hf_train_step(hf, x, labels=labels.astype("int64" if task == "multiple_choice" else "float32"))
    result["transformers"] = _hf_side(hf, begin)
    notes = [same_params({side: result[side]["params"] for side in ("ours", "transformers")}),
             "ours compiled with its task's default loss and no metrics; transformers computes the loss only"]
    if task == "multiple_choice":
        notes.append(f"multiple choice: batch {batch} x {CHOICES} choices x {seq} tokens, folded to "
                     f"{sequences} sequences on both sides")
    return time_steps(result, {"ours": ours, "transformers": transformers_}, rounds, sequences * seq, notes)


# --- Report ---------------------------------------------------------------------------------------------


def report(by, quick):
    """(markdown sections, targets) of the glue group: labels "regression {backend}" and "multiple_choice
    {backend}" (`glue_step`). Target (base size only): each step >= 1.2x transformers on the best backend."""
    sections, targets = [], []
    for task, heading, target in (
            ("regression", "GLUE regression fine-tuning step (STS-B shape: BertForSequenceClassification, "
             "num_labels 1, MSE; AdamW, float32, dropout 0.1",
             "GLUE regression step (BERT-base, batch 8, seq 128): ours >= 1.2x transformers (best backend)"),
            ("multiple_choice", "Multiple-choice fine-tuning step (SWAG / RACE shape: BertForMultipleChoice, 4 "
             "choices, batch 2 x 4 x 128; AdamW, float32, dropout 0.1",
             "Multiple-choice step (BERT-base, batch 2 x 4 choices, seq 128): ours >= 1.2x transformers "
             "(best backend)")):
        s, t = step_report(by, "glue", task + " ", heading, target, digits=3)
        sections += s
        targets += t
    return sections, targets
