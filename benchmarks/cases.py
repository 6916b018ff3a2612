"""Benchmark cases, each run in its own process by `benchmarks.run` (so every backend starts fresh).

    python -m benchmarks.cases NAME '{"kwarg": value, ...}'
    python -m benchmarks.cases --many '[["NAME", {...}], ...]'   # --quick: several cases, one process

prints one line `RESULT {json}` (or `RESULT {"skipped": reason}`; `RESULT i {json}` per case with --many).
KERAS_BACKEND is set by the caller.
Timing: untimed warm-up calls first (tracing / XLA compilation / allocator warm-up), then `repeats` timed
calls, each ended by a host read of the result (so asynchronous backends are synchronised); the median is
reported. Peak memory is the process's maximum resident set size (`ru_maxrss`), framework included.
"""

import json
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

from benchmarks import bench_corpus, bench_families, bench_fit, bench_precision, bench_qa, bench_serving  # noqa: E402
from benchmarks import bench_glue, bench_tagging, bench_task_serving  # noqa: E402
from benchmarks.fixtures import ENCODERS, GPT, MLM_SHAPES, TINY, Skip, mlm_step_flops  # noqa: E402,F401
from benchmarks.fixtures import build_mlm, corpus_lines, hf_encoder, our_encoder, quick_vocab  # noqa: E402
from benchmarks.harness import add_compiled_reference, interleave, matmul_fn, paired, rotation, same_params  # noqa: E402
from benchmarks.harness import best_matmul, median_time, with_threads  # noqa: E402
from benchmarks.machine import keras_backend, peak_rss_mb  # noqa: E402


# --- (1) MLM pretraining steps ------------------------------------------------------------------------


def mlm_train(impl, shape, batch, seq=128, predictions=20, repeats=3, warmup=1, matmul_n=2048):
    """One AdamW float32 MLM step on a fixed batch: ours, keras-hub or transformers.

    A float32 matmul of `matmul_n` (same library as the step) runs after every timed step; its best
    rate is the run's matmul reference candidate (measured under the same load as the steps).
    """
    dims = MLM_SHAPES[shape]
    build_start = time.perf_counter()
    step, params, backend = build_mlm(impl, shape, batch, seq, predictions)
    build_s = time.perf_counter() - build_start
    start = time.perf_counter()
    step()  # compiles (jit) and runs once
    first_s = time.perf_counter() - start
    for _ in range(warmup - 1):
        step()
    mm = matmul_fn(backend, matmul_n)
    mm()
    times, mm_times = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
        start = time.perf_counter()
        mm()
        mm_times.append(time.perf_counter() - start)
    median = statistics.median(times)
    flops = mlm_step_flops(dims["L"], dims["H"], dims["I"], dims["V"], batch, seq, predictions)
    return {
        "impl": impl, "backend": backend, "shape": shape, "batch": batch, "seq": seq,
        "predictions": predictions, "params": int(params), "build_s": build_s, "first_step_s": first_s,
        "step_s": median, "times": times, "tokens_per_s": batch * seq / median,
        "model_flops": flops, "gflops_per_s": flops / median / 1e9, "peak_rss_mb": peak_rss_mb(),
        "matmul_library": backend, "matmul_best_gflops": 2 * matmul_n ** 3 / min(mm_times) / 1e9,
    }


def _pooler_params(model):
    """The trainable parameters of a Keras BERT model's pooler (its backbone's `pooled_dense`), which no MLM head
    reads (transformers' BertForMaskedLM builds none)."""
    layer = getattr(getattr(model, "backbone", None), "pooled_dense", None)
    return int(sum(np.prod(v.shape) for v in layer.trainable_weights)) if layer is not None else 0


def _trainable(model):
    seen = {id(v): v for v in model.trainable_weights}
    return int(sum(np.prod(v.shape) for v in seen.values()))


