"""bfloat16 mixed precision on the CPU (issue 22): our BERT MLM step in float32 and in Keras'
`mixed_bfloat16` on each backend, and the loss curves of the two policies on the bundled corpus.

Both policies are built in one process (the backend of `KERAS_BACKEND`) from the same seed, and their steps
are timed in alternating rounds, so a load change on the shared machine hits both alike.
"""

import os
import random
import statistics
import time

from benchmarks.fixtures import CORPUS, MLM_SHAPES, build_mlm, mlm_step_flops, write_vocab
from benchmarks.harness import interleave, matmul_rate, paired, ratio_text, with_threads
from benchmarks.machine import cpu_bf16_units, keras_backend
from benchmarks.report import failed, fmt, table

POLICIES = ("float32", "mixed_bfloat16")


def _with_policy(policy, fn):
    import keras

    keras.mixed_precision.set_global_policy(policy)
    try:
        return fn()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def mlm_precision(shape="base", batch=8, seq=128, predictions=20, rounds=5, threads=1):
    """Step time of our MLM pretrainer (`BertPretrainer(sentence_head=False)`, AdamW) in float32 and in
    mixed_bfloat16, one process, `harness` rules: `threads` set and printed (the same on every backend, so the
    fastest steps across backends compare), a compiling step each, `rounds` rounds alternating; speed-up = median
    of the per-round float32 / bfloat16 ratios (min, max); each policy's median step time is what the
    cross-backend target reads."""
    return with_threads(threads, _mlm_precision, shape, batch, seq, predictions, rounds)


def _mlm_precision(settings, shape, batch, seq, predictions, rounds):
    steps = {p: _with_policy(p, lambda: build_mlm("ours", shape, batch, seq, predictions)[0]) for p in POLICIES}
    first = {}
    for policy in POLICIES:
        start = time.perf_counter()
        _with_policy(policy, steps[policy])  # compiles and runs once
        first[policy] = time.perf_counter() - start
    times = interleave({p: (lambda p=p: _with_policy(p, steps[p])) for p in POLICIES}, rounds)
    medians = {p: statistics.median(t) for p, t in times.items()}
    speedup = paired(times["float32"], times["mixed_bfloat16"])
    result = {"backend": keras_backend(), "shape": shape, "batch": batch, "rounds": rounds, "threads": settings,
              "times": times, "first_step_s": first, "float32_step_s": medians["float32"],
              "bf16_step_s": medians["mixed_bfloat16"], "speedup": speedup["median"], "speedup_paired": speedup,
              "cpu_bf16_units": cpu_bf16_units()}
    result.update(kernel_account(MLM_SHAPES[shape], batch, seq, predictions, medians["float32"]))
    return result


def kernel_account(dims, batch, seq, predictions, float32_step_s, n=2048):
    """Why the step speeds up as it does (issue 45: "which kernels stay fp32"): the backend's own n^3 matmul rate
    in float32 and in bfloat16, measured in this process with its threads; the share of the float32 step its
    matmuls take (the step's matmul FLOPs, `fixtures.mlm_step_flops`, at the float32 rate); and the bfloat16 step
    that would follow if only the matmuls changed speed, at the bfloat16 rate (Amdahl): what the rest of the step
    (elementwise work, LayerNorm, softmax, the optimizer, the casts) leaves."""
    library = keras_backend()
    rates = {dtype: matmul_rate(library, n, dtype, repeats=3) for dtype in ("float32", "bfloat16")}
    matmul_s = mlm_step_flops(batch=batch, seq=seq, predictions=predictions, **dims) / rates["float32"] / 1e9
    share = min(matmul_s / float32_step_s, 1.0)
    if_only_matmuls = float32_step_s * (1 - share) + float32_step_s * share * rates["float32"] / rates["bfloat16"]
    return {"matmul_gflops": rates, "matmul_share_float32": share, "bf16_step_if_only_matmuls_s": if_only_matmuls}


