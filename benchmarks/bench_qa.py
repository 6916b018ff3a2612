"""SQuAD-style span question answering (issue 41, item 8), measured the way issue 45 asks of every comparison:
both sides in ONE process, the same threads, the same work, interleaved rounds, paired ratios.

    KERAS_BACKEND=jax python -m benchmarks.cases qa_step '{"shape": "tiny", "rounds": 2}'
    KERAS_BACKEND=tensorflow python -m benchmarks.cases qa_serving '{"shape": "tiny", "rounds": 2}'

`qa_step`: one fine-tuning step of `SpanQuestionAnswering(BertBackbone(...))` (its compiled `train_on_batch`, on
the process's KERAS_BACKEND) vs transformers' `BertForQuestionAnswering` (forward with `start_positions` /
`end_positions`, backward, `torch.optim.AdamW` step). Same config (BERT-base: L12 H768 A12 I3072 V30522, 512
positions, tanh GELU: transformers' fused `gelu_pytorch_tanh`), dropout 0.1 at the same places, no dropout in either
QA head, AdamW(lr 1e-4, weight decay 0.01) (ours: `keras_pretrain.optimizers.AdamW`), float32, the same random batch
(`[CLS]` 64 question tokens `[SEP]` passage `[SEP]`, every position real) and the same start / end labels, the
same loss (mean of the start and end softmax cross-entropies).

`qa_serving`: strings in, answers out. (a) ours: the SavedModel of `hub_modules.exporting.export_qa_serving`
(tokenization, run_squad's windows, the model, the best span and its character offsets, all in one TensorFlow
graph), loaded with `tf.saved_model.load`; (b) transformers: `BertTokenizerFast` on the same vocab.txt (question /
context pairs, `truncation="only_second"`, overflowing windows with offsets) + `BertForQuestionAnswering` loaded
from `keras_pretrain.convert.to_huggingface` of the same model (same weights) under `torch.inference_mode` +
`best_answers` below in Python (transformers' `run_qa.py` post-processing plus run_squad's max-context rule,
which ours applies). Questions of one length, so transformers' fixed `stride` (its overlap) cuts run_squad's
windows; the case checks the windows' ids and both models' logits, and counts the answers that agree. Batch-1
latency and batch-`batch` throughput (questions/s). The serving case needs the TensorFlow backend (the export).

Fairness (issue 45): both sides are built first, each runs untimed compiling / warm-up calls, then `rounds` rounds
each time one call of each side, the order alternating; the ratio is the median of the per-round ratios
(reference time / ours: > 1 = ours faster) with their min and max. Threads: `threads` per side, set explicitly
before any framework op (`benchmarks.harness.set_threads`, shared by every comparison) and printed in the result: the process is pinned to `threads` cores
(`sched_setaffinity`, every thread of the process: the one setting JAX 0.10's CPU client obeys; the XLA flags
`--xla_cpu_multi_thread_eigen` / `intra_op_parallelism_threads` are set too, before JAX is imported, but measured
here they change nothing: a jitted matmul still ran on both cores), `torch.set_num_threads` /
`set_num_interop_threads`, TensorFlow's intra-op / inter-op threads.
"""

import os
import statistics
import time

import numpy as np

from benchmarks.fixtures import ENCODERS, TANH_GELU, TINY, Skip, corpus_lines, torch_train_step, write_vocab
from benchmarks.harness import paired, set_threads, step_report, time_steps  # noqa: F401 (paired: re-exported)
from benchmarks.harness import with_threads
from benchmarks.harness import ratio_text as _ratio
from benchmarks.machine import keras_backend, peak_rss_mb
from benchmarks.report import cases, fmt, table

QUESTION_TOKENS = 64  # qa_step: the question's length in the packed pair (run_squad's max_query_length)
MAX_ANSWER_LENGTH = 30
SERVING_NOTE = ("the SavedModel is a TensorFlow program (keras_pretrain.export writes it on the TensorFlow "
                "backend), so the serving cases run with KERAS_BACKEND=tensorflow")


def _dims(shape):
    if shape == "base":
        return dict(ENCODERS["bert"])
    if shape == "tiny":
        return {k: v for k, v in TINY.items() if k != "E"}
    raise ValueError(f"shape must be 'base' or 'tiny', got {shape!r}")


