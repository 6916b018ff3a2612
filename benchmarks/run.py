"""Run the benchmarks side by side, one subprocess per case (`--quick`: per backend), and write benchmarks/RESULTS.md.

    python -m benchmarks.run                 # default tier (`make bench`): the open issue's groups; RESULTS.md
    python -m benchmarks.run --quick         # one case of each kind, tiny shapes, one process per backend:
                                             # a smoke test (writes nothing)
    python -m benchmarks.run --full          # every backend, shape and family, slow corpus cases (`make bench-full`)
    python -m benchmarks.run --only mlm,matmul --backends jax

Groups: matmul (float32 2048^3 reference), mlm (BERT MLM pretraining steps: ours on TF/JAX/torch vs
keras-hub BertMaskedLM on the same backend vs transformers BertForMaskedLM), families (each family's own
pretraining step vs transformers and keras-hub, `benchmarks.bench_families`), fit (`model.fit` on the real pipeline vs
`train_on_batch`, `benchmarks.bench_fit`), inference (encoders, batch 1
latency and batch 32 throughput, vs transformers), generation (GPT greedy decoding with the cache vs
transformers generate), data (dynamic masking vs DataCollatorForLanguageModeling, tokenization vs
BertTokenizerFast), corpus (static data builders, memory, the dynamic feed: `benchmarks.bench_corpus`),
precision (bfloat16: `benchmarks.bench_precision`), serving (int8, and the exported SavedModel with
strings in vs `predict` vs transformers' tokenizer + model: `benchmarks.bench_serving`), qa (SQuAD: the
BERT-base fine-tuning step at seq 384 vs BertForQuestionAnswering, and the QA serving SavedModel, strings in and
answers out, vs transformers' tokenizer + model + Python post-processing; the same threads on both sides:
`benchmarks.bench_qa`), tagging (NER: the BERT-base token-classification fine-tuning step, 9 labels, vs
BertForTokenClassification, by the same rules: `benchmarks.bench_tagging`), glue (the GLUE regression and
multiple-choice fine-tuning steps vs BertForSequenceClassification(num_labels=1) and BertForMultipleChoice, by the
same rules: `benchmarks.bench_glue`). Model FLOPs
utilization = achieved FLOP/s of the BERT-base step (formula in `benchmarks.fixtures.mlm_step_flops`) / the
best matmul FLOP/s of the same run.
"""

import argparse
import concurrent.futures
import datetime
import json
import os
import subprocess
import sys
import time

from benchmarks.harness import judge, ratio_text, threads_text
from benchmarks.machine import cpu_bf16_units, cpu_flags, loadavg, machine_info
from benchmarks.report import ceiling_text, failed, fmt, ratio, table, write_results

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "RESULTS.md")
GROUPS = ("matmul", "mlm", "families", "fit", "inference", "generation", "data", "corpus", "precision", "serving",
          "qa", "tagging", "glue")
# The default tier (`make bench`) runs the groups of the open benchmark issues (22: every family, `fit`, encoder
# throughput, bfloat16, serving; 41: SQuAD, `qa`; 42: NER, `tagging`); the groups of resolved issues (the BERT MLM
# step and its matmul reference, generation, data, the corpus builders) run in `--full` and with `--only`.
# Issue 45 (open): `make bench` under 30 minutes with the fair harness (the same threads per side, >= 5
# interleaved rounds). It times each target once on its best backend: every family's step (7 cases), the
# encoders, the bfloat16 step on each backend (the target reads the fastest of each policy), the SQuAD, NER, GLUE
# regression and multiple-choice fine-tuning steps (`glue`: 72 + 71 s measured 2026-12-06). `--full` adds every
# backend, the torch.compile reference of every case, the bfloat16 loss curves, `fit`, the serving SavedModels and
# the resolved issues' groups.
DEFAULT_GROUPS = ("families", "inference", "precision", "qa", "tagging", "glue")
BACKENDS = ("tensorflow", "jax", "torch")
# The encoder families timed for inference (shapes in benchmarks.cases.ENCODERS); the family list itself is
# keras_pretrain.families.
INFERENCE_FAMILIES = ("bert", "albert", "roberta", "distil_bert")
# The families whose own pretraining step is timed (benchmarks.bench_families).
TRAINING_FAMILIES = ("albert", "roberta", "ernie", "distil_bert", "xlnet", "gpt", "elmo")
# The default tier times each family on its best backend: `--inference_backend auto`'s (MEASURED_BACKENDS, else the
# matmul probe's) unless listed here; the qa, tagging and glue steps on TASK_BEST_BACKEND.
# XLNet's depends on the CPU (RESULTS.md): on one with AVX-512 (Zen 5, 2026-12-02) TensorFlow 1.94-2.18x
# transformers, PyTorch 1.09-1.17x, JAX 1.07x; on one without (Zen 3) PyTorch 1.155x, TensorFlow 0.87x.
# ELMo is not matmul-bound (7-28% MFU: small LSTM matmuls step by step, the sampled softmax's gathers), so the
# matmul probe does not pick its backend: JAX was its fastest on both CPUs measured (Intel Xeon 2026-12-05, same
# session: JAX 1.72x, PyTorch 0.91x; AMD EPYC: JAX 2.76x, and before the fair harness TensorFlow 1.04x, PyTorch
# 0.72x): Keras' JAX backend compiles the recurrence into one `lax.scan`, its PyTorch backend runs it step by step.
FAMILY_BEST_BACKENDS = {"xlnet": {"avx512f": ("tensorflow",), None: ("torch",)}, "elmo": {None: ("jax",)}}
# Where ours runs fastest, measured, by CPU flag: it overrides the matmul probe for the families' steps and the
# encoders (`--inference_backend auto`). 2026-12-06, Intel Xeon with AVX-512 and AMX, 2 threads per side, each
# family in one process per backend: ours on TensorFlow vs ours on PyTorch, step seconds (ratio to transformers):
# RoBERTa 2.43 (1.64x) vs 3.13 (1.19x), DistilBERT 2.07 (1.28x) vs 2.55 (0.92x), ERNIE 2.19 (1.36x) vs 2.50
# (1.22x), GPT-1 3.26 (1.38x) vs 4.2 (1.32x), ALBERT 1.98 (1.03x) vs 2.10 (1.02x); encoders at batch 32 1.08-1.15x vs 0.82-0.90x, though
# PyTorch multiplies float32 matrices fastest (340 vs 300 GFLOP/s). TensorFlow's graph runtime fuses the bias adds
# into oneDNN matmuls and has no per-op Python dispatch; Keras' PyTorch backend runs eagerly.
MEASURED_BACKENDS = {"avx512f": "tensorflow"}
# Timed rounds per family (5 unless listed: issue 45 asks >= 5 for a reported ratio).
FAMILY_ROUNDS = {}
# The fine-tuning steps' best backend (2026-12-04, one thread per side: QA TensorFlow 1.50x, PyTorch 1.22x, JAX
# 0.88x; NER TensorFlow 1.41x, JAX 1.198x, PyTorch 1.02x); `--full` times every backend.
TASK_BEST_BACKEND = "tensorflow"