def mlm_ab(shape, batch, seq=128, predictions=20, rounds=6, matmul_n=2048, full_last_block=False, threads=1,
           refs=("keras_hub", "transformers"), torch_compile=False):
    """Ours vs keras-hub vs transformers in ONE process (ours and keras-hub on KERAS_BACKEND), issue 45's rules.

    The same threads for every library (`threads`, `harness.set_threads`, printed); every side built first,
    a compiling and a warm-up step each, then `rounds` rounds of one step of every side, the order rotating;
    the ratios are the medians of the per-round ratios reference / ours (min, max), in wall-clock time and in
    process CPU time (keras-hub). Same work: transformers' MLM decoder runs on the hidden states gathered at the
    `predictions` positions ([B x P, H], `fixtures.hf_mlm_loss`); trainable parameters checked equal (ours and
    keras-hub hold BERT's pooler, which no MLM head reads). `torch_compile`: transformers also under
    `torch.compile`, beside eager. A matmul of the backend's library runs after every round (the MFU
    reference measured under the same load).
    """
    return with_threads(threads, _mlm_ab, shape, batch, seq, predictions, rounds, matmul_n, full_last_block,
                        tuple(refs), torch_compile)


def _mlm_ab(settings, shape, batch, seq, predictions, rounds, matmul_n, full_last_block, refs, torch_compile):
    dims = MLM_SHAPES[shape]
    steps, params, pooler, notes = {}, {}, {}, []
    backend = None
    for impl in ("ours",) + tuple(r for r in ("keras_hub", "transformers") if r in refs):
        step, _, where = build_mlm(impl, shape, batch, seq, predictions, full_last_block=full_last_block)
        backend = backend or where
        steps[impl] = step
        if impl == "transformers":
            params[impl] = int(sum(p.numel() for p in step.model.parameters() if p.requires_grad))
        else:
            params[impl], pooler[impl] = _trainable(step.model), _pooler_params(step.model)
    check = same_params(params, {impl: (n, "BertBackbone's pooler, which the MLM head never reads")
                                 for impl, n in pooler.items()} if "transformers" in params else None)
    result = {"backend": backend, "shape": shape, "batch": batch, "seq": seq, "predictions": predictions,
              "rounds": rounds, "threads": settings, "params": check, "dtype": "float32", "dropout": 0.1,
              "optimizer": "AdamW(lr 1e-4, weight decay 0.01)"}
    if torch_compile and "transformers" in steps:
        add_compiled_reference(steps, result, notes)
    for _ in range(2):  # compilation, then an untimed warm-up round (every side built first)
        for step in steps.values():
            step()
    mm = matmul_fn(backend, matmul_n)
    mm()
    wall = {impl: [] for impl in steps}
    cpu = {impl: [] for impl in steps}
    mm_times = []
    for order in rotation(steps, rounds):
        for impl in order:
            start, start_cpu = time.perf_counter(), time.process_time()
            steps[impl]()
            wall[impl].append(time.perf_counter() - start)
            cpu[impl].append(time.process_time() - start_cpu)
        start = time.perf_counter()
        mm()
        mm_times.append(time.perf_counter() - start)
    flops = mlm_step_flops(dims["L"], dims["H"], dims["I"], dims["V"], batch, seq, predictions)
    result.update({
        "wall": wall, "cpu": cpu, "ours_step_s": statistics.median(wall["ours"]),
        "ours_gflops_per_s": flops / statistics.median(wall["ours"]) / 1e9,
        "matmul_library": backend, "matmul_best_gflops": 2 * matmul_n ** 3 / min(mm_times) / 1e9,
        "peak_rss_mb": peak_rss_mb(), "notes": notes,
    })
    for impl in steps:
        if impl != "ours":
            result[f"{impl}_step_s"] = statistics.median(wall[impl])
            result[f"vs_{impl}"] = paired(wall[impl], wall["ours"])
    if "keras_hub" in steps:  # the keys of the earlier ours-vs-keras-hub case
        result["paired_wall_ratio"] = result["vs_keras_hub"]["median"]
        result["paired_cpu_ratio"] = paired(cpu["keras_hub"], cpu["ours"])["median"]
    return result