def _hf_config(d, dropout=0.1):
    """transformers' BertConfig of dims `d`, as ours: tanh GELU (`fixtures.TANH_GELU`, fused), 512 positions,
    eps 1e-12."""
    import transformers as t

    return t.BertConfig(vocab_size=d["V"], hidden_size=d["H"], num_hidden_layers=d["L"], num_attention_heads=d["A"],
                        intermediate_size=d["I"], hidden_act=TANH_GELU, max_position_embeddings=512,
                        hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout, layer_norm_eps=1e-12)


def _our_qa(d, dropout=0.1):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.tasks import SpanQuestionAnswering

    backbone = BertBackbone(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"], hidden_dim=d["H"],
                            intermediate_dim=d["I"], dropout=dropout, max_sequence_length=512)
    return SpanQuestionAnswering(backbone)  # BERT's head: Dense(2) on the token states, no dropout


def _trainable(model):
    seen = {id(v): v for v in model.trainable_weights}
    return int(sum(np.prod(v.shape) for v in seen.values()))


# --- The fine-tuning steps' shared parts (`qa_step`, `bench_tagging.ner_step`, `bench_glue.glue_step`) ----------


def _step_result(shape, d, batch, seq, rounds, settings, **extra):
    """The settings part of a fine-tuning step's result (`extra`: the case's own keys)."""
    import keras

    return {"backend": keras.config.backend(), "shape": shape, "dims": d, "batch": batch, "seq": seq, **extra,
            "rounds": rounds, "threads": settings, "dropout": 0.1, "optimizer": "AdamW(lr 1e-4, weight decay 0.01)",
            "dtype": "float32"}


def _our_train_step(model, x, y):
    """Ours: `step()`, one `train_on_batch(x, y)` of the compiled `model` (its compiled train step), returning the
    loss."""

    def ours():
        return float(model.train_on_batch(x, y, return_dict=True)["loss"])

    return ours


def _hf_train_step(hf, x, **labels):
    """transformers' side: `step()`, the forward of `hf` on the batch `x` (int64 ids, segments, mask) with the
    `labels` (numpy arrays, in their dtype) giving its loss, backward, a `torch.optim.AdamW(1e-4, weight decay
    0.01)` step (`fixtures.torch_train_step`: `hf` in training mode); returns the loss."""
    import torch

    inputs = {"input_ids": torch.from_numpy(x["token_ids"].astype("int64")),
              "token_type_ids": torch.from_numpy(x["segment_ids"].astype("int64")),
              "attention_mask": torch.from_numpy(x["padding_mask"].astype("int64")),
              **{name: torch.from_numpy(value) for name, value in labels.items()}}
    return torch_train_step(hf, lambda: hf(**inputs).loss)


def _hf_side(hf, begin):
    """transformers' side of the result: trainable params, build time since `begin`, its attention."""
    return {"params": int(sum(p.numel() for p in hf.parameters() if p.requires_grad)),
            "build_s": time.perf_counter() - begin,
            "attn_implementation": getattr(hf.config, "_attn_implementation", None)}


def _pooler_note(result, model, head, more=""):
    """Checks ours = transformers' trainable parameters + BertBackbone's pooler, which `head` never reads
    (transformers builds none); records the pooler's count in `result["ours"]` and returns the note."""
    pooler = int(sum(np.prod(v.shape) for v in model.backbone.pooled_dense.trainable_weights))
    result["ours"]["unused_pooler_params"] = pooler
    ours, hf_params = result["ours"]["params"], result["transformers"]["params"]
    if ours - pooler != hf_params:
        raise AssertionError(f"parameter counts differ: ours {ours:,} - pooler {pooler:,} != "
                             f"transformers {hf_params:,}")
    return (f"trainable parameters: ours {ours:,}, transformers {hf_params:,}, the same network plus "
            f"BertBackbone's pooler ({pooler:,}), which the {head} never reads{more}: on JAX its gradient is zeros "
            "and AdamW still updates it (weight decay; extra work on our side only), on TensorFlow and PyTorch it "
            "gets no gradient and Keras skips it")


# --- (1) The fine-tuning step ----------------------------------------------------------------------------