def tier_threads(args):
    """Threads per library in the comparisons: `--threads`, else one in the quick tier and every core this
    process may use otherwise (each side pinned to the same cores: `benchmarks.harness.set_threads`)."""
    if args.threads:
        return args.threads
    return 1 if args.quick else len(os.sched_getaffinity(0))


def family_backends(family, default, flags):
    """The backends the default tier times `family` on, given the CPU's instruction-set `flags`."""
    choice = FAMILY_BEST_BACKENDS.get(family)
    if choice is None:
        return (default,)
    return next((backends for flag, backends in choice.items() if flag in flags), choice[None])


# Measured on this machine before any of our code existed (issue "Benchmarks", tokens/s).
ISSUE_REFERENCE = {
    ("small", "transformers", "torch"): 936,
    ("small", "keras_hub", "tensorflow"): 1633,
    ("small", "keras_hub", "jax"): 2122,
    ("small", "keras_hub", "torch"): 2285,
    ("base", "transformers", "torch"): 145,
    ("base", "keras_hub", "tensorflow"): 120,
    ("base", "keras_hub", "jax"): 162,
    ("base", "keras_hub", "torch"): 164,
}


def plan(args):
    """The list of (group, label, backend, case, kwargs) to run.

    Three tiers. `--quick`: one case of each kind on tiny shapes (a smoke test of every code path, minutes).
    Default (`make bench`): the groups of the open issue (DEFAULT_GROUPS), every target measured once, on the
    best backend where a target reads the best one. `--full`: every group, backend, shape and family, and the
    slow cases (the 400 MB corpus, the small MLM shape, the Beam builders).
    """
    if args.quick:
        return quick_plan(args)
    full = args.full
    best = args.inference_backend
    cases = []
    if "matmul" in args.only:
        for library in ("numpy", "jax", "torch", "tensorflow"):
            kwargs = {"library": library, "n": 2048, "repeats": 10 if full else 5}
            cases.append(("matmul", library, None, "matmul", kwargs))
    threads = tier_threads(args)  # issue 45: the same threads for every library, pinned to the same cores
    compile_ = {"torch_compile": args.torch_compile}
    # torch.compile's inductor takes minutes per base-size training step on 2 cores: the default tier compiles
    # one reference (the first encoder, BERT), `--full` every one.
    compile_all = {"torch_compile": args.torch_compile and full}
    if "mlm" in args.only:
        shapes = [("base", dict(batch=8, seq=128, predictions=20), 2, 5)]
        if full:
            shapes.insert(0, ("small", dict(batch=16, seq=128, predictions=20), 4, 8))
        for shape, kwargs, repeats, rounds in shapes:
            # Each implementation in its own process (tokens/s, MFU); the ratios come from the `ab` case below.
            for impl in ("ours", "keras_hub") if full else ("ours",):
                for backend in args.backends:
                    cases.append(("mlm", f"{shape} {impl} {backend}", backend, "mlm_train",
                                  dict(impl=impl, shape=shape, repeats=repeats, matmul_n=2048, **kwargs)))
            cases.append(("mlm", f"{shape} transformers", None, "mlm_train",
                          dict(impl="transformers", shape=shape, repeats=repeats, matmul_n=2048, **kwargs)))
            # Ours, keras-hub and transformers in one process, interleaved, the same threads: the targets' ratios.
            for backend in args.backends:
                cases.append(("mlm", f"{shape} ab {backend}", backend, "mlm_ab",
                              dict(shape=shape, rounds=rounds, matmul_n=2048, threads=threads, **compile_,
                                   **kwargs)))
    if "families" in args.only:
        flags = cpu_flags()
        for family in TRAINING_FAMILIES:
            for backend in (args.backends if full else family_backends(family, best, flags)):
                cases.append(("families", f"{family} {backend}", backend, "family_step",
                              dict(family=family, rounds=FAMILY_ROUNDS.get(family, 5), threads=threads,
                                   **compile_all)))
    if "fit" in args.only:
        for backend in (args.backends if full else [best]):
            cases.append(("fit", f"fit {backend}", backend, "fit_vs_step", {}))
    if "inference" in args.only:
        for family in INFERENCE_FAMILIES:  # ours and transformers in one process (issue 45)
            cases.append(("inference", family, best, "encoder_inference",
                          dict(family=family, rounds=[7, 5], threads=threads,
                               **(compile_ if family in INFERENCE_FAMILIES[:1] else compile_all))))
    if "generation" in args.only:
        for impl, backend in (("ours", best), ("transformers_gpt1", None), ("transformers_gpt2", None)):
            # transformers' GPT-1 has no cache: ~30 s per generation on 2 cores, so one timed run.
            cases.append(("generation", impl, backend, "gpt_generate",
                          dict(impl=impl, repeats=1 if impl == "transformers_gpt1" else 3)))
    if "data" in args.only:
        cases.append(("data", "masking", "tensorflow", "masking", dict(threads=threads)))
        for impl in ("ours", "transformers"):
            cases.append(("data", f"tokenization {impl}", "tensorflow", "tokenization", dict(impl=impl)))
    if "corpus" in args.only:
        if full:  # the builders of issue 21 (resolved): ~10 minutes, and the 400 MB memory case ~12
            for impl, label, extra in (("original", "builder original", {}),
                                       ("ours", "builder ours (in-process)", {}),
                                       ("beam", "builder beam 1 worker", {"workers": 1}),
                                       ("beam", "builder beam 2 workers", {"workers": 2})):
                cases.append(("corpus", label, "tensorflow", "corpus_builder", dict(impl=impl, **extra)))
            cases.append(("corpus", "builder machine ceiling", None, "parallel_ceiling", {}))
            cases.append(("corpus", "memory", "tensorflow", "corpus_memory", dict(corpus_mb=400)))
        cases.append(("corpus", "dynamic feed", "tensorflow", "dynamic_feed", {}))
    if "precision" in args.only:
        units = cpu_bf16_units()
        for backend in args.backends:  # the issue asks for the speed-up on each backend
            # PyTorch's CPU bfloat16 kernels, without bfloat16 units, did not finish the BERT-base case in
            # 15 minutes: the small shape there. With the units (avx512_bf16, AMX) it is a minute.
            cases.append(("precision", f"step {backend}", backend, "mlm_precision",
                          dict(shape="small", threads=threads) if backend == "torch" and not units else
                          dict(threads=threads)))
        # 2 x 300 small-shape steps take minutes on 2 cores: the loss curves on one backend (PyTorch where
        # the CPU has bfloat16 units: its matmuls use them, XLA's do not), every backend with --full.
        # The loss curves (2 x 300 steps x 4 seeds, ~6 minutes) check numbers, not speed: `--full` only.
        for backend in (args.backends if full else []):
            cases.append(("precision", f"curve {backend}", backend, "precision_curve", {}))
    if "serving" in args.only:
        serving_families = INFERENCE_FAMILIES if full else INFERENCE_FAMILIES[:1]
        for family in serving_families:
            cases.append(("serving", f"int8 {family}", best, "encoder_int8", dict(family=family, rounds=3)))
        # The exported SavedModels are TensorFlow programs: strings in, on the TensorFlow backend.
        serving_threads = {"torch_threads": args.torch_threads} if args.torch_threads else {}
        for family in serving_families:
            cases.append(("serving", f"saved_model {family}", "tensorflow", "saved_model_serving",
                          dict(family=family, repeats=[7, 3] if full else [3, 2], **serving_threads)))
        # The task SavedModels (issue 45, item 3: strings in, vs transformers' tokenizer + model + the same
        # Python post-processing), BERT-base, the same threads per side (~2 minutes each).
        for task in ("classify", "ner", "regression", "choice"):
            cases.append(("serving", f"task {task}", "tensorflow", "task_serving",
                          dict(task=task, rounds=5, threads=threads)))
    if "qa" in args.only:
        # Issue 45's rules: one process, the same threads per side (`--threads`), >= 5 rounds.
        # Every backend in every tier (~6 minutes each on 2 cores): with the same threads the ratio differs by
        # backend (2026-12-04, one thread: JAX 0.88x, PyTorch 1.22x, TensorFlow 1.50x).
        for backend in (args.backends if full else [TASK_BEST_BACKEND]):
            cases.append(("qa", f"step {backend}", backend, "qa_step", dict(rounds=5, threads=threads)))
        # The SavedModel is a TensorFlow program. BERT-base over ~2.5 windows of 384 per question, batch 32:
        # ~10 minutes, `--full` (or `--only qa`).
        if full or "qa" in getattr(args, "only_asked", ()):
            cases.append(("qa", "serving", "tensorflow", "qa_serving",
                          dict(batch=32 if full else 8, rounds=5, threads=threads)))
    if "tagging" in args.only:
        # The qa step's rules (one process, `--threads` per side, >= 5 rounds), the best backend (`--full`: every one):
        # BERT-base, batch 8 x seq 128, 9 labels (~2-4 minutes per backend on 2 cores).
        for backend in (args.backends if full else [TASK_BEST_BACKEND]):
            cases.append(("tagging", f"ner {backend}", backend, "ner_step", dict(rounds=5, threads=threads)))
    if "glue" in args.only:
        # The same rules; BERT-base, 8 sequences x 128 tokens per step (~70 s per case on 2 cores): the default
        # tier times the best backend, `--full` every one.
        for backend in (args.backends if full else [TASK_BEST_BACKEND]):
            for task in ("regression", "multiple_choice"):
                cases.append(("glue", f"{task} {backend}", backend, "glue_step",
                              dict(task=task, rounds=5, threads=threads)))
    return cases