# --- (2) Encoder inference and GPT generation ------------------------------------------------------


def encoder_inference(family, tiny=False, seq=128, batches=(1, 32), rounds=(7, 5), threads=1, torch_compile=False):
    """Encoder forward passes, ours (KERAS_BACKEND, `predict_on_batch` of the sequence output) and transformers'
    (`last_hidden_state` under `torch.inference_mode`) in ONE process, issue 45's rules: the same threads for both
    (`threads`, `harness.set_threads`, printed), random weights, the same token ids; per batch size a first call
    and a warm-up call each (untimed), then `rounds` rounds (>= 5) of one call of each side, the order
    alternating. Batch 1: latency; batch 32: throughput. Ratios: median of the per-round ratios transformers
    time / ours (min, max), > 1 = ours faster. `torch_compile`: transformers also under `torch.compile`. Then
    the best float32 matmul of the process (`matmul_best_gflops`): the denominator of each side's share."""
    return with_threads(threads, _encoder_inference, family, tiny, seq, tuple(batches), tuple(rounds),
                        torch_compile)


def _encoder_inference(settings, family, tiny, seq, batches, rounds, torch_compile):
    import torch

    d = dict(TINY if tiny else ENCODERS[family])
    if len(rounds) != len(batches):
        raise ValueError(f"one round count per batch size: batches {batches}, rounds {rounds}")
    torch.manual_seed(0)
    hf = hf_encoder(family, d)
    model, names, params = our_encoder(family, d)
    result = {"family": family, "backend": keras_backend(), "tiny": tiny, "seq": seq, "threads": settings,
              "batches": list(batches), "rounds": list(rounds), "notes": []}
    result["params"] = {"ours": int(params), "transformers": int(sum(p.numel() for p in hf.parameters()))}
    sides = {"ours": {}, "transformers": {}}
    compiled_hf = None
    if torch_compile:
        try:
            compiled_hf = torch.compile(hf)
            sides["transformers_compiled"] = {}
        except Exception as e:  # noqa: BLE001 - reported, never fatal
            result["notes"].append(f"torch.compile not available: {type(e).__name__}: {str(e)[:200]}")
    rs = np.random.RandomState(0)
    flops = encoder_flops_per_token(seq=seq, **d)

    def torch_fn(module, ids):
        kwargs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}

        def fn():
            with torch.inference_mode():
                return module(**kwargs).last_hidden_state.numpy()

        return fn

    for batch, count in zip(batches, rounds):
        ids = rs.randint(5, d["V"], size=(batch, seq)).astype("int32")
        x = {name: ids if name == "token_ids" else np.ones_like(ids) if name == "padding_mask"
             else np.zeros_like(ids) for name in names}
        calls = {"ours": lambda x=x: model.predict_on_batch(x),
                 "transformers": torch_fn(hf, torch.from_numpy(ids.astype("int64")))}
        if "transformers_compiled" in sides:
            calls["transformers_compiled"] = torch_fn(compiled_hf, torch.from_numpy(ids.astype("int64")))
        for name in list(calls):  # first call (tracing / compilation), then a warm-up call: untimed
            start = time.perf_counter()
            try:
                calls[name]()
                calls[name]()
            except Exception as e:  # noqa: BLE001 - only the compiled reference may fail here
                if name != "transformers_compiled":
                    raise
                result["notes"].append(f"torch.compile not available: {type(e).__name__}: {str(e)[:200]}")
                del calls[name], sides[name]
                continue
            sides[name][f"first_b{batch}_s"] = time.perf_counter() - start
        times = interleave(calls, count)
        for name, t in times.items():
            median = statistics.median(t)
            sides[name].update({f"b{batch}_s": median, f"b{batch}_times": t,
                                f"b{batch}_tokens_per_s": batch * seq / median,
                                f"b{batch}_gflops_per_s": flops * batch * seq / median / 1e9})
            if name != "ours":
                result.setdefault(f"vs_{name}", {})[f"b{batch}"] = paired(t, times["ours"])
    result.update(sides)
    result["forward_flops_per_token"] = flops
    # The ceiling of the batch-32 rate: the best float32 matmul this process reaches with the same threads (our
    # backend's library and PyTorch's), after the rounds.
    result["matmul_best_gflops"], result["matmul_library"] = best_matmul((keras_backend(), "torch"),
                                                                        n=512 if tiny else 2048)
    if getattr(hf, "pooler", None) is not None:
        result["notes"].append("transformers' model also computes its pooler (one row per sequence), ours the "
                               "sequence output only: a negligible extra on transformers' side")
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def encoder_flops_per_token(L, H, I, seq, **_):
    """Forward FLOPs per token of an encoder: 2 (4 H^2 + 2 H I) for the matmuls (Q, K, V, output, two
    feed-forward) and 4 T H for attention (scores and weighted values), per layer; embeddings, LayerNorm,
    softmax and GELU not counted (the same formula as `mlm_step_flops`)."""
    return L * (2 * (4 * H * H + 2 * H * I) + 4 * seq * H)