def qa_batch(batch, seq, vocab, question=QUESTION_TOKENS, max_answer=MAX_ANSWER_LENGTH, seed=0):
    """A fixed SQuAD-shaped batch: `[CLS]` question `[SEP]` passage `[SEP]` (random ids, every position real),
    segment ids 0 / 1, and answer spans inside the passage (end >= start, at most `max_answer` tokens)."""
    rs = np.random.RandomState(seed)
    ids = rs.randint(5, vocab, size=(batch, seq)).astype("int32")
    ids[:, 0], ids[:, question + 1], ids[:, -1] = 2, 3, 3  # [CLS], [SEP] ids of the benchmark vocabularies
    segments = np.zeros_like(ids)
    segments[:, question + 2:] = 1
    start = rs.randint(question + 2, seq - 1 - max_answer, size=batch).astype("int32")
    end = (start + rs.randint(0, max_answer, size=batch)).astype("int32")
    return {"token_ids": ids, "segment_ids": segments, "padding_mask": np.ones_like(ids)}, start, end


def qa_step(shape="base", batch=4, seq=384, rounds=5, threads=1):
    """One SQuAD fine-tuning step, ours (KERAS_BACKEND, `train_on_batch`) vs transformers' BertForQuestionAnswering.

    Args:
        shape: "base" (BERT-base) or "tiny" (`benchmarks.fixtures.TINY`, a smoke run).
        batch, seq: the batch (4 x 384 tokens: ~5-15 s per BERT-base step on one core).
        rounds: timed rounds (>= 5 for a reported number), after one untimed warm-up step each (it compiles).
        threads: threads per library (`set_threads`).

    Returns:
        A JSON-serialisable dict: backend, shape, dims, batch, seq, rounds, threads (the settings), per side
        {step_s (median), times, first_step_s, build_s, params, loss_first, loss_last}; `vs_transformers`
        {median, min, max, per_round} of transformers step / ours step; notes; peak_rss_mb.
    """
    return with_threads(threads, _qa_step, shape, batch, seq, rounds)


def _qa_step(settings, shape, batch, seq, rounds):
    import keras
    import torch
    import transformers as t

    from keras_pretrain.optimizers import AdamW

    d = _dims(shape)
    x, start, end = qa_batch(batch, seq, d["V"])
    result = _step_result(shape, d, batch, seq, rounds, settings)

    # Ours.
    keras.utils.set_random_seed(0)
    begin = time.perf_counter()
    model = _our_qa(d)
    model.compile(optimizer=AdamW(1e-4, weight_decay=0.01))  # its default loss: mean of start / end span losses
    ours = _our_train_step(model, x, {"start_logits": start, "end_logits": end})
    result["ours"] = {"params": _trainable(model), "build_s": time.perf_counter() - begin}

    # transformers.
    torch.manual_seed(0)
    begin = time.perf_counter()
    hf = t.BertForQuestionAnswering(_hf_config(d))  # no pooler (add_pooling_layer=False inside)
    # its loss: (start CE + end CE) / 2
    transformers_ = _hf_train_step(hf, x, start_positions=start.astype("int64"), end_positions=end.astype("int64"))
    result["transformers"] = _hf_side(hf, begin)
    # The same network: ours holds BERT's pooler, which the QA head never reads; transformers builds none.
    notes = [_pooler_note(result, model, "QA head")]

    return time_steps(result, {"ours": ours, "transformers": transformers_}, rounds, batch * seq, notes)


# --- (2) Serving: strings in, answers out ------------------------------------------------------------------