def quick_plan(args):
    """One case of each kind, tiny shapes, few steps: every benchmark code path (every library: transformers and
    the torch backend included) in under 3 minutes. Tiny shapes mean nothing for a speed target: the quick tier
    judges none ("quick tier: no target"), and leaves out the torch.compile reference (its compilation).

    Left out because another quick case runs the same code: `mlm_train` (ours' step: `mlm_ab`), the corpus
    memory case (the in-process builder: "builder ours") and the bfloat16 step timing (both policies' steps:
    the loss curves)."""
    backend = args.inference_backend
    threads = tier_threads(args)
    # No torch.compile reference here: its inductor compilation of even the tiny step takes ~40 s on a cold cache
    # (measured 2026-12-05), a quarter of the tier; the default and full tiers time it beside eager.
    compile_ = {"torch_compile": False}
    cases = []
    if "matmul" in args.only:
        cases.append(("matmul", "numpy", None, "matmul", {"library": "numpy", "n": 512, "repeats": 3}))
    if "mlm" in args.only:
        tiny = dict(shape="tiny", batch=4, seq=32, predictions=5, matmul_n=512, rounds=5, threads=threads)
        cases.append(("mlm", f"tiny ab {backend}", backend, "mlm_ab", dict(**tiny, **compile_)))
        # The Keras torch backend: ours on PyTorch beside transformers, in one process.
        cases.append(("mlm", "tiny ab torch", "torch", "mlm_ab", dict(**tiny, refs=["transformers"])))
    if "families" in args.only:
        cases.append(("families", f"albert {backend}", backend, "family_step",
                      dict(family="albert", shape="tiny", rounds=5, threads=threads)))
    if "fit" in args.only:
        cases.append(("fit", f"fit {backend}", backend, "fit_vs_step",
                      dict(shapes=["tiny"], steps=2, rounds=2, copies=1)))
    if "inference" in args.only:
        cases.append(("inference", "bert", backend, "encoder_inference",
                      dict(family="bert", tiny=True, rounds=[5, 5], threads=threads)))
    if "generation" in args.only:
        cases.append(("generation", "ours", backend, "gpt_generate", dict(impl="ours", tiny=True, repeats=2)))
    if "data" in args.only:
        cases.append(("data", "masking", "tensorflow", "masking",
                      dict(num_sequences=512, rounds=5, instance_docs=20, threads=threads)))
        cases.append(("data", "tokenization ours", "tensorflow", "tokenization",
                      dict(impl="ours", num_lines=2000, repeats=1)))
    if "corpus" in args.only:
        cases.append(("corpus", "builder ours (in-process)", "tensorflow", "corpus_builder",
                      dict(impl="ours", shards=1, documents_per_shard=300, dupe_factor=1)))
        cases.append(("corpus", "builder machine ceiling", None, "parallel_ceiling", dict(n=2_000_000, rounds=1)))
        cases.append(("corpus", "dynamic feed", "tensorflow", "dynamic_feed",
                      dict(batches=10, shape="tiny", step_repeats=1, copies=1)))
    if "precision" in args.only:
        cases.append(("precision", f"curve {backend}", backend, "precision_curve",
                      dict(shape="tiny", steps=6, window=2, seeds=1)))  # one seed: ~10 s less
    if "serving" in args.only:
        cases.append(("serving", "int8 bert", backend, "encoder_int8", dict(family="bert", tiny=True, rounds=2)))
        cases.append(("serving", "saved_model bert", "tensorflow", "saved_model_serving",
                      dict(family="bert", tiny=True, repeats=[3, 2])))
        cases.append(("serving", "task ner", "tensorflow", "task_serving",
                      dict(task="ner", shape="tiny", batch=4, rounds=5, threads=threads)))
    if "qa" in args.only:
        cases.append(("qa", f"step {backend}", backend, "qa_step", dict(shape="tiny", rounds=5, threads=threads)))
        cases.append(("qa", "serving", "tensorflow", "qa_serving",
                      dict(shape="tiny", batch=8, rounds=5, threads=threads)))
    if "tagging" in args.only:
        cases.append(("tagging", f"ner {backend}", backend, "ner_step",
                      dict(shape="tiny", batch=4, seq=32, rounds=5, threads=threads)))
    if "glue" in args.only:
        for task in ("regression", "multiple_choice"):
            cases.append(("glue", f"{task} {backend}", backend, "glue_step",
                          dict(task=task, shape="tiny", seq=32, rounds=5, threads=threads)))
    return cases


