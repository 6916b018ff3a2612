"""Token classification (NER) fine-tuning step (issue 42, item 8), measured by issue 45's rules as `bench_qa.qa_step`:
both sides in ONE process, the same threads, the same work, interleaved rounds, paired ratios.

    KERAS_BACKEND=jax python -m benchmarks.cases ner_step '{"shape": "tiny", "rounds": 2}'

`ner_step`: one fine-tuning step of `TokenClassifier(BertBackbone(...), 9)` (its compiled `train_on_batch`, on the
process's KERAS_BACKEND) vs transformers' `BertForTokenClassification` (forward with `labels`, backward,
`torch.optim.AdamW` step). Same config (BERT-base: L12 H768 A12 I3072 V30522, 512 positions, tanh GELU:
transformers' fused `gelu_pytorch_tanh`), dropout 0.1 at the same places (embeddings, attention probabilities,
attention and feed-forward outputs, and the head's dropout before the classifier on both sides), AdamW(lr 1e-4,
weight decay 0.01) (ours: `keras_pretrain.optimizers.AdamW`), float32, the same random batch (`[CLS]` tokens
`[SEP]`, every position real) and the same labels: 9 classes (CoNLL-2003's IOB2 tags), -100 on `[CLS]`, `[SEP]`
and ~30% of the other positions (the sub-words after a word's first), the same loss (transformers' cross-entropy
over the labelled tokens, ignore index -100: ours `TokenLoss`). Ours is compiled without metrics (transformers
computes none).

The fairness machinery (threads per side, interleaved rounds, paired ratios) is `benchmarks.harness`'s.
"""

import time

import numpy as np

from benchmarks.bench_qa import _dims, _hf_config, _hf_side, _hf_train_step, _our_train_step, _pooler_note
from benchmarks.bench_qa import _step_result, _trainable
from benchmarks.harness import step_report, time_steps, with_threads

CONLL_LABELS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
IGNORE = -100  # transformers' ignore index (keras_pretrain.tasks.token_classification.IGNORE)
SUBWORD_SHARE = 0.3  # the share of the non-special positions labelled IGNORE (sub-words after a word's first)


def ner_batch(batch, seq, vocab, num_labels=len(CONLL_LABELS), subword_share=SUBWORD_SHARE, seed=0):
    """A fixed CoNLL-shaped batch: `[CLS]` tokens `[SEP]` (random ids, every position real), segment ids 0, and
    labels `[B, T]` int32: random in [0, num_labels), IGNORE on the first and last positions (the special tokens)
    and on each other position with probability `subword_share` (the sub-words after a word's first piece)."""
    rs = np.random.RandomState(seed)
    ids = rs.randint(5, vocab, size=(batch, seq)).astype("int32")
    ids[:, 0], ids[:, -1] = 2, 3  # [CLS], [SEP] ids of the benchmark vocabularies
    labels = rs.randint(0, num_labels, size=(batch, seq)).astype("int32")
    labels[rs.random_sample((batch, seq)) < subword_share] = IGNORE
    labels[:, 0] = labels[:, -1] = IGNORE
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    return x, labels


def _our_tagger(d, num_labels, dropout=0.1):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.tasks import TokenClassifier

    backbone = BertBackbone(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"], hidden_dim=d["H"],
                            intermediate_dim=d["I"], dropout=dropout, max_sequence_length=512)
    return TokenClassifier(backbone, num_labels, dropout=dropout)  # dropout -> Dense(num_labels), as transformers


def ner_step(shape="base", batch=8, seq=128, rounds=5, threads=1, num_labels=len(CONLL_LABELS)):
    """One NER fine-tuning step, ours (KERAS_BACKEND, `train_on_batch`) vs transformers' BertForTokenClassification.

    Args:
        shape: "base" (BERT-base) or "tiny" (`benchmarks.fixtures.TINY`, a smoke run).
        batch, seq: the batch (8 x 128 tokens: a few seconds per BERT-base step on one core).
        rounds: timed rounds (>= 5 for a reported number), after one untimed warm-up step each (it compiles).
        threads: threads per library (`benchmarks.harness.set_threads`).
        num_labels: the tags (9: CoNLL-2003's).

    Returns:
        A JSON-serialisable dict: backend, shape, dims, batch, seq, rounds, threads (the settings), labelled
        tokens, per side {step_s (median), times, first_step_s, build_s, params, loss_first, loss_last};
        `vs_transformers` {median, min, max, per_round} of transformers step / ours step; notes; peak_rss_mb.
    """
    return with_threads(threads, _ner_step, shape, batch, seq, rounds, num_labels)


def _ner_step(settings, shape, batch, seq, rounds, num_labels):
    import keras
    import torch
    import transformers as t

    from keras_pretrain.optimizers import AdamW
    from keras_pretrain.tasks.token_classification import TokenLoss

    d = _dims(shape)
    x, labels = ner_batch(batch, seq, d["V"], num_labels)
    result = _step_result(shape, d, batch, seq, rounds, settings, num_labels=num_labels,
                          labelled_tokens=int((labels != IGNORE).sum()))

    # Ours.
    keras.utils.set_random_seed(0)
    begin = time.perf_counter()
    model = _our_tagger(d, num_labels)
    model.compile(optimizer=AdamW(1e-4, weight_decay=0.01), loss=TokenLoss(), metrics=None)
    ours = _our_train_step(model, x, labels)
    result["ours"] = {"params": _trainable(model), "build_s": time.perf_counter() - begin}

    # transformers.
    torch.manual_seed(0)
    begin = time.perf_counter()
    config = _hf_config(d)
    config.num_labels = num_labels  # classifier_dropout None: the head's dropout is hidden_dropout_prob (0.1)
    hf = t.BertForTokenClassification(config)  # no pooler (add_pooling_layer=False inside)
    # its loss: CrossEntropyLoss over the tokens whose label is not -100
    transformers_ = _hf_train_step(hf, x, labels=labels.astype("int64"))
    result["transformers"] = _hf_side(hf, begin)
    # The same network: ours holds BERT's pooler, which the token head never reads; transformers builds none.
    notes = [_pooler_note(result, model, "token head", more=" (BertBackbone has no option to leave it out)"),
             "ours compiled with TokenLoss and no metrics (its default adds TokenAccuracy); transformers "
             "computes the loss only"]

    return time_steps(result, {"ours": ours, "transformers": transformers_}, rounds, batch * seq, notes)


# --- Report ---------------------------------------------------------------------------------------------


def report(by, quick):
    """(markdown sections, targets) of the tagging group: labels "ner {backend}" (`ner_step`). Target (base size
    only): the step >= 1.2x transformers on the best backend (where our step is fastest, as `bench_qa.report`;
    every backend's ratio in the text)."""
    return step_report(by, "tagging", "ner", "NER fine-tuning step (BertForTokenClassification shape, 9 labels, "
                       "-100 on specials and ~30% sub-words; AdamW, float32, dropout 0.1",
                       "NER fine-tuning step (BERT-base, batch 8, seq 128): ours >= 1.2x transformers (best backend)",
                       digits=3)  # 1.198 is no 1.20