def best_answers(start_logits, end_logits, windows, contexts, doc_stride, n_best_size=20,
                 max_answer_length=MAX_ANSWER_LENGTH):
    """The answer of each example from its windows' logits, in Python: transformers' `run_qa.py` post-processing
    plus run_squad's max-context rule (the rules our SavedModel runs in its graph).

    Per window: its `n_best_size` best start and end positions (`np.argsort`); a pair is valid when both are
    context tokens (`sequence_ids` 1), the start is in its "max context" window (`_check_is_max_context`:
    min(left, right context) + 0.01 x window length, the first best window), end >= start and the span has at
    most `max_answer_length` tokens; the best valid pair over all windows of the example (score = start + end
    logit) gives the answer's character offsets from the window's `offset_mapping`. `windows`: (example index,
    sequence ids, offsets) per window, an example's windows in order, `doc_stride` context tokens apart.

    Returns [(answer, start, end, score)] per context; ("", -1, -1, -inf) when no span is valid.
    """
    spans = []  # per window: (example, first context position, context length, first doc token)
    seen = {}
    for example, sequence_ids, _ in windows:
        context = [j for j, s in enumerate(sequence_ids) if s == 1]
        k = seen[example] = seen.get(example, -1) + 1
        spans.append((example, context[0], len(context), k * doc_stride))
    by_example = {}
    for i, span in enumerate(spans):
        by_example.setdefault(span[0], []).append(i)

    def max_context(i, position):
        best, best_score = None, None
        for w in by_example[spans[i][0]]:
            _, _, length, doc_start = spans[w]
            if doc_start <= position < doc_start + length:
                score = min(position - doc_start, doc_start + length - 1 - position) + 0.01 * length
                if best_score is None or score > best_score:
                    best, best_score = w, score
        return best == i

    best = [(-np.inf, -1, -1)] * len(contexts)
    for i, (start_row, end_row, (example, sequence_ids, offsets)) in enumerate(zip(start_logits, end_logits,
                                                                                 windows)):
        starts = np.argsort(start_row)[-1:-n_best_size - 1:-1]
        ends = np.argsort(end_row)[-1:-n_best_size - 1:-1]
        _, first, _, doc_start = spans[i]
        for s in starts:
            if sequence_ids[s] != 1 or not max_context(i, doc_start + s - first):
                continue
            for e in ends:
                if sequence_ids[e] != 1 or e < s or e - s + 1 > max_answer_length:
                    continue
                score = float(start_row[s] + end_row[e])
                if score > best[example][0]:
                    best[example] = (score, int(offsets[s][0]), int(offsets[e][1]))
    return [(contexts[i][a:b] if a >= 0 else "", a, b, score) for i, (score, a, b) in enumerate(best)]


def _english_words():
    """The words of the bundled corpus's English lines (ASCII, 5+ words), in order."""
    words = []
    for line in corpus_lines():
        if line.isascii() and len(line.split()) >= 5:
            words += line.split()
    return words