def _env(backend, torch_threads_apply):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
    if backend:
        env["KERAS_BACKEND"] = backend
    if torch_threads_apply:
        env["OMP_NUM_THREADS"] = str(torch_threads_apply)
    return env


def _runs_torch(case, kwargs, backend):
    """The torch backend, transformers alone, or transformers beside ours."""
    return (backend == "torch" or str(kwargs.get("impl", "")).startswith("transformers")
            or case in ("family_step", "saved_model_serving"))


def run_case(case, kwargs, backend, timeout, torch_threads=None):
    threads = torch_threads if torch_threads and _runs_torch(case, kwargs, backend) and case != "matmul" else None
    env = _env(backend, threads)
    command = [sys.executable, "-m", "benchmarks.cases", case, json.dumps(kwargs)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout} s"}, time.perf_counter() - start
    wall = time.perf_counter() - start
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):]), wall
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    return {"error": (lines[-1] if lines else f"exit status {proc.returncode}")[:300]}, wall


def run_cases_together(cases, backend, timeout, torch_threads=None):
    """`[(case, kwargs), ...]` in one process on `backend` (`--quick`: one framework start-up, not one per case).

    Returns `([result, ...], wall seconds)`; cases after a crash of the process get its error.
    """
    threads = torch_threads if torch_threads and any(_runs_torch(c, k, backend) for c, k in cases) else None
    command = [sys.executable, "-m", "benchmarks.cases", "--many", json.dumps([list(c) for c in cases])]
    start = time.perf_counter()
    results = {}
    try:
        proc = subprocess.run(command, cwd=ROOT, env=_env(backend, threads), capture_output=True, text=True,
                              timeout=timeout)
        stdout, stderr = proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as e:
        stdout, stderr = e.stdout or "", f"timed out after {timeout} s"
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            index, _, payload = line[len("RESULT "):].partition(" ")
            results[int(index)] = json.loads(payload)
    lines = [line for line in stderr.splitlines() if line.strip()]
    crash = {"error": (lines[-1] if lines else "the process ended early")[:300]}
    return [results.get(i, crash) for i in range(len(cases))], time.perf_counter() - start