def gpt_generate(impl, tiny=False, batch=1, prompt=16, new_tokens=32, repeats=3):
    """Greedy generation of `new_tokens` after a `prompt`-token prompt (prefill included in the time)."""
    d = dict(TINY if tiny else GPT)
    rs = np.random.RandomState(0)
    prompts = rs.randint(5, d["V"], size=(batch, prompt))
    results = {"impl": impl, "batch": batch, "prompt": prompt, "new_tokens": new_tokens}
    if impl in ("transformers_gpt1", "transformers_gpt2"):
        import torch
        import transformers as t

        torch.manual_seed(0)
        if impl == "transformers_gpt1":
            # The same architecture as ours; transformers' OpenAIGPT has no key/value cache.
            config = t.OpenAIGPTConfig(vocab_size=d["V"], n_positions=512, n_embd=d["H"],
                                       n_layer=d["L"], n_head=d["A"])
            model = t.OpenAIGPTLMHeadModel(config)
        else:
            # GPT-2 block (pre-LN) of the same size, for transformers' generate *with* a cache.
            config = t.GPT2Config(vocab_size=d["V"], n_positions=512, n_embd=d["H"], n_layer=d["L"],
                                  n_head=d["A"], n_inner=d["I"], bos_token_id=0,
                                  eos_token_id=0)
            model = t.GPT2LMHeadModel(config)
        model.eval()
        results["backend"] = "torch"
        ids = torch.from_numpy(prompts.astype("int64"))
        kwargs = dict(attention_mask=torch.ones_like(ids), max_new_tokens=new_tokens,
                      min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None)

        def fn():
            with torch.inference_mode():
                out = model.generate(ids, **kwargs)
            assert out.shape[1] == prompt + new_tokens, out.shape
            return out
    else:
        try:
            from keras_pretrain.models.gpt import GPTBackbone
            from keras_pretrain.models.gpt import GPTCausalLM
        except ImportError as e:
            raise Skip(f"keras_pretrain.models.gpt not importable: {e}")
        import keras

        keras.utils.set_random_seed(0)
        backbone = GPTBackbone(vocabulary_size=d["V"], num_layers=d["L"], num_heads=d["A"],
                               hidden_dim=d["H"], intermediate_dim=d["I"])
        model = GPTCausalLM(backbone)
        model.compile(sampler="greedy")
        results["backend"] = keras_backend()
        prompt_lists = [row.tolist() for row in prompts]

        def fn():
            out = model.generate_ids(prompt_lists, max_length=prompt + new_tokens)
            assert all(len(row) == prompt + new_tokens for row in out), [len(r) for r in out]
            return out

    start = time.perf_counter()
    fn()
    results["first_s"] = time.perf_counter() - start
    median, times = median_time(fn, repeats, 0)
    results.update(seconds=median, times=times, tokens_per_s=batch * new_tokens / median,
                   peak_rss_mb=peak_rss_mb())
    return results