def fastest_speedup(results):
    """(speed-up, fastest float32 result, fastest bfloat16 result): the fastest mixed_bfloat16 step across the
    backends' `results` against the fastest float32 step across them (issue 45: not one backend's own ratio, which
    a slow float32 backend flatters); None for no result."""
    if not results:
        return None
    f32 = min(results, key=lambda r: r["float32_step_s"])
    bf16 = min(results, key=lambda r: r["bf16_step_s"])
    return f32["float32_step_s"] / bf16["bf16_step_s"], f32, bf16


def _corpus_batches(vocab_size, seq, predictions, count, seed=0):
    """`count` masked instances of the bundled corpus (static token masking, the original's draws) as arrays,
    with the WordPiece vocabulary learned for the benchmarks."""
    import tempfile

    from keras_pretrain.data.corpus import read_documents
    from keras_pretrain.data.features import instances_to_arrays
    from keras_pretrain.data.masking import TokenMasking
    from keras_pretrain.data.pipeline import create_training_instances, tokenize_documents, tokenizer_vocabulary
    from keras_pretrain.models.bert.bert_tokenizer import BertTokenizer

    with tempfile.TemporaryDirectory() as tmp:
        tokenizer = BertTokenizer(vocabulary=write_vocab(os.path.join(tmp, "vocab.txt"), vocab_size),
                                  lowercase=True)
    vocabulary = tokenizer_vocabulary(tokenizer)
    documents = tokenize_documents(read_documents([CORPUS]), tokenizer)
    masking = TokenMasking(rate=0.15, max_predictions=predictions, vocabulary=vocabulary)
    instances = []
    rng = random.Random(seed)
    while len(instances) < count:
        instances += create_training_instances(documents, "nsp", masking, seq, 1, 0.1, rng)
    arrays = instances_to_arrays(instances[:count], vocabulary, seq, predictions)
    return len(vocabulary), arrays


def precision_curve(shape="small", steps=300, batch=8, seq=128, predictions=20, window=20, learning_rate=5e-4,
                    seeds=4):
    """The MLM loss of `steps` steps on the bundled corpus in float32 and in mixed_bfloat16, for each of
    `seeds` seeds (initial weights and dropout); both policies of a seed start from the same weights and see
    the same batches. Gaps are relative gaps of `window`-step moving averages: per seed, and between the two
    policies' curves averaged over the seeds (the loss curve of each policy).

    One run's gap measures mostly where its trajectory drifts: with the same weights and batches, float32 and
    bfloat16 agree to ~1e-4 for ~100 steps, then part, and the seed decides which ends lower (RESULTS.md,
    "bfloat16 loss curves over seeds")."""
    import keras
    import numpy as np

    from keras_pretrain.models.bert import BertBackbone, BertPretrainer
    from keras_pretrain.optimizers import AdamW

    dims = MLM_SHAPES[shape]
    vocab_size, data = _corpus_batches(8000, seq, predictions, steps * batch)

    def train(seed):
        keras.utils.set_random_seed(seed)
        backbone = BertBackbone(vocabulary_size=vocab_size, num_layers=dims["L"], num_heads=dims["A"],
                                hidden_dim=dims["H"], intermediate_dim=dims["I"])
        model = BertPretrainer(backbone, sentence_head=False)
        model.compile(optimizer=AdamW(learning_rate, weight_decay=0.01))
        losses = []
        start = time.perf_counter()
        for i in range(steps):
            rows = slice(i * batch, (i + 1) * batch)
            x = {"token_ids": data["input_ids"][rows], "segment_ids": data["segment_ids"][rows],
                 "padding_mask": data["input_mask"][rows], "masked_lm_positions": data["masked_lm_positions"][rows]}
            out = model.train_on_batch(x, {"mlm": data["masked_lm_ids"][rows]},
                                       sample_weight={"mlm": data["masked_lm_weights"][rows]}, return_dict=True)
            losses.append(float(out["loss"]))
        return losses, time.perf_counter() - start

    def smooth(values):
        return np.convolve(values, np.ones(window) / window, mode="valid")

    def gaps(curves):
        f32, bf16 = smooth(curves["float32"]), smooth(curves["mixed_bfloat16"])
        gap = np.abs(bf16 - f32) / f32
        return float(gap.max()), float(gap[-1])

    runs = []
    for seed in range(seeds):
        curves, seconds = {}, {}
        for policy in POLICIES:
            curves[policy], seconds[policy] = _with_policy(policy, lambda: train(seed))
        max_gap, final_gap = gaps(curves)
        runs.append({"seed": seed, "losses": curves, "seconds": seconds, "max_gap": max_gap, "final_gap": final_gap,
                     "final_loss": {p: float(np.mean(c[-window:])) for p, c in curves.items()}})
    mean = {p: np.mean([run["losses"][p] for run in runs], axis=0) for p in POLICIES}
    max_gap, final_gap = gaps(mean)
    return {"backend": keras_backend(), "shape": shape, "steps": steps, "batch": batch, "window": window,
            "seeds": seeds, "runs": runs, "max_gap": max_gap, "final_gap": final_gap,
            "first_loss": {p: float(np.mean(c[:window])) for p, c in mean.items()},
            "final_loss": {p: float(np.mean(c[-window:])) for p, c in mean.items()}}