def squad_examples(count, hf_tokenizer, seq, doc_stride, question_tokens=12, seed=0):
    """`count` (question, context) pairs whose contexts take 2 or 3 windows of `seq` at `doc_stride`.

    Contexts: consecutive words of the corpus's English lines, cut at a piece count (transformers' tokenizer
    on our vocabulary, the same pieces as ours) alternating between 2 and 3 windows; questions: exactly
    `question_tokens` pieces (context words that are one piece each, then "?"), so every example has the same
    room for the passage, `seq - question_tokens - 3`, and transformers' `stride` (its overlap) can be set to
    `room - doc_stride`: both sides cut the same windows.
    """
    rs = np.random.RandomState(seed)
    words = _english_words()
    pieces = hf_tokenizer(words, add_special_tokens=False)["input_ids"]
    room = seq - question_tokens - 3
    targets = [room + doc_stride // 2, room + doc_stride + doc_stride // 2]  # 2 windows, 3 windows
    questions, contexts = [], []
    position = 0
    for i in range(count):
        target = targets[i % 2]
        total, first = 0, position
        while total + len(pieces[position % len(words)]) <= target:
            total += len(pieces[position % len(words)])
            position += 1
        chosen = [position_ % len(words) for position_ in range(first, position)]
        contexts.append(" ".join(words[j] for j in chosen))
        single = [words[j] for j in chosen if len(pieces[j]) == 1 and words[j].isalpha()]
        picks = rs.choice(len(single), question_tokens - 1, replace=len(single) < question_tokens - 1)
        questions.append(" ".join(single[k] for k in sorted(picks)) + "?")
        position += int(rs.randint(50, 500))  # the next context starts elsewhere
    lengths = [len(ids) for ids in hf_tokenizer(questions, add_special_tokens=False)["input_ids"]]
    assert set(lengths) == {question_tokens}, lengths
    return questions, contexts, room


def qa_serving(shape="base", seq=384, doc_stride=128, batch=32, rounds=5, latency_rounds=None, threads=1,
               n_best_size=20, max_answer_length=MAX_ANSWER_LENGTH, vocab_size=30522):
    """Strings in, answers out: our QA serving SavedModel vs transformers' tokenizer + model + Python post-processing.

    Args:
        shape: "base" (BERT-base, random weights) or "tiny" (a smoke run).
        seq, doc_stride: the windows (run_squad's 384 / 128); contexts take 2 or 3 windows each.
        batch: the throughput batch (questions per call).
        rounds: timed throughput rounds; latency_rounds: timed batch-1 rounds (default `rounds`), one example
            per round (the same for both sides), after one untimed call of each side per batch size.
        threads: threads per library (`set_threads`).
        n_best_size, max_answer_length: run_squad's, on both sides.
        vocab_size: the WordPiece vocabulary learned from the corpus (`benchmarks.fixtures.write_vocab`: specials,
            every character and its ## form (the corpus's Chinese takes ~7,000 of each), frequent words; both
            tokenizers read its vocab.txt); the embedding has max(this, the shape's) rows.

    Returns:
        A JSON-serialisable dict: latency (b1 ms) and throughput (questions/s) per side with their times,
        `vs_transformers` {latency, throughput}: {median, min, max, per_round} of the per-round ratios
        transformers time / ours; windows per example; how many answers (spans) agree; notes.
    """
    if keras_backend() != "tensorflow":
        raise Skip(SERVING_NOTE)
    settings, restore = set_threads(threads)
    try:
        return _qa_serving(shape, seq, doc_stride, batch, rounds, latency_rounds or rounds, settings, n_best_size,
                           max_answer_length, vocab_size)
    finally:
        restore()


def _qa_serving(shape, seq, doc_stride, batch, rounds, latency_rounds, settings, n_best_size, max_answer_length,
                vocab_size):
    import tempfile

    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's ops, before tf.saved_model.load)
    import torch
    import transformers as t

    from hub_modules.exporting import export_qa_serving
    from keras_pretrain.convert import to_huggingface
    from keras_pretrain.models.bert import BertTokenizer

    started = time.perf_counter()
    keras.utils.set_random_seed(0)  # before any tokenizer exists (see bench_serving.saved_model_serving)
    d = _dims(shape)
    result = {"backend": keras.config.backend(), "shape": shape, "dims": d, "seq": seq, "doc_stride": doc_stride,
              "batch": batch, "rounds": rounds, "latency_rounds": latency_rounds, "threads": settings,
              "n_best_size": n_best_size, "max_answer_length": max_answer_length}
    notes = [SERVING_NOTE]
    with tempfile.TemporaryDirectory() as tmp:
        vocab = write_vocab(os.path.join(tmp, "vocab.txt"), vocab_size)
        ours_tok = BertTokenizer(vocabulary=vocab, lowercase=True)
        hf_tok = t.BertTokenizerFast(vocab=vocab, do_lower_case=True)  # transformers 5 ignores `vocab_file`
        result["vocabulary"] = int(ours_tok.vocabulary_size())
        d["V"] = max(d["V"], result["vocabulary"])
        questions, contexts, room = squad_examples(batch, hf_tok, seq, doc_stride)
        overlap = room - doc_stride  # transformers' `stride` is the overlap of consecutive windows

        model = _our_qa(d, dropout=0.1)  # inference: dropout off on both sides
        result["params"] = int(model.count_params())
        begin = time.perf_counter()
        path = os.path.join(tmp, "qa", "1")
        export_qa_serving(model, path, ours_tok, seq_length=seq, doc_stride=doc_stride,
                          n_best_size=n_best_size, max_answer_length=max_answer_length)
        serve = tf.saved_model.load(path).signatures["serving_default"]
        result["export_load_s"] = time.perf_counter() - begin
        begin = time.perf_counter()
        folder = to_huggingface(model, os.path.join(tmp, "hf"), tokenizer=ours_tok)
        # The exported config names `gelu_new` (our tanh GELU); the same function, fused (`fixtures.TANH_GELU`).
        hf = t.AutoModelForQuestionAnswering.from_pretrained(folder, hidden_act=TANH_GELU).eval()
        result["convert_load_s"] = time.perf_counter() - begin
        result["transformers_class"] = type(hf).__name__
        result["transformers_params"] = int(sum(p.numel() for p in hf.parameters()))

    def ours(qs, cs):
        out = serve(question=tf.constant(qs), context=tf.constant(cs))
        return [(a.decode("utf-8"), int(s), int(e), float(sc)) for a, s, e, sc in
                zip(out["answer"].numpy(), out["start"].numpy(), out["end"].numpy(), out["score"].numpy())]

    window_counts = []

    def transformers_(qs, cs):
        enc = hf_tok(qs, cs, truncation="only_second", max_length=seq, stride=overlap, padding="max_length",
                     return_overflowing_tokens=True, return_offsets_mapping=True, return_tensors="pt")
        with torch.inference_mode():
            out = hf(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"],
                     attention_mask=enc["attention_mask"])
        examples = enc["overflow_to_sample_mapping"].tolist()
        offsets = enc["offset_mapping"].tolist()
        windows = [(examples[i], enc.sequence_ids(i), offsets[i]) for i in range(len(examples))]
        window_counts.append(len(examples))
        return best_answers(out.start_logits.numpy(), out.end_logits.numpy(), windows, cs, doc_stride, n_best_size,
                            max_answer_length)

    sides = {"ours": ours, "transformers": transformers_}
    # run_squad's window count per example (the serving graph's rule: keras_pretrain.tasks.question_answering.windows).
    from keras_pretrain.tasks.question_answering.windows import window_count

    doc_pieces = [len(ids) for ids in hf_tok(contexts, add_special_tokens=False)["input_ids"]]
    expected = [window_count(n, room, doc_stride) for n in doc_pieces]
    result["context_pieces"] = {"min": min(doc_pieces), "max": max(doc_pieces)}
    result["windows_per_example"] = {"min": min(expected), "max": max(expected), "mean": sum(expected) / batch}

    times, first, answers = {}, {}, {}
    for key, size, count in ((f"b{batch}", batch, rounds), ("b1", 1, latency_rounds)):
        for name, fn in sides.items():  # untimed: tracing, allocator warm-up
            begin = time.perf_counter()
            out = fn(questions[:size], contexts[:size])
            first[f"{name}_{key}_s"] = time.perf_counter() - begin
            if size == batch:
                answers[name] = out
        calls = {}
        index = [0]
        for name, fn in sides.items():
            calls[name] = (lambda fn=fn: fn(questions[index[0]:index[0] + size], contexts[index[0]:index[0] + size]))
        names = list(sides)
        times[key] = {name: [] for name in names}
        for r in range(count):
            index[0] = 0 if size == batch else r % batch  # batch 1: one example per round, the same for both
            for name in names[r % 2:] + names[:r % 2]:
                begin = time.perf_counter()
                calls[name]()
                times[key][name].append(time.perf_counter() - begin)
    if window_counts[0] != sum(expected):
        raise AssertionError(f"transformers cut {window_counts[0]} windows, run_squad's formula {sum(expected)}")
    result.update(_same_inputs(model, ours_tok, hf_tok, hf, questions[:2], contexts[:2], seq, doc_stride, overlap))

    b1, bn = times["b1"], times[f"b{batch}"]
    result["ours"] = {"b1_ms": 1000 * statistics.median(b1["ours"]),
                      "questions_per_s": batch / statistics.median(bn["ours"]), "b1_times": b1["ours"],
                      f"b{batch}_times": bn["ours"]}
    result["transformers"] = {"b1_ms": 1000 * statistics.median(b1["transformers"]),
                              "questions_per_s": batch / statistics.median(bn["transformers"]),
                              "b1_times": b1["transformers"], f"b{batch}_times": bn["transformers"]}
    result["first_calls_s"] = first
    result["vs_transformers"] = {"latency": paired(b1["transformers"], b1["ours"]),
                                 "throughput": paired(bn["transformers"], bn["ours"])}
    same_span = sum((o[1], o[2]) == (h[1], h[2]) for o, h in zip(answers["ours"], answers["transformers"]))
    result["same_answer_spans"] = f"{same_span}/{batch}"
    result["answers_sample"] = [{"ours": o[:3], "transformers": h[:3]}
                                for o, h in list(zip(answers["ours"], answers["transformers"]))[:3]]
    notes.append("transformers' side: run_qa.py's post-processing in Python (n best starts / ends per window, spans "
                  "inside the context, end >= start, <= max_answer_length) plus run_squad's max-context rule "
                  "(`best_answers`); it takes the offsets straight from offset_mapping where ours also runs "
                  "get_final_text in the graph (slightly more work on our side)")
    if same_span < batch:
        notes.append(f"the same answer span for {same_span}/{batch} questions (same windows and weights: float "
                     "differences can swap near ties)")
    result["notes"] = notes
    result["peak_rss_mb"] = peak_rss_mb()
    result["case_wall_s"] = time.perf_counter() - started
    return result


def _same_inputs(model, ours_tok, hf_tok, hf, questions, contexts, seq, doc_stride, overlap):
    """Checks (untimed) that both sides do the same work on `questions` / `contexts`: the windows our SavedModel
    builds (`keras_pretrain.tasks.question_answering.serving.windows`, the function it traces) equal transformers' token ids,
    segment ids and masks, and the two models' logits on them agree (same weights)."""
    import tensorflow as tf
    import torch

    from keras_pretrain.tasks.question_answering import serving as qa_serving

    layout = qa_serving.check_tokenizer(ours_tok)

    @tf.function  # in a graph, as the SavedModel runs it (keras-hub's tokenizers return lists in eager mode)
    def inputs(question, context):
        return qa_serving.windows(tf, layout, question, context, seq, doc_stride, 64)["inputs"]

    features = inputs(tf.constant(questions), tf.constant(contexts))
    ours = {k: np.asarray(v) for k, v in features.items()}
    enc = hf_tok(questions, contexts, truncation="only_second", max_length=seq, stride=overlap, padding="max_length",
                 return_overflowing_tokens=True, return_tensors="np")
    same = (ours["token_ids"].shape == enc["input_ids"].shape
            and np.array_equal(ours["token_ids"], enc["input_ids"])
            and np.array_equal(ours["segment_ids"], enc["token_type_ids"])
            and np.array_equal(ours["padding_mask"], enc["attention_mask"]))
    if not same:
        raise AssertionError("our SavedModel's windows differ from transformers' (ids, segments or mask)")
    logits = model.predict_on_batch(ours)
    with torch.inference_mode():
        out = hf(**{k: torch.from_numpy(np.asarray(v, "int64")) for k, v in
                    (("input_ids", ours["token_ids"]), ("token_type_ids", ours["segment_ids"]),
                     ("attention_mask", ours["padding_mask"]))})
    diff = max(float(np.max(np.abs(np.asarray(logits["start_logits"]) - out.start_logits.numpy()))),
               float(np.max(np.abs(np.asarray(logits["end_logits"]) - out.end_logits.numpy()))))
    return {"same_windows_checked": int(ours["token_ids"].shape[0]), "logits_max_abs_diff": diff}


# --- Report ---------------------------------------------------------------------------------------------


def report(by, quick):
    """(markdown sections, targets) of the qa group: labels "step {backend}" (`qa_step`) and "serving"
    (`qa_serving`). Targets (base size only): the step >= 1.2x transformers on the best backend (where our step
    is fastest, as `bench_families.report`; every backend's ratio in the text); the serving SavedModel's batch
    throughput >= 1x transformers' (the issue names no ratio for it)."""
    sections, targets = step_report(
        by, "qa", "step", "SQuAD fine-tuning step (BertForQuestionAnswering shape; AdamW, float32, dropout 0.1",
        "SQuAD fine-tuning step (BERT-base, seq 384): ours >= 1.2x transformers (best backend)", digits=2)
    rows, serving_notes = [], {}
    for label, r in cases(by, "qa", "serving", rows, 8):
        o, h, vs = r["ours"], r["transformers"], r["vs_transformers"]
        w = r["windows_per_example"]
        serving_notes.update(dict.fromkeys(r.get("notes", [])))
        rows.append([f"{r['shape']} ({fmt(r['params'] / 1e6, 1)}M)", f"{w['min']}-{w['max']} (mean {w['mean']:.1f})",
                     fmt(o["b1_ms"]), fmt(h["b1_ms"]), _ratio(vs["latency"]),
                     fmt(o["questions_per_s"], 2), fmt(h["questions_per_s"], 2), _ratio(vs["throughput"]),
                     r["same_answer_spans"], r["threads"]["threads"]])
        if r["shape"] == "base":
            targets.append((f"SQuAD serving (strings in, answers out): SavedModel batch-{r['batch']} throughput >= 1x "
                            "transformers tokenizer + model + Python post-processing (the issue names no ratio)",
                            f"throughput {_ratio(vs['throughput'])}, latency {_ratio(vs['latency'])}",
                            vs["throughput"]["median"] >= 1.0))
    if rows:
        sections.append("### SQuAD serving: strings in, answers out (seq 384, doc stride 128; our SavedModel vs "
                        "BertTokenizerFast + BertForQuestionAnswering (same weights) + run_qa-style Python "
                        "post-processing; one process, rounds alternating; ratios = median of per-round "
                        "transformers / ours (min-max))\n\n"
                        + table(["model", "windows per question", "ours b1 ms", "transformers b1 ms",
                                 "latency ratio", "ours questions/s", "transformers questions/s",
                                 "throughput ratio", "same answer spans", "threads per side"], rows)
                        + ("\n\n" + "\n".join(f"- {note}" for note in serving_notes) if serving_notes else ""))
    return sections, targets