# --- (3) Data ----------------------------------------------------------------------------------------


def masking(num_sequences=16384, seq=128, batch=32, vocab=30522, rounds=5, instance_docs=200, threads=1):
    """Dynamic masking, ours vs transformers' collator on the same token ids, in one process (`harness`: the same
    threads, interleaved rounds of one epoch per side, paired ratios): `bench_masking.paired_calls`'
    "per_sequence" (the input pipeline) and "per_batch" (the masking alone) comparisons; what each measures is
    in `what`. Also static instance creation (instances/s)."""
    return with_threads(threads, _masking, num_sequences, seq, batch, vocab, rounds, instance_docs)


def _masking(settings, num_sequences, seq, batch, vocab, rounds, instance_docs):
    from benchmarks import bench_masking as bm

    ids = bm._token_ids(num_sequences, seq, vocab)
    result = {"num_sequences": num_sequences, "seq": seq, "batch": batch, "rounds": rounds, "threads": settings,
              "what": dict(bm.WHAT)}
    for comparison, calls in bm.paired_calls(ids, batch, vocab).items():
        for fn in calls.values():  # tracing, warm-up: untimed
            assert fn() == num_sequences
        times = interleave(calls, rounds)
        result[comparison] = {"ours_seq_per_s": num_sequences / statistics.median(times["ours"]),
                              "transformers_seq_per_s": num_sequences / statistics.median(times["transformers"]),
                              "vs_transformers": paired(times["transformers"], times["ours"]), "times": times}
    result["instances_per_s"] = bm.bench_instances(instance_docs, seq)
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def _corpus_lines(limit):
    lines = corpus_lines()
    return (lines * (1 + limit // max(1, len(lines))))[:limit]


def tokenization(impl, num_lines=20000, batch=1000, vocab_size=8000, repeats=3):
    """WordPiece tokenization of corpus/pretrain.txt lines (lower-cased), ours vs BertTokenizerFast."""
    import tempfile

    lines = _corpus_lines(num_lines)
    vocab = quick_vocab(lines, vocab_size)
    batches = [lines[i:i + batch] for i in range(0, len(lines), batch)]
    if impl == "ours":
        import tensorflow as tf

        from keras_pretrain.models.bert import BertTokenizer

        tokenizer = BertTokenizer(vocabulary=vocab, lowercase=True)
        # In-graph, as our pretraining pipeline runs it: batches of strings through tf.data.
        dataset = tf.data.Dataset.from_tensor_slices(lines).batch(batch).map(tokenizer)
        tensors = [dataset]

        def encode(d):
            return sum(int(ids.flat_values.shape[0]) for ids in d)

        def count(out):
            return out

        def first_ids(n):
            out = tokenizer(tf.constant(lines[:n]))  # keras-hub returns lists in eager mode
            return out.to_list() if hasattr(out, "to_list") else out
    else:
        from transformers import BertTokenizerFast

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "vocab.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write("\n".join(vocab) + "\n")
            tokenizer = BertTokenizerFast(vocab=path, do_lower_case=True)  # `vocab_file` is ignored in v5
        assert len(tokenizer) == len(vocab), (len(tokenizer), len(vocab))
        tensors = batches

        def encode(b):
            return tokenizer(b, add_special_tokens=False)["input_ids"]

        def count(out):
            return sum(len(row) for row in out)

        def first_ids(n):
            return tokenizer(batches[0][:n], add_special_tokens=False)["input_ids"]

    total = [0]

    def run():
        total[0] = sum(count(encode(b)) for b in tensors)

    run()  # warm-up (graph tracing for ours)
    median, times = median_time(run, repeats, 0)
    return {"impl": impl, "lines": len(lines), "vocab": len(vocab), "tokens": total[0], "seconds": median,
            "times": times, "lines_per_s": len(lines) / median, "tokens_per_s": total[0] / median,
            "sample_ids": first_ids(200), "peak_rss_mb": peak_rss_mb()}


# --- (4) Matmul reference -----------------------------------------------------------------------------


def matmul(library, n=2048, repeats=10):
    """float32 n x n x n matmul rate (2 n^3 FLOPs) with numpy, jax, torch or tensorflow."""
    median, times = median_time(matmul_fn(library, n), repeats, 2)
    return {"library": library, "n": n, "seconds": median, "gflops_per_s": 2 * n ** 3 / median / 1e9,
            "best_gflops_per_s": 2 * n ** 3 / min(times) / 1e9}


def backend_probe(threads=1, n=2048, repeats=5, libraries=("jax", "tensorflow", "torch")):
    """The float32 n^3 matmul rate of each backend's library, all in this one process with `threads` each (pinned
    to the same cores: `harness.set_threads`), and the fastest: the backend the default tier times the families'
    steps and the encoders on (they are matmul-bound: 50-80% of their time in matmuls), since which library
    multiplies fastest depends on the CPU (2026-12: JAX on an AMD EPYC, PyTorch on an Intel Xeon)."""
    from benchmarks.harness import matmul_rate

    def probe(settings):
        rates = {library: matmul_rate(library, n, repeats=repeats) for library in libraries}
        return {"n": n, "threads": settings, "gflops_per_s": rates, "best": max(rates, key=rates.get)}

    return with_threads(threads, probe)


CASES = {
    "backend_probe": backend_probe,
    "mlm_train": mlm_train,
    "mlm_ab": mlm_ab,
    "encoder_inference": encoder_inference,
    "gpt_generate": gpt_generate,
    "masking": masking,
    "tokenization": tokenization,
    "matmul": matmul,
    "corpus_builder": bench_corpus.corpus_builder,
    "corpus_memory": bench_corpus.corpus_memory,
    "parallel_ceiling": bench_corpus.parallel_ceiling,
    "mlm_precision": bench_precision.mlm_precision,
    "encoder_int8": bench_serving.encoder_int8,
    "precision_curve": bench_precision.precision_curve,
    "dynamic_feed": bench_corpus.dynamic_feed,
    "family_step": bench_families.family_step,
    "fit_vs_step": bench_fit.fit_vs_step,
    "saved_model_serving": bench_serving.saved_model_serving,
    "qa_step": bench_qa.qa_step,
    "qa_serving": bench_qa.qa_serving,
    "ner_step": bench_tagging.ner_step,
    "glue_step": bench_glue.glue_step,
    "task_serving": bench_task_serving.task_serving,
}


def run_many(spec):
    """Runs `[[name, kwargs], ...]` in this process, printing `RESULT i {json}` after case `i`.

    `benchmarks.run --quick` uses it: one process (one framework start-up) per backend instead of one per
    case. A failing case is reported as `{"error"}` and the next one runs; Keras' global dtype policy is
    restored after each case.
    """
    for i, (name, kwargs) in enumerate(spec):
        keras = sys.modules.get("keras")
        policy = keras.config.dtype_policy() if keras is not None else None
        start = time.perf_counter()
        try:
            result = CASES[name](**kwargs)
        except Skip as e:
            result = {"skipped": str(e)}
        except Exception as e:  # noqa: BLE001 - one case's failure is its result, not the run's
            result = {"error": f"{type(e).__name__}: {e}"[:300]}
        finally:
            if policy is not None:
                keras.config.set_dtype_policy(policy)
        result.setdefault("case_wall_s", time.perf_counter() - start)  # its share of the process (--quick)
        sys.stdout.flush()
        print(f"RESULT {i} " + json.dumps(result), flush=True)


def main(argv):
    if argv[0] == "--many":
        return run_many(json.loads(argv[1]))
    name, kwargs = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    try:
        result = CASES[name](**kwargs)
    except Skip as e:
        result = {"skipped": str(e)}
    sys.stdout.flush()
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
