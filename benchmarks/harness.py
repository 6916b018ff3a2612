"""The fair comparison harness of issue 45, shared by every case that compares implementations.

Every comparison runs both (all) sides in ONE process: each side is built first, runs untimed compiling and
warm-up calls, then `rounds` (>= 5 for a reported number) rounds each time one call of every side, the order
rotating between rounds (`interleave`); a ratio is the median of the per-round ratios reference / ours with
their min and max (`paired`: > 1 = ours faster), so a load change on the shared machine hits both sides alike.
Threads: the same count for every library, set explicitly before any framework op and printed in the result
(`set_threads`: default one thread per side, the process pinned to that many cores).

A leaf module of the package: it imports only `benchmarks.machine` and `benchmarks.report`; frameworks are
imported inside the functions that use them.
"""

import os
import statistics
import sys
import time

from benchmarks.machine import peak_rss_mb
from benchmarks.report import cases, fmt, table

MIN_ROUNDS = 5  # the rounds a reported ratio needs (issue 45); fewer only in the quick tier
QUICK_NO_TARGET = "quick tier: no target"


# --- Threads ---------------------------------------------------------------------------------------------


def _pin(cores):
    """Pins every thread of this process (and so every thread created later) to `cores`."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cores)
        except OSError:  # a thread that ended meanwhile
            pass


def xla_thread_flags(flags, threads):
    """`flags` (XLA_FLAGS) with the XLA CPU thread settings for `threads` appended."""
    eigen = "true" if threads > 1 else "false"
    return " ".join(filter(None, [flags, f"--xla_cpu_multi_thread_eigen={eigen}",
                                  f"intra_op_parallelism_threads={threads}"]))


def set_threads(threads):
    """Gives every library of this process `threads` threads; call it before any framework op.

    Pins every thread of the process (and so every thread created later) to `threads` of its allowed cores
    (`sched_setaffinity`, every thread of the process: the one setting JAX 0.10's CPU client obeys; the XLA flags
    `--xla_cpu_multi_thread_eigen` / `intra_op_parallelism_threads` are set too, before JAX is imported, but
    measured they change nothing: a jitted matmul still ran on both cores), PyTorch's intra- and inter-op threads
    and TensorFlow's intra- and inter-op threads. Returns `(settings, restore)`: what was set and what each library
    reports (printed in the result), and a function restoring the affinity and PyTorch's threads (for `--many`).
    """
    threads = int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    settings = {"threads": threads, "imported_before": sorted(m for m in ("jax", "tensorflow", "torch")
                                                               if m in sys.modules)}
    allowed = sorted(os.sched_getaffinity(0))
    cpus = set(allowed[:threads])
    _pin(cpus)
    settings["cpus"] = sorted(cpus)
    if "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = xla_thread_flags(os.environ.get("XLA_FLAGS", ""), threads)
    settings["xla_flags"] = os.environ.get("XLA_FLAGS", "") if "jax" not in settings["imported_before"] else \
        "not applied (JAX imported before)"
    import torch

    torch_before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # only once per process, before inter-op work
        pass
    settings["torch_threads"] = torch.get_num_threads()
    settings["torch_interop_threads"] = torch.get_num_interop_threads()
    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # the TensorFlow context exists already (an earlier case of --many)
        pass
    settings["tf_intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
    settings["tf_inter_op_threads"] = tf.config.threading.get_inter_op_parallelism_threads()

    def restore():
        _pin(set(allowed))
        torch.set_num_threads(torch_before)

    return settings, restore


def with_threads(threads, fn, *args, **kwargs):
    """`fn(settings, *args, **kwargs)` with `set_threads(threads)` applied, restored afterwards."""
    settings, restore = set_threads(threads)
    try:
        return fn(settings, *args, **kwargs)
    finally:
        restore()


def threads_text(settings):
    """One line of what `set_threads` set (the report prints it)."""
    if not settings:
        return "-"
    return (f"{settings['threads']} (cores {','.join(map(str, settings.get('cpus', [])))}; torch "
            f"{settings.get('torch_threads')}, TF {settings.get('tf_intra_op_threads')})")


# --- Rounds and ratios -----------------------------------------------------------------------------------


def rotation(names, rounds):
    """The order of each round: `names` rotated by one more place each round."""
    names = list(names)
    return [names[r % len(names):] + names[:r % len(names)] for r in range(rounds)]


def interleave(calls, rounds, clock=time.perf_counter, last=None):
    """Times `rounds` rounds of one call of each of `calls` ({name: fn}), the order rotating between rounds.

    Returns {name: [seconds per round]}; `last` (a dict), when given, gets each call's return value of the last
    round (a step's loss: no extra step is needed to read it)."""
    times = {name: [] for name in calls}
    for order in rotation(calls, rounds):
        for name in order:
            start = clock()
            value = calls[name]()
            times[name].append(clock() - start)
            if last is not None:
                last[name] = value
    return times


def paired(reference, ours):
    """{median, min, max, per_round} of the per-round ratios reference time / ours time (> 1: ours faster)."""
    if len(reference) != len(ours) or not ours:
        raise ValueError(f"paired needs rounds of both sides, got {len(reference)} and {len(ours)}")
    ratios = [r / o for r, o in zip(reference, ours)]
    return {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "per_round": ratios}


def ratio_text(p, digits=2):
    """'1.23x (1.10-1.40)' of a `paired` dict; '-' for None."""
    if not p:
        return "-"
    return f"{p['median']:.{digits}f}x ({p['min']:.{digits}f}-{p['max']:.{digits}f})"


def time_steps(result, steps, rounds, tokens, notes, reference="transformers", ours="ours", count_flops=None):
    """Times the `steps` (name -> `step()` returning the loss) into `result`: one untimed step each, the warm-up
    (compilation, the optimizer's state, the allocator's caches: `loss_first`, `first_step_s`), then `rounds`
    interleaved rounds (`times`, `step_s` median; `loss_last`: the loss of the last round's step); `vs_{name}`
    paired ratio name / ours for every other side (and `vs_transformers` as before); `tokens` per step for
    `tokens_per_s`. `result[name]` must exist (a dict).

    `count_flops` names a PyTorch side whose warm-up step runs under `torch_step_flops` (`result["model_flops"]`):
    the FLOPs of the work at no extra step, and its matmul calls (`result["matmul_calls"]`, for
    `matmul_shape_ceiling`)."""
    for name, step in steps.items():
        begin = time.perf_counter()
        if name == count_flops:
            result["matmul_calls"] = []
            result["model_flops"], result[name]["loss_first"] = torch_step_flops(
                step, with_value=True, matmuls=result["matmul_calls"])
        else:
            result[name]["loss_first"] = step()
        result[name]["first_step_s"] = time.perf_counter() - begin
    last = {}
    times = interleave(steps, rounds, last=last)
    for name, step in steps.items():  # the loss still finite (and falling)
        result[name].update(times=times[name], step_s=statistics.median(times[name]) if rounds else None,
                            loss_last=last[name] if rounds else step())
    for name in steps:
        if name != ours:
            result[f"vs_{name}"] = paired(times[name], times[ours]) if rounds else None
    result.setdefault(f"vs_{reference}", None)
    result["tokens_per_s"] = {name: tokens / result[name]["step_s"] for name in steps} if rounds else None
    result["notes"] = notes
    result["peak_rss_mb"] = peak_rss_mb()
    return result


def same_params(counts, allowed=None):
    """Checks the trainable parameter counts {side: count} are equal (or differ by `allowed` {side: (extra,
    why)}, the count a side holds that the others have no use for); returns the printed line.

    Raises AssertionError naming the counts when they differ."""
    allowed = allowed or {}
    core = {side: n - allowed.get(side, (0, ""))[0] for side, n in counts.items()}
    line = ", ".join(f"{side} {n:,}" for side, n in counts.items())
    if len(set(core.values())) > 1:
        raise AssertionError(f"parameter counts differ: {line}")
    extra = "; ".join(f"{side} holds {n:,} more: {why}" for side, (n, why) in allowed.items() if n)
    return f"trainable parameters equal: {line}" + (f" ({extra})" if extra else "")


# --- torch.compile -----------------------------------------------------------------------------------


def torch_compiled(build, warmups=2):
    """`(step, None)` or `(None, "not available: <reason>")`: `build()` (e.g. `fixtures.torch_train_step(...)
    .compiled`, a step of `torch.compile`d code) run `warmups` times, untimed (the compilation).

    A compiler missing or failing on this CPU is reported, never fatal."""
    try:
        step = build()
        for _ in range(warmups):
            step()
        return step, None
    except Exception as e:  # noqa: BLE001 - the reference is reported as missing, never fatal
        text = str(e).strip()
        first = text.splitlines()[0] if text else ""
        return None, f"not available: {type(e).__name__}: {first[:200]}"


def add_compiled_reference(steps, result, notes):
    """Adds `steps["transformers_compiled"]` (the `torch.compile`d transformers step, beside eager) when it
    compiles; otherwise `result["transformers_compiled"]` holds the error and `notes` says why. Returns whether
    it was added."""
    compiled, why = torch_compiled(steps["transformers"].compiled)
    if compiled is None:
        result["transformers_compiled"] = {"error": why}
        notes.append(f"torch.compile {why}")
        return False
    steps["transformers_compiled"] = compiled
    return True


# --- Model FLOPs utilization -------------------------------------------------------------------------


def median_time(fn, repeats, warmup):
    """(median seconds, all times) of `repeats` timed calls of `fn` after `warmup` untimed ones."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def matmul_fn(library, n=2048, dtype="float32"):
    """A function running one n x n x n matmul of `dtype` ("float32" or "bfloat16"; the result in that dtype, on
    the host) with `library` (numpy: float32 only; jax, torch or tensorflow)."""
    import numpy as np

    rs = np.random.RandomState(0)
    a = rs.standard_normal((n, n)).astype("float32")
    b = rs.standard_normal((n, n)).astype("float32")
    if dtype not in ("float32", "bfloat16") or (library == "numpy" and dtype != "float32"):
        raise ValueError(f"no {dtype} matmul for {library}")
    if library == "numpy":
        return lambda: a @ b
    if library == "jax":
        import jax

        ja, jb = jax.device_put(a).astype(dtype), jax.device_put(b).astype(dtype)
        f = jax.jit(lambda x, y: x @ y)
        return lambda: f(ja, jb).block_until_ready()
    if library == "torch":
        import torch

        ta, tb = torch.from_numpy(a).to(getattr(torch, dtype)), torch.from_numpy(b).to(getattr(torch, dtype))
        return lambda: torch.matmul(ta, tb)
    if library == "tensorflow":
        import tensorflow as tf

        xa, xb = tf.cast(tf.constant(a), dtype), tf.cast(tf.constant(b), dtype)
        return lambda: tf.linalg.matmul(xa, xb).numpy()
    raise ValueError(library)


def matmul_rate(library, n=2048, dtype="float32", repeats=5):
    """GFLOP/s of the fastest of `repeats` `matmul_fn(library, n, dtype)` calls after one untimed call."""
    _, times = median_time(matmul_fn(library, n, dtype), repeats, 1)
    return 2 * n ** 3 / min(times) / 1e9


def best_matmul(libraries, n=2048, repeats=5):
    """`(GFLOP/s, library)`: the best float32 n^3 matmul rate (2 n^3 FLOPs, the fastest of `repeats` calls after
    one untimed call) among `libraries`, measured in this process with its thread settings: the denominator of a
    model FLOPs utilization (MFU) measured in the same run."""
    best = (0.0, None)
    for library in dict.fromkeys(libraries):
        best = max(best, (matmul_rate(library, n, repeats=repeats), library))
    return best


def torch_step_flops(step, with_value=False, matmuls=None):
    """The FLOPs of one call of the PyTorch training `step()` (forward, backward), counted by
    `torch.utils.flop_counter.FlopCounterMode` (matmuls, convolutions, attention; elementwise work and the
    optimizer update not counted): the model FLOPs of the work both sides do. The call is a real step;
    `with_value`: `(flops, what the step returned)`. `matmuls`, a list, receives the step's matmul calls
    (`_matmul_recorder`) for `matmul_shape_ceiling`."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    recorder = _matmul_recorder() if matmuls is not None else None
    with counter:
        if recorder is None:
            value = step()
        else:
            with recorder:
                value = step()
            matmuls.extend(recorder.calls())
    return (counter.get_total_flops(), value) if with_value else counter.get_total_flops()


# The aten matmuls whose shapes `matmul_shape_ceiling` times -> the positions of their two factors.
MATMUL_FACTORS = {"mm": (0, 1), "addmm": (1, 2), "bmm": (0, 1), "baddbmm": (1, 2)}


def _tensor_meta(value):
    """`["tensor", size, stride, dtype]` of a tensor, the value itself otherwise (JSON-friendly)."""
    import torch

    if isinstance(value, torch.Tensor):
        return ["tensor", list(value.shape), list(value.stride()), str(value.dtype).removeprefix("torch.")]
    return value


def _matmul_recorder():
    """A `TorchDispatchMode` counting the calls of each matmul (`MATMUL_FACTORS`) by operator, arguments' sizes,
    strides and dtypes: `.calls()` -> `[[operator, [argument metas], {kwargs}, calls, flops per call], ...]`."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.counts = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            name = func.overloadpacket.__name__
            if name in MATMUL_FACTORS:
                a, b = (args[i] for i in MATMUL_FACTORS[name])
                metas = [_tensor_meta(x) for x in args]
                key = repr((str(func), metas, sorted(kwargs.items())))
                if key not in self.counts:  # flops: batch x m x k x n, twice
                    self.counts[key] = [str(func), metas, dict(kwargs), 0, 2 * a.numel() * b.shape[-1]]
                self.counts[key][3] += 1
            return func(*args, **kwargs)

        def calls(self):
            return list(self.counts.values())

    return Recorder()


def _replay(operator, metas, kwargs):
    """A function calling the aten `operator` ("aten.mm.default") on random tensors of the recorded sizes,
    strides and dtypes."""
    import torch

    def make(meta):
        if not (isinstance(meta, list) and meta and meta[0] == "tensor"):
            return meta
        _, size, stride, dtype = meta
        storage = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
        base = torch.randn(storage).to(getattr(torch, dtype))
        return torch.as_strided(base, size, stride)

    _, packet, overload = operator.split(".")
    func = getattr(getattr(torch.ops.aten, packet), overload)
    args = [make(meta) for meta in metas]
    return lambda: func(*args, **kwargs)


def fastest_call(fn, min_calls=3, min_seconds=0.02, max_calls=50):
    """The fastest of at least `min_calls` timed calls of `fn` (more, up to `max_calls`, until `min_seconds` are
    spent) after one untimed call."""
    fn()
    times = []
    while len(times) < min_calls or (sum(times) < min_seconds and len(times) < max_calls):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


REPLAY_PASSES = 2  # passes over a step's matmul shapes in `matmul_shape_ceiling`


def matmul_shape_ceiling(calls, flops, matmul_gflops):
    """The MFU a step could reach on this CPU if each of its matmuls ran as fast as PyTorch runs that matmul
    alone at the same shape (`calls` from `torch_step_flops(matmuls=...)`, each timed here with the process'
    threads) and the rest of its `flops` (convolutions, fused attention) at the best rate `matmul_gflops`; the
    step's elementwise work, softmaxes and optimizer take no time in it. So it is an upper bound of the MFU of
    any implementation of the step that multiplies the same shapes: small matmuls (a recurrence's [batch, H]
    rows, attention heads 64 wide) reach a fraction of the best n^3 rate.

    Returns `{"ceiling": share, "matmul_share": share of `flops` in the timed matmuls, "shapes": distinct ones,
    "slowest": "the matmul costing the most time: shapes, GFLOP/s, share of the ceiling's time"}`, or None
    without calls."""
    if not (calls and flops and matmul_gflops):
        return None
    # Each shape's fastest call over REPLAY_PASSES passes through all of them: a burst of load on a shared
    # machine during one pass does not make a shape look slow (one pass once put ALBERT's ceiling at 55%, under
    # our measured 90%; the same case minutes later 87%).
    # The operands are made anew in each pass (one shape's at a time in memory).
    fastest = [float("inf")] * len(calls)
    for _ in range(REPLAY_PASSES):
        fastest = [min(best, fastest_call(_replay(operator, metas, kwargs)))
                   for best, (operator, metas, kwargs, _, _) in zip(fastest, calls)]
    seconds, counted, worst = 0.0, 0, None
    for (operator, metas, kwargs, n, per_call), best in zip(calls, fastest):
        spent = n * best
        seconds += spent
        counted += n * per_call
        if worst is None or spent > worst[0]:
            sizes = " x ".join(str(meta[1]) for meta in metas if isinstance(meta, list) and meta[:1] == ["tensor"])
            worst = (spent, f"{operator.split('.')[1]} {sizes}", n * per_call / spent / 1e9)
    rest = max(flops - counted, 0)
    seconds += rest / (matmul_gflops * 1e9)
    return {"ceiling": flops / seconds / 1e9 / matmul_gflops, "matmul_share": min(counted / flops, 1.0),
            "shapes": len(calls),
            "slowest": f"{worst[1]} ({worst[2]:.0f} GFLOP/s, {100 * worst[0] / seconds:.0f}% of the time)"}


def mfu(flops, step_s, matmul_gflops):
    """Model FLOPs utilization: `flops` per step over `step_s`, as a share of the best matmul rate."""
    if not (flops and step_s and matmul_gflops):
        return None
    return flops / step_s / 1e9 / matmul_gflops


# --- Report ---------------------------------------------------------------------------------------------


def judge(targets, quick):
    """The targets `[(name, measured, ok)]`, each result "pass" / "MISS", or QUICK_NO_TARGET in the quick tier
    (tiny shapes: no target is judged there)."""
    return [(name, measured, QUICK_NO_TARGET if quick else ("pass" if ok else "MISS")) for name, measured, ok in
            targets]


def step_report(by, group, prefix, heading, target, digits=2):
    """(sections, targets) of a fine-tuning step case (`qa_step`, `ner_step`): the table of the results labelled
    `prefix ...` in `group`, and the target "ours >= 1.2x transformers on the best backend" (where our step is
    fastest, as `bench_families.report`; every backend's ratio with `digits` decimals) from the base-size runs."""
    sections, targets = [], []
    rows, measured, notes = [], {}, {}
    for label, r in cases(by, group, prefix, rows, 6):
        o, h, vs = r["ours"], r["transformers"], r["vs_transformers"]
        rows.append([r["backend"], f"{r['shape']}, batch {r['batch']}, seq {r['seq']}", fmt(o["step_s"], 3),
                     fmt(h["step_s"], 3), ratio_text(vs), f"{fmt(o['params'])} / {fmt(h['params'])}",
                     r["threads"]["threads"], f"{o['loss_first']:.2f} -> {o['loss_last']:.4f} / "
                     f"{h['loss_first']:.2f} -> {h['loss_last']:.4f}"])
        notes.update(dict.fromkeys(r.get("notes", [])))
        if r["shape"] == "base" and vs:
            measured[r["backend"]] = (o["step_s"], vs["median"])
    if rows:
        sections.append(f"### {heading}; ours and transformers in one process, rounds alternating; ratio = median "
                        "of per-round transformers / ours (min-max))\n\n"
                        + table(["backend", "shape", "ours step s", "transformers step s", "ours vs transformers",
                                 "trainable params (ours / transformers)", "threads per side",
                                 "loss first -> last (ours / transformers)"], rows)
                        + ("\n\n" + "\n".join(f"- {note}" for note in notes) if notes else ""))
    if measured:
        best = min(measured, key=lambda b: measured[b][0])
        others = ", ".join(f"{b} {v[1]:.{digits}f}x" for b, v in sorted(measured.items()))
        targets.append((target, f"{measured[best][1]:.2f}x ({best}); {others}", measured[best][1] >= 1.2))
    return sections, targets