def _account_cells(r):
    """The kernel-account cells of a step result (`kernel_account`); '-' for a result from before it."""
    rates = r.get("matmul_gflops")
    if not rates:
        return ["-", "-", "-"]
    return [f"{rates['float32']:.0f} / {rates['bfloat16']:.0f} ({rates['bfloat16'] / rates['float32']:.2f}x)",
            f"{100 * r['matmul_share_float32']:.0f}%", fmt(r["bf16_step_if_only_matmuls_s"], 2)]


def report(by, quick):
    """(markdown sections, targets) of the precision group, from the results keyed (group, label)."""
    sections, targets, rows = [], [], []
    steps = {label: r for (group, label), r in by.items() if group == "precision" and label.startswith("step")}
    units = None
    for label, r in steps.items():
        problem = failed(r)
        if problem:
            rows.append([label, problem] + ["-"] * 7)
            continue
        units = r["cpu_bf16_units"]
        threads = r.get("threads")
        rows.append([f"{r['backend']} (BERT-{r['shape']})", fmt(r["float32_step_s"], 2), fmt(r["bf16_step_s"], 2),
                     ratio_text(r["speedup_paired"]) if r.get("speedup_paired") else f"{r['speedup']:.2f}x",
                     threads["threads"] if isinstance(threads, dict) else "default",
                     f"{r['first_step_s']['float32']:.0f} / {r['first_step_s']['mixed_bfloat16']:.0f}",
                     *_account_cells(r)])
    ok = [r for r in steps.values() if not failed(r)]
    base = [r for r in ok if r["shape"] == "base"] or ok
    fastest, across = "", fastest_speedup(base)
    if across:  # the target: a slow float32 backend flatters its own speed-up
        speedup, f32, bf16 = across
        fastest = (f"\n\nFastest step of each policy across backends (the target): float32 "
                   f"{f32['float32_step_s']:.2f} s ({f32['backend']}), mixed_bfloat16 {bf16['bf16_step_s']:.2f} s "
                   f"({bf16['backend']}): {speedup:.2f}x.")
    if rows:
        sections.append(
            f"### bfloat16 mixed precision (ours, BERT MLM step, batch 8, seq 128; float32 and "
            f"mixed_bfloat16 in one process, rounds alternating)\n\n"
            + table(["backend", "float32 step s", "mixed_bfloat16 step s",
                     "speed-up (median of per-round ratios, min-max)", "threads", "first step s (f32 / bf16)",
                     "the backend's 2048^3 matmul GFLOP/s, f32 / bf16", "matmuls' share of the f32 step",
                     "bf16 step s if only the matmuls changed"], rows)
            + f"\n\nThe CPU's bfloat16 instructions (/proc/cpuinfo): {', '.join(units) if units else 'none'}."
            + fastest
            + "\n\nThe kernel account (issue 45: why each backend speeds up as it does): each backend's own "
              "float32 and bfloat16 matmul rates, measured in the case's process with its threads; the step's "
              "matmul FLOPs (`fixtures.mlm_step_flops`) at the float32 rate over the float32 step; and the "
              "bfloat16 step that would follow if only those matmuls ran at the bfloat16 rate and the rest of the "
              "step (elementwise work, LayerNorm, softmax, the optimizer in float32, the casts) stayed as in "
              "float32. A backend whose bfloat16 matmul is no faster than its float32 one (no bfloat16 kernel: "
              "its compiler computes the dot in float32 between casts) cannot speed up at all; the measured "
              "bfloat16 step above the last column is what the casts and the float32 rest cost.")
    curves = {label: r for (group, label), r in by.items() if group == "precision" and label.startswith("curve")}
    curve_rows = []
    for label, r in curves.items():
        problem = failed(r)
        if problem:
            curve_rows.append([label, problem, "-", "-", "-"])
            continue

        def losses(first, last):
            return " / ".join(f"{first[p]:.3f} -> {last[p]:.3f}" for p in POLICIES)

        for run in r.get("runs", []):
            first = {p: sum(c[:r["window"]]) / r["window"] for p, c in run["losses"].items()}
            curve_rows.append([r["backend"], f"seed {run['seed']}", losses(first, run["final_loss"]),
                               f"{100 * run['max_gap']:.2f}%", f"{100 * run['final_gap']:.2f}%"])
        seeds = r.get("seeds", 1)
        curve_rows.append([r["backend"], f"**mean of {seeds} seeds**" if seeds > 1 else "one run",
                           losses(r["first_loss"], r["final_loss"]),
                           f"**{100 * r['max_gap']:.2f}%**", f"{100 * r['final_gap']:.2f}%"])
    if curve_rows:
        r = next((r for r in curves.values() if not failed(r)), {})
        sections.append(
            f"### Loss curves, float32 vs mixed_bfloat16 (BERT-{r.get('shape', '?')}, {r.get('steps', '?')} steps of "
            f"batch {r.get('batch', '?')} on the bundled corpus; for each seed both policies start from the same "
            f"weights and see the same batches; moving averages over {r.get('window', '?')} steps)\n\n"
            + table(["backend", "run", "loss, float32 / bf16 (first -> last)", "largest gap", "gap at the end"],
                    curve_rows)
            + "\n\nThe target reads the mean curves (each policy's loss averaged over the seeds, then compared): "
              "one run's gap is mostly where its trajectory drifts after the two policies part (~100 steps in).")
    if across:
        speedup, f32, bf16 = across
        own = ", ".join(f"{r['backend']} {r['speedup']:.2f}x" for r in sorted(base, key=lambda r: r["backend"]))
        targets.append(("bf16 mixed precision >= 1.5x float32: the fastest mixed_bfloat16 step across backends vs the "
                        f"fastest float32 step across backends (BERT-{f32['shape']} MLM step)",
                        f"{speedup:.2f}x ({bf16['backend']} bf16 {bf16['bf16_step_s']:.2f} s vs {f32['backend']} "
                        f"float32 {f32['float32_step_s']:.2f} s; each backend's own: {own})", speedup >= 1.5))
    done = [c for c in curves.values() if not failed(c)]
    if done:  # the loss curves (`--full`): numbers, not speed
        curve = next((c for c in done if across and c["backend"] == across[2]["backend"]), done[0])
        seeds = curve.get("seeds", 1)
        gap = f"{100 * curve['max_gap']:.2f}% ({curve['backend']}{f', mean of {seeds} seeds' if seeds > 1 else ''})"
        if curve.get("runs"):
            single = [run["max_gap"] for run in curve["runs"]]
            gap += f"; single seeds {100 * min(single):.2f}-{100 * max(single):.2f}%"
        targets.append(("bf16 mixed precision: loss curve within 2% of float32's", gap, curve["max_gap"] <= 0.02))
    return sections, targets