def allocator_line(environ=None):
    """The C allocator's settings every case process inherits: glibc's `MALLOC_*` tunables, if any are set.
    They move the ratios: each large tensor a step allocates afresh costs page faults under glibc's defaults
    (RESULTS.md, issue 45 third pass), and the two sides of a comparison allocate differently."""
    environ = os.environ if environ is None else environ
    tunables = {k: v for k, v in sorted(environ.items()) if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES"}
    if not tunables:
        return "Allocator: glibc malloc, default settings (no `MALLOC_*` or `GLIBC_TUNABLES` in the environment)."
    return "Allocator: glibc malloc with " + ", ".join(f"{k}={v}" for k, v in tunables.items()) + "."


def case_times(results, wall):
    """The wall time of each case's process (start-up, build, compilation and timing), longest first: where the
    run's minutes go."""
    rows = sorted(([f"{r['group']} {r['label']}", r.get("backend") or "-", f"{r['wall_s']:.0f}"]
                   for r in results if r.get("wall_s") is not None), key=lambda row: -float(row[2]))
    return (f"### Where the {wall / 60:.1f} minutes went (each case's process: start-up, build, compilation, "
            "timed rounds)\n\n" + table(["case", "backend", "wall s"], rows))


def encoder_ceiling(r, matmul_gflops, need=1.2):
    """'; transformers at 73% of the best float32 matmul (334 GFLOP/s torch): 1.2x needs 88%' of an encoder result,
    or ''. A forward pass cannot run faster than its matmuls at the best matmul rate: a share near or above 100%
    is out of reach in float32 on this CPU."""
    gflops = (r.get("transformers") or {}).get("b32_gflops_per_s")
    if not (gflops and matmul_gflops):
        return ""
    library = f" {r['matmul_library']}" if r.get("matmul_library") else ""
    of = f"of the best float32 matmul ({matmul_gflops:.0f} GFLOP/s{library})"
    return ceiling_text(gflops / matmul_gflops, need, of)


def add_reports(modules, by, quick, sections, targets):
    """Appends the sections and targets of each group module's `report(by, quick)`, in order."""
    for module in modules:
        more_sections, more_targets = module.report(by, quick)
        sections += more_sections
        targets += more_targets


def build_report(results, args, info, load_start, load_end, started, wall):
    by = {(r["group"], r["label"]): dict(r["result"], load=r["load_1min"]) for r in results}
    sections = []
    targets = []  # (target, measured, pass/miss)

    # Matmul reference: the best rate seen in the run, by the matmul cases (best of their repeats)
    # and by the matmuls interleaved with the training steps (same load as the steps).
    matmul_rows, candidates = [], []
    in_step = {}
    for (group, label), r in by.items():
        if group == "mlm" and not failed(r) and r.get("matmul_best_gflops"):
            lib = r["matmul_library"]
            in_step[lib] = max(in_step.get(lib, 0.0), r["matmul_best_gflops"])
    for library in ("numpy", "jax", "torch", "tensorflow"):
        r = by.get(("matmul", library))
        if r is None and library not in in_step:
            continue
        problem = failed(r) if r is not None else None
        best = None if (r is None or problem) else r.get("best_gflops_per_s", r["gflops_per_s"])
        matmul_rows.append([library, problem or fmt(r["gflops_per_s"] if r else None, 1), fmt(best, 1),
                            fmt(in_step.get(library), 1)])
        if best:
            candidates.append((best, f"{library}, matmul case"))
        if library in in_step:
            candidates.append((in_step[library], f"{library}, interleaved with training steps"))
    best_matmul = None
    if candidates:
        rate, where = max(candidates)
        best_matmul = (where, rate)
    if matmul_rows:
        sections.append(
            "### float32 matmul reference (n = %d)\n\n" % (512 if args.quick else 2048)
            + table(["library", "GFLOP/s (median of the case)", "best of the case",
                     "best interleaved with MLM steps"], matmul_rows)
            + (f"\n\nMFU denominator: {best_matmul[1]:.1f} GFLOP/s ({best_matmul[0]}), the best rate "
               "seen in this run." if best_matmul else ""))

    # MLM training.
    shapes = ["tiny", "small", "base"]
    mlm_rows = []
    for shape in shapes:
        hf = by.get(("mlm", f"{shape} transformers"))
        hf_tps = hf.get("tokens_per_s") if hf else None
        for impl in ("ours", "keras_hub", "transformers"):
            for backend in (args.backends if impl != "transformers" else ["torch"]):
                label = f"{shape} {impl} {backend}" if impl != "transformers" else f"{shape} transformers"
                r = by.get(("mlm", label))
                if r is None:
                    continue
                problem = failed(r)
                if problem:
                    mlm_rows.append([shape, impl, backend, problem] + ["-"] * 9)
                    continue
                kh = by.get(("mlm", f"{shape} keras_hub {backend}"), {})
                vs_kh = ratio(r["tokens_per_s"], kh.get("tokens_per_s")) if impl != "keras_hub" else None
                vs_hf = ratio(r["tokens_per_s"], hf_tps) if impl != "transformers" else None
                mfu = ratio(r["gflops_per_s"], best_matmul[1]) if best_matmul else None
                ref = ISSUE_REFERENCE.get((shape, impl, backend))
                mlm_rows.append([
                    shape, impl, backend, fmt(r["tokens_per_s"]), fmt(r["step_s"], 3),
                    fmt(vs_kh, 2) + ("x" if vs_kh else ""), fmt(vs_hf, 2) + ("x" if vs_hf else ""),
                    fmt(r["gflops_per_s"], 1), fmt(mfu * 100 if mfu else None, 0) + ("%" if mfu else ""),
                    fmt(r["peak_rss_mb"]), fmt(r["first_step_s"], 1), fmt(ref), r["load"],
                ])
                if impl == "ours" and ("mlm", f"{shape} ab {backend}") not in by and vs_kh is not None:
                    targets.append((f"MLM {shape}, {backend}: ours >= 1.1x keras-hub (separate processes)",
                                    f"{vs_kh:.2f}x", vs_kh >= 1.1))
    if mlm_rows:
        b = "16 x 128" if not args.quick else "4 x 32"
        sections.append(
            "### MLM pretraining step (AdamW, float32, 15% of 128 tokens = 20 predictions; "
            "small = L4 H256 A4 I1024 batch 16, base = L12 H768 A12 I3072 batch 8, V 30522)\n\n"
            + table(["shape", "implementation", "backend", "tokens/s", "step s (median)",
                     "vs keras-hub (separate processes)", "vs transformers (separate processes)", "model GFLOP/s", "MFU", "peak RSS MB", "first step s",
                     "issue ref tok/s", "load at start"], mlm_rows)
            + ("" if not args.quick else f"\n\n(--quick: tiny shape L2 H64, batch {b})"))
    ab_rows = []
    for shape in shapes:
        for backend in BACKENDS:
            r = by.get(("mlm", f"{shape} ab {backend}"))
            if r is None:
                continue
            problem = failed(r)
            if problem:
                ab_rows.append([shape, backend, problem] + ["-"] * 10)
                continue
            compiled = r.get("transformers_compiled")
            compiled_text = ("-" if "transformers_compiled_step_s" not in r and not compiled else
                             compiled["error"] if compiled else
                             f"{fmt(r['transformers_compiled_step_s'], 3)}, {ratio_text(r['vs_transformers_compiled'])}")
            ab_rows.append([shape, backend, threads_text(r.get("threads")), fmt(r["ours_step_s"], 3),
                            fmt(r.get("keras_hub_step_s"), 3), ratio_text(r.get("vs_keras_hub")),
                            fmt(r.get("paired_cpu_ratio"), 2), fmt(r.get("transformers_step_s"), 3),
                            ratio_text(r.get("vs_transformers")), compiled_text, r.get("params", "-"), r["rounds"],
                            r["load"]])
            for ref, name, need in (("keras_hub", "keras-hub", 1.1),
                                    ("transformers", "transformers", {"small": 2.0, "base": 1.2}.get(shape))):
                vs = r.get(f"vs_{ref}")
                if vs and need:
                    targets.append((f"MLM {shape}, {backend}: ours >= {need}x {name} (one process, same threads, "
                                    "interleaved)", ratio_text(vs), vs["median"] >= need))
    if ab_rows:
        sections.append(
            "### MLM step, ours vs keras-hub vs transformers in one process (the same threads per library; rounds "
            "rotating the order; ratios = median of per-round reference / ours (min-max); transformers' MLM "
            "decoder gathered at the predicted positions: the same work)\n\n"
            + table(["shape", "backend", "threads", "ours step s", "keras-hub step s", "ours vs keras-hub",
                     "same, process CPU time", "transformers step s", "ours vs transformers",
                     "torch.compile step s, ours vs it", "params", "rounds", "load at start"], ab_rows))
    if mlm_rows:
        mfu_shape = next((s for s in reversed(shapes) if any(("mlm", f"{s} ours {b}") in by for b in args.backends)),
                         "base")
        mfus = []
        for backend in args.backends:
            r = by.get(("mlm", f"{mfu_shape} ours {backend}"))
            if r and not failed(r) and best_matmul:
                mfus.append((r["gflops_per_s"] / best_matmul[1], backend))
        if mfus:
            best = max(mfus)
            targets.append((f"MFU of the {mfu_shape} training step (ours, best backend) >= 70% of the best "
                            f"matmul ({best_matmul[0]}, {best_matmul[1]:.1f} GFLOP/s)",
                            f"{best[0] * 100:.0f}% ({best[1]}); "
                            + ", ".join(f"{b} {m * 100:.0f}%" for m, b in sorted(mfus, key=lambda t: t[1])),
                            best[0] >= 0.70))

    from benchmarks import bench_families, bench_fit

    add_reports((bench_families, bench_fit), by, args.quick, sections, targets)

    # Encoder inference: ours and transformers in one process per family (issue 45).
    inf_rows, inf_notes = [], {}
    for family in INFERENCE_FAMILIES:
        r = by.get(("inference", family))
        if r is None:
            continue
        problem = failed(r)
        if problem:
            inf_rows.append([family, "-", "-", problem] + ["-"] * 8)
            continue
        inf_notes.update(dict.fromkeys(r.get("notes", [])))
        # The share of the best matmul: the one measured in the case's process (same threads), else the run's.
        denominator = r.get("matmul_best_gflops") or (best_matmul[1] if best_matmul else None)
        for impl in ("ours", "transformers", "transformers_compiled"):
            side = r.get(impl)
            if side is None:
                continue
            vs = r.get(f"vs_{impl}", {}) if impl != "ours" else {}
            gflops = side.get("b32_gflops_per_s")
            roof = ratio(gflops, denominator) if denominator else None
            name = {"transformers_compiled": "transformers + torch.compile"}.get(impl, impl)
            inf_rows.append([family, name, r["backend"] if impl == "ours" else "torch", fmt(side["b1_s"] * 1000, 1),
                             ratio_text(vs.get("b1")), fmt(side.get("b32_tokens_per_s")), ratio_text(vs.get("b32")),
                             fmt(gflops, 1), f"{100 * roof:.0f}%" if roof else "-",
                             fmt(r["params"]["ours" if impl == "ours" else "transformers"]),
                             threads_text(r.get("threads")), "/".join(map(str, r.get("rounds", []))),
                             fmt(r["peak_rss_mb"])])
        b32 = r.get("vs_transformers", {}).get("b32")
        if b32:
            targets.append((f"Encoder {family}: batch-32 throughput >= 1.2x transformers (one process, same threads, "
                            "interleaved)", f"{ratio_text(b32)} ({r['backend']}){encoder_ceiling(r, denominator)}",
                            b32["median"] >= 1.2))
    if inf_rows:
        sections.append(
            "### Encoder inference (seq 128, random weights, %s shapes; ours and transformers in one process, the "
            "same threads, rounds alternating; ratios = median of per-round transformers / ours time (min-max), >1 "
            "= ours faster; the ratio's row is the reference's)\n\n" % ("tiny" if args.quick else "base")
            + table(["model", "implementation", "backend", "batch 1 latency ms", "ours vs it, batch 1",
                     "batch 32 tokens/s", "ours vs it, batch 32", "batch 32 GFLOP/s", "of the best matmul",
                     "params", "threads", "rounds (b1/b32)", "peak RSS MB (process)"], inf_rows)
            + "\n\nGFLOP/s: forward FLOPs per token (`benchmarks.cases.encoder_flops_per_token`) x tokens/s; near "
            "100% of the run's best float32 matmul, an encoder has no float32 speed left to gain on this CPU."
            + "".join(f"\n- {note}" for note in inf_notes))

    # Generation.
    gen_rows = []
    ours = by.get(("generation", "ours"))
    for impl, desc in (("ours", "keras_pretrain GPTCausalLM.generate_ids (KV cache)"),
                       ("transformers_gpt1", "transformers OpenAIGPTLMHeadModel.generate (no cache in HF)"),
                       ("transformers_gpt2", "transformers GPT2LMHeadModel.generate, same size (KV cache)")):
        r = by.get(("generation", impl))
        if r is None:
            continue
        problem = failed(r)
        if problem:
            gen_rows.append([desc, "-", problem, "-", "-", "-"])
            continue
        vs = ratio(ours.get("tokens_per_s"), r["tokens_per_s"]) if ours and not failed(ours) and \
            impl != "ours" else None
        gen_rows.append([desc, r["backend"], fmt(r["tokens_per_s"], 1), fmt(r["seconds"], 2),
                         fmt(vs, 2) + ("x" if vs else ""), fmt(r["peak_rss_mb"])])
    if gen_rows:
        sections.append(
            "### GPT generation (greedy, batch 1, prompt 16, 32 new tokens, prefill included; %s shape)\n\n"
            % ("tiny" if args.quick else "GPT-1 L12 H768")
            + table(["implementation", "backend", "new tokens/s", "seconds (median)", "ours is", "peak RSS MB"],
                    gen_rows))

    # Data.
    data_rows = []
    m = by.get(("data", "masking"))
    if m is not None:
        problem = failed(m)
        if problem:
            data_rows.append(["dynamic masking", problem, "-", "-"])
        elif "per_sequence" in m:
            for key, title in (("per_sequence", "dynamic masking, per-sequence examples in (the input pipeline)"),
                               ("per_batch", "dynamic masking, per batch tensor (the masking alone)")):
                c = m[key]
                data_rows += [
                    [f"{title}: ours", fmt(c["ours_seq_per_s"]), "sequences/s",
                     f"{ratio_text(c['vs_transformers'])} transformers; measures {m['what'][key]}"],
                    [f"{title}: transformers", fmt(c["transformers_seq_per_s"]), "sequences/s",
                     f"one process, {m['rounds']} rounds alternating, threads {threads_text(m.get('threads'))}"],
                ]
            data_rows.append(["static instance creation (NSP + token masking, ours)", fmt(m["instances_per_s"]),
                              "instances/s", ""])
            vs = m["per_sequence"]["vs_transformers"]
            targets.append(("Dynamic masking >= 2x transformers' collator (per-sequence examples in, masked batches "
                            "out; one process, interleaved)", ratio_text(vs), vs["median"] >= 2.0))
    tok = {impl: by.get(("data", f"tokenization {impl}")) for impl in ("ours", "transformers")}
    if all(t is not None for t in tok.values()):
        problems = [failed(t) for t in tok.values() if failed(t)]
        if problems:
            data_rows.append(["tokenization", "; ".join(problems), "-", "-"])
        else:
            o, h = tok["ours"], tok["transformers"]
            same = sum(a == b for a, b in zip(o["sample_ids"], h["sample_ids"]))
            data_rows += [
                ["tokenization: ours BertTokenizer (tf.data, in-graph)", fmt(o["tokens_per_s"]), "tokens/s",
                 f"{o['tokens_per_s'] / h['tokens_per_s']:.2f}x fast tokenizer; "
                 f"{same}/{len(o['sample_ids'])} sample lines give identical ids; "
                 f"{o['tokens']:,} vs {h['tokens']:,} tokens"],
                ["tokenization: transformers BertTokenizerFast (Rust, batched)", fmt(h["tokens_per_s"]),
                 "tokens/s", f"{h['lines']:,} lines of corpus/pretrain.txt, vocabulary {h['vocab']:,}"],
            ]
    if data_rows:
        sections.append("### Data\n\n" + table(["what", "rate", "unit", "ratio / note"], data_rows))
    from benchmarks import bench_corpus, bench_glue, bench_precision, bench_qa, bench_serving, bench_tagging
    from benchmarks import bench_task_serving

    add_reports((bench_corpus, bench_precision, bench_serving, bench_task_serving, bench_qa, bench_tagging, bench_glue),
                by, args.quick, sections, targets)

    # Targets.
    if targets:
        rows = [list(t) for t in judge(targets, args.quick)]
        sections.insert(0, "### Targets (of the benchmark issues; ratios from this run)\n\n"
                        + table(["target", "measured", "result"], rows))

    v = info["versions"]
    head = [
        "# Benchmark results" + (" (--quick smoke test, tiny shapes: not meaningful)" if args.quick else ""),
        "",
        f"Run {started} UTC by `python -m benchmarks.run{' --quick' if args.quick else ' --full' if args.full else ''}`, "
        f"{wall / 60:.1f} minutes, threads per library in the comparisons {tier_threads(args)}, each side pinned to "
        "the same cores (set and printed by `benchmarks.harness.set_threads`; `--threads`). Each case in its own process (fresh "
        "backend); every comparison runs its sides in that one process, rounds rotating the order, warm-up "
        "(compilation) untimed, ratios = median of the per-round ratios (min-max). Generated by benchmarks/run.py.",
        "",
        backend_line(args),
        "",
        "Groups run: " + ", ".join(args.only) + "."
        + ("" if set(args.only) >= set(GROUPS) else " The others run with `--full` (`make bench-full`) or "
           "`--only`; their last numbers are in the hand-written part below."),
        "",
        f"Machine: {info['nproc']} CPUs ({info['cpu']}), memory {info['memory']}, Python {info['python']}, "
        f"{info['platform']}. Load average (1/5/15 min) at start {load_start}, at end {load_end}: the "
        "machine is shared, so absolute numbers are noisy; ratios measured in the same run are what count.",
        "",
        allocator_line(),
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
    ]
    mlm_method = [
        "- MLM step: each model's `train_on_batch` on a fixed batch (the compiled train step; each library's "
        "`jit_compile` default: XLA on JAX; on TensorFlow keras-hub runs a `tf.function` graph without XLA "
        "(Keras' \"auto\" turns XLA off on CPU-only machines) and ours with XLA (our masked-LM pretrainers' "
        "default); eager on torch) for ours (`BertPretrainer(sentence_head=False)`: MLM only, "
        "like the others, with its default loss and accuracy metric) and keras-hub "
        "(`BertMaskedLM(BertBackbone(...))` with its default loss and weighted accuracy), AdamW(1e-4, wd "
        "0.01) (ours: `keras_pretrain.optimizers.AdamW`, Keras' math with fused updates; keras-hub: Keras' "
        "AdamW); transformers: `BertForMaskedLM`'s encoder, its MLM head (`cls`) on the hidden states gathered "
        "at the 20 predicted positions ([B x 20, H], the work ours does), the mean cross-entropy over them "
        "+ backward + `torch.optim.AdamW` step (`benchmarks.fixtures.hf_mlm_loss`); with torch.compile too "
        "where it runs. tokens/s = batch x 128 / median step time.",
        "- Same work: dropout 0.1 at the same four places (embeddings, attention probabilities, attention "
        "output, feed-forward output), tanh GELU in the encoder, logits over the whole vocabulary at the same "
        "20 positions per sequence, a cross-entropy loss and an accuracy metric. Differences that remain: "
        "keras-hub's MLM head uses the erf GELU on its [B x 20, H] transform (ours the model's tanh GELU); "
        "ours draws dropout masks from 16-bit words of the same generators' 32-bit (JAX, TensorFlow) or "
        "63-bit (PyTorch) draws (keep probability within 2^-17 of 0.9); ours runs its last encoder layer only "
        "at the 20 predicted positions (keys and values from all 128: the same loss and gradients, tested "
        "against the full graph), keras-hub and transformers at all 128.",
        "- Ours vs keras-hub vs transformers, one process (`mlm_ab`): every model built in the same process, "
        "the same threads for every library, rounds of one step each (order rotating), ratio = median over "
        "rounds of reference step / ours step (min-max), so load changes from other users hit all alike; the "
        "targets use these ratios (the separate-process columns of the first table are for tokens/s and MFU).",
        "- Model FLOPs per step (the useful work, `benchmarks.fixtures.mlm_step_flops`) = 3 x forward, with "
        "forward = (L - 1) B T (8 H^2 + 4 H I + 4 T H) for all layers but the last, + B T 4 H^2 for the last "
        "layer's K and V projections, + B P (4 H^2 + 4 H I + 4 T H) for the rest of the last layer at the P "
        "predicted positions (only those reach the loss), + B P 2 (H^2 + H V) for the MLM head; B batch, "
        "T 128, P 20. MFU = "
        "(FLOPs / median step time) / the best float32 2048^3 matmul rate seen in the run: the matmul "
        "cases' best repeat, and a matmul of the step's own library run after every timed step (same load "
        "as the steps). Embeddings, LayerNorm, softmax, GELU, optimizer not counted.",
    ]
    rss = "- Peak RSS: `ru_maxrss` of the case's process (framework and compilation included)."
    encoders = ("- Encoders: ours = the backbone's `sequence_output` only, `predict_on_batch`; transformers = "
                "`last_hidden_state` under `torch.inference_mode()` (and under torch.compile where it runs); "
                "random weights, the same token ids, all tokens real; both in one process, the same threads.")
    method = (mlm_method if "mlm" in args.only else []) + ([encoders] if "inference" in args.only else [])
    if method:  # the method of the MLM and encoder tables, when they ran
        sections.append("\n".join(["### Method", ""] + method + [rss]))
    sections.append(case_times(results, wall))
    body = "\n".join(head) + "\n\n" + "\n\n".join(sections) + "\n"
    return body, targets


# `--quick` backend processes at a time: one per core (each runs one thread per side; the tier times nothing it
# judges). One after another the tier took 230 s on 2 cores (2026-12-07: JAX 132 s, TensorFlow 83, PyTorch 14).
QUICK_PARALLEL = max(1, min(3, len(os.sched_getaffinity(0))))


def run_quick(cases, args):
    """The `--quick` cases, one process per backend, as many processes at a time as this process has cores (the
    tier runs one thread per side and judges no target); each case's wall is its own time in its process."""
    groups = [[c for c in cases if c[2] == backend] for backend in dict.fromkeys(c[2] for c in cases)]

    def run_group(mine):
        load = loadavg().split()[0]
        outs, wall = run_cases_together([(c[3], c[4]) for c in mine], mine[0][2], args.timeout * len(mine),
                                        args.torch_threads)
        return load, outs, wall

    # The process without a backend first and alone: its machine-ceiling case measures how two processes scale.
    alone = [mine for mine in groups if mine[0][2] is None]
    together = [mine for mine in groups if mine[0][2] is not None]
    print(f"{len(groups)} processes, the backends' {QUICK_PARALLEL} at a time ...", file=sys.stderr, flush=True)
    done = dict(zip(map(id, alone), map(run_group, alone)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=QUICK_PARALLEL) as pool:
        done.update(zip(map(id, together), pool.map(run_group, together)))
    done = [done[id(mine)] for mine in groups]
    results = []
    for mine, (load, outs, wall) in zip(groups, done):
        backend = mine[0][2]
        notes = [f"{c[1]}: {failed(r)}" for c, r in zip(mine, outs) if failed(r)]
        print(f"[{backend or 'no backend'}] {len(mine)} cases in one process: {', '.join(c[1] for c in mine)} ... "
              f"{'; '.join(notes) or 'ok'} ({wall:.0f} s, load at start {load})", file=sys.stderr, flush=True)
        for (group, label, _, case, kwargs), result in zip(mine, outs):
            results.append({"group": group, "label": label, "backend": backend, "case": case, "kwargs": kwargs,
                            "wall_s": result.get("case_wall_s", wall / len(mine)), "load_1min": load,
                            "result": result})
        print("  " + ", ".join(f"{c[1]} {r.get('case_wall_s', 0):.0f} s" for c, r in zip(mine, outs)),
              file=sys.stderr, flush=True)
    return results


def backend_line(args):
    """The report's line on the backend the families' steps and the encoders ran on, and why."""
    probe = getattr(args, "probe", None)
    measured = getattr(args, "measured_backend", None)
    if probe and not failed(probe) and measured:
        flag = next(flag for flag, backend in MEASURED_BACKENDS.items() if backend == measured)
        return (f"Backend of ours for the families' steps and the encoders: {measured}, where ours measured fastest "
                f"on CPUs with {flag} (MEASURED_BACKENDS in run.py), though the fastest float32 2048^3 matmul is "
                f"{probe['best']}'s (`backend_probe`, one process, {tier_threads(args)} threads each: "
                f"{probe_text(probe)}); ELMo's, XLNet's and the fine-tuning steps' backends are fixed in run.py "
                "(FAMILY_BEST_BACKENDS, TASK_BEST_BACKEND).")
    if probe and not failed(probe):
        return (f"Backend of ours for the families' steps and the encoders: {args.inference_backend}, the fastest "
                f"float32 2048^3 matmul of this machine (`backend_probe`, one process, {tier_threads(args)} threads "
                f"each: {probe_text(probe)}); XLNet's and the fine-tuning steps' backends are fixed in run.py "
                "(FAMILY_BEST_BACKENDS, TASK_BEST_BACKEND).")
    return f"Backend of ours for the families' steps and the encoders: {args.inference_backend} (`--inference_backend`)."


def measured_backend(flags):
    """The backend `MEASURED_BACKENDS` names for a CPU with instruction-set `flags`, or None."""
    return next((backend for flag, backend in MEASURED_BACKENDS.items() if flag in flags), None)


def choose_backend(args, flags=None):
    """Sets `args.inference_backend` when it is "auto": jax in the quick tier (nothing judged), else the backend
    where ours measured fastest on this kind of CPU (`MEASURED_BACKENDS`, by the CPU's `flags`), else the fastest
    float32 matmul's backend (`cases.backend_probe`, with the tier's threads; run and reported either way).
    Returns the probe's result (None when no probe ran)."""
    if args.inference_backend != "auto":
        return None
    if args.quick:
        args.inference_backend = "jax"
        return None
    print("backend probe (float32 matmul of each library) ...", end=" ", file=sys.stderr, flush=True)
    result, wall = run_case("backend_probe", {"threads": tier_threads(args)}, None, args.timeout)
    args.measured_backend = measured_backend(cpu_flags() if flags is None else flags)
    if failed(result):
        args.inference_backend = args.measured_backend or "jax"
        print(f"{failed(result)}: {args.inference_backend} ({wall:.0f} s)", file=sys.stderr, flush=True)
        return result
    args.inference_backend = args.measured_backend or result["best"]
    print(f"{result['best']} ({probe_text(result)}; {wall:.0f} s); ours on {args.inference_backend}",
          file=sys.stderr, flush=True)
    return result


def probe_text(result):
    """'torch 330, tensorflow 301, jax 276 GFLOP/s' of a `backend_probe` result, fastest first."""
    rates = sorted(result["gflops_per_s"].items(), key=lambda item: -item[1])
    return ", ".join(f"{library} {rate:.0f}" for library, rate in rates) + " GFLOP/s"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--quick", action="store_true",
                        help="one case of each kind, tiny shapes, few steps (a smoke test; writes nothing)")
    parser.add_argument("--full", action="store_true",
                        help="every backend, shape and family, and the slow corpus cases (over an hour on 2 cores)")
    parser.add_argument("--only", default=None,
                        help=f"comma-separated groups of {GROUPS} (default: {', '.join(DEFAULT_GROUPS)}; "
                             "every group with --full or --quick)")
    parser.add_argument("--backends", default=",".join(BACKENDS), help="Keras backends for the MLM cases")
    parser.add_argument("--inference_backend", default="auto",
                        help="Keras backend of the families' steps and the encoders (ours); auto (default): the "
                             "backend where ours measured fastest on this kind of CPU (MEASURED_BACKENDS), else "
                             "the one whose library multiplies float32 matrices fastest here (`backend_probe`, "
                             "one process, the comparisons' threads); jax with --quick")
    parser.add_argument("--output", default=None,
                        help="Markdown file to write (default: benchmarks/RESULTS.md for a run of the "
                             "tier's groups, nothing for --quick, --match or another --only); '-' for none")
    parser.add_argument("--timeout", type=int, default=900, help="seconds per case")
    parser.add_argument("--threads", type=int, default=None,
                        help="threads per library in every comparison, each side pinned to the same cores "
                             "(default: 1 with --quick, else every core this process may use)")
    parser.add_argument("--torch_threads", type=int, default=None,
                        help="OMP_NUM_THREADS of the case processes that run PyTorch (the cases outside the "
                             "harness: `mlm_train`, `saved_model_serving`); the comparisons read --threads")
    parser.add_argument("--no_torch_compile", dest="torch_compile", action="store_false",
                        help="leave out the torch.compile reference (timed beside eager transformers where it runs)")
    parser.add_argument("--json", default=None, help="also write the raw results to this JSON file")
    parser.add_argument("--match", default=None,
                        help="only the cases whose label holds this text (e.g. --only corpus --match builder)")
    args = parser.parse_args(argv)
    if args.quick and args.full:
        parser.error("--quick and --full: choose one")
    tier_groups = GROUPS if args.full or args.quick else DEFAULT_GROUPS
    args.only_asked = [] if args.only is None else [g.strip() for g in args.only.split(",")]
    args.only = list(tier_groups) if args.only is None else [g.strip() for g in args.only.split(",") if g.strip()]
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [g for g in args.only if g not in GROUPS] + [b for b in args.backends if b not in BACKENDS]
    if unknown:
        parser.error(f"unknown group or backend: {', '.join(unknown)}")
    output = args.output
    if output is None:
        output = RESULTS if not args.quick and set(args.only) == set(tier_groups) and not args.match else "-"

    info = machine_info()
    load_start = loadavg()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")
    args.probe = choose_backend(args)
    cases = [c for c in plan(args) if not args.match or args.match in c[1]]
    results = []
    t0 = time.perf_counter()
    if args.quick:
        results = run_quick(cases, args)
        cases = []
    for i, (group, label, backend, case, kwargs) in enumerate(cases, 1):
        print(f"[{i}/{len(cases)}] {group}: {label} ...", end=" ", file=sys.stderr, flush=True)
        load = loadavg().split()[0]
        result, wall = run_case(case, kwargs, backend, args.timeout, args.torch_threads)
        note = failed(result) or "ok"
        print(f"{note} ({wall:.0f} s, load {loadavg()})", file=sys.stderr, flush=True)
        results.append({"group": group, "label": label, "backend": backend, "case": case, "kwargs": kwargs,
                        "wall_s": wall, "load_1min": load, "result": result})
    wall = time.perf_counter() - t0
    report, targets = build_report(results, args, info, load_start, loadavg(), started, wall)
    print(report)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "results": results}, f, indent=1)
    if output != "-":
        write_results(output, report)
        print(f"wrote {output}", file=sys.stderr)
    errors = [r for r in results if "error" in r["result"]]
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
