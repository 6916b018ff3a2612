"""The fair comparison harness of issue 45 (`benchmarks.harness`) and what the comparison cases build with it: paired
ratios, the rotating order, thread settings, equal parameter counts, the quick tier's targets, the plans' rounds
and threads, the bf16 target across backends, and transformers' MLM decoders gathered at the predicted positions
(the same work as ours). No timed assertion."""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from benchmarks import harness
from benchmarks.harness import QUICK_NO_TARGET, interleave, judge, paired, rotation, same_params

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# --- Rounds and ratios ------------------------------------------------------------------------------------


def test_paired_ratios_are_per_round_reference_over_ours():
    result = paired([2.0, 3.0, 4.0, 10.0, 1.0], [1.0, 2.0, 4.0, 2.0, 1.0])
    assert result["per_round"] == [2.0, 1.5, 1.0, 5.0, 1.0]
    assert (result["median"], result["min"], result["max"]) == (1.5, 1.0, 5.0)
    # Not the ratio of the medians (3.0 / 2.0 = 1.5 here by chance): a round's ratio pairs that round's times.
    skew = paired([1.0, 1.0, 9.0], [2.0, 0.5, 3.0])
    assert skew["median"] == 2.0 and np.median([1.0, 1.0, 9.0]) / np.median([2.0, 0.5, 3.0]) == 0.5
    with pytest.raises(ValueError, match="rounds of both sides"):
        paired([1.0, 2.0], [1.0])


def test_the_order_rotates_every_round():
    assert rotation(["a", "b", "c"], 4) == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]
    assert rotation({"ours": 1, "ref": 2}, 3) == [["ours", "ref"], ["ref", "ours"], ["ours", "ref"]]


def test_interleave_times_each_call_in_the_rotated_order():
    log, now = [], [0.0]

    def clock():
        return now[0]

    def call(name, seconds):
        def fn():
            log.append(name)
            now[0] += seconds
        return fn

    times = interleave({"ours": call("ours", 1.0), "transformers": call("transformers", 3.0),
                        "keras_hub": call("keras_hub", 2.0)}, 5, clock=clock)
    assert log == sum(rotation(["ours", "transformers", "keras_hub"], 5), [])
    assert times == {"ours": [1.0] * 5, "transformers": [3.0] * 5, "keras_hub": [2.0] * 5}


@pytest.mark.one_backend
def test_time_steps_reads_the_last_loss_and_the_flops_without_extra_steps():
    import torch

    layer = torch.nn.Linear(4, 3, bias=False)
    x = torch.ones(2, 4)
    calls = {"ours": 0, "transformers": 0}

    def step(name):
        def fn():
            calls[name] += 1
            if name == "ours":
                return 10.0 - calls[name]
            loss = layer(x).sum()
            loss.backward()
            return -float(calls[name])
        return fn

    result = harness.time_steps({"ours": {}, "transformers": {}}, {"ours": step("ours"), "transformers":
                                step("transformers")}, 5, 16, [], count_flops="transformers")
    # One untimed warm-up step (the FLOPs counted on transformers' one), 5 rounds: 6 steps, none more.
    assert calls == {"ours": 6, "transformers": 6}
    assert result["model_flops"] == 96  # forward 48 + the weight's gradient 48
    assert (result["ours"]["loss_first"], result["ours"]["loss_last"]) == (9.0, 4.0)
    assert (result["transformers"]["loss_first"], result["transformers"]["loss_last"]) == (-1.0, -6.0)
    assert len(result["ours"]["times"]) == 5 and result["vs_transformers"]["median"] > 0


def test_same_params_prints_equal_counts_and_refuses_different_ones():
    assert same_params({"ours": 10, "transformers": 10}) == "trainable parameters equal: ours 10, transformers 10"
    line = same_params({"ours": 12, "keras_hub": 12, "transformers": 10},
                       {"ours": (2, "pooler"), "keras_hub": (2, "pooler")})
    assert line.startswith("trainable parameters equal: ours 12, keras_hub 12, transformers 10 (ours holds 2 more")
    with pytest.raises(AssertionError, match="parameter counts differ: ours 11, transformers 10"):
        same_params({"ours": 11, "transformers": 10})
    with pytest.raises(AssertionError):
        same_params({"ours": 12, "transformers": 10}, {"ours": (1, "not all of it")})


def test_the_quick_tier_judges_no_target():
    targets = [("a >= 1.2x", "1.30x", True), ("b >= 2x", "0.26x", False)]
    assert judge(targets, quick=False) == [("a >= 1.2x", "1.30x", "pass"), ("b >= 2x", "0.26x", "MISS")]
    assert [t[2] for t in judge(targets, quick=True)] == [QUICK_NO_TARGET] * 2


def test_xla_thread_flags():
    assert harness.xla_thread_flags("", 1) == "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    assert harness.xla_thread_flags("--a", 2).startswith("--a --xla_cpu_multi_thread_eigen=true")


def test_torch_compiled_reports_a_failure_instead_of_raising():
    def build():
        raise RuntimeError("no C++ compiler\nmore lines")

    assert harness.torch_compiled(build) == (None, "not available: RuntimeError: no C++ compiler")
    calls = []
    step, why = harness.torch_compiled(lambda: lambda: calls.append(1), warmups=2)
    assert why is None and calls == [1, 1] and step is not None


def test_the_compiled_reference_is_added_beside_eager_or_reported():
    import types

    def failing():
        raise RuntimeError("inductor needs a C++ compiler")

    steps = {"transformers": types.SimpleNamespace(compiled=failing)}
    result, notes = {}, []
    assert not harness.add_compiled_reference(steps, result, notes)
    assert "transformers_compiled" not in steps
    assert result["transformers_compiled"] == {"error": "not available: RuntimeError: inductor needs a C++ compiler"}
    assert notes == ["torch.compile not available: RuntimeError: inductor needs a C++ compiler"]
    steps = {"transformers": types.SimpleNamespace(compiled=lambda: lambda: 0.5)}
    assert harness.add_compiled_reference(steps, {}, [])
    assert steps["transformers_compiled"]() == 0.5


@pytest.mark.one_backend
def test_set_threads_sets_every_library_and_restores(tmp_path):
    # A fresh process: the settings apply before JAX, TensorFlow and PyTorch start their thread pools.
    script = (
        "import json, os, sys\n"
        "from benchmarks.harness import set_threads\n"
        "before = sorted(os.sched_getaffinity(0))\n"
        "settings, restore = set_threads(1)\n"
        "pinned = sorted(os.sched_getaffinity(0))\n"
        "restore()\n"
        "print('JSON', json.dumps({'settings': settings, 'before': before, 'pinned': pinned,\n"
        "                          'after': sorted(os.sched_getaffinity(0))}))\n")
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    env.pop("XLA_FLAGS", None)
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300)
    line = next(line for line in out.stdout.splitlines() if line.startswith("JSON "))
    got = json.loads(line[5:])
    s = got["settings"]
    assert s["threads"] == 1 and s["torch_threads"] == 1 and s["torch_interop_threads"] == 1
    assert s["tf_intra_op_threads"] == 1 and s["tf_inter_op_threads"] == 1
    assert "intra_op_parallelism_threads=1" in s["xla_flags"] and s["imported_before"] == []
    assert got["pinned"] == s["cpus"] == got["before"][:1] and got["after"] == got["before"]
    with pytest.raises(ValueError, match="threads must be >= 1"):
        harness.set_threads(0)


# --- The plans: every comparison by the rules -----------------------------------------------------------------

COMPARISONS = {"mlm_ab", "family_step", "encoder_inference", "masking", "mlm_precision", "qa_step", "ner_step",
               "qa_serving"}


def _args(**kwargs):
    from benchmarks import run

    base = dict(quick=False, full=False, only=list(run.GROUPS), backends=list(run.BACKENDS),
                inference_backend="jax", torch_threads=None, threads=None, torch_compile=True)
    base.update(kwargs)
    return argparse.Namespace(**base)


@pytest.mark.parametrize("tier", ["default", "full", "quick"])
def test_every_comparison_sets_threads_and_enough_rounds(tier):
    from benchmarks import run

    cases = run.plan(_args(quick=tier == "quick", full=tier == "full"))
    compared = [c for c in cases if c[3] in COMPARISONS]
    left_out = {"quick": {"mlm_precision"}, "default": {"qa_serving"}, "full": set()}[tier]
    assert {c[3] for c in compared} >= COMPARISONS - left_out
    # One thread per side in the quick tier; every core of the process, each side pinned to them, otherwise.
    threads = 1 if tier == "quick" else len(os.sched_getaffinity(0))
    for group, label, backend, case, kwargs in compared:
        assert kwargs.get("threads") == threads, (label, kwargs)
        rounds = kwargs.get("rounds", 5)
        assert min(rounds if isinstance(rounds, list) else [rounds]) >= 5, (label, kwargs)
    # Ours and transformers in one process for encoders: one case per family, no separate transformers process.
    assert not any(c[3] in ("encoder_inference", "mlm_ab") and "impl" in c[4] for c in cases)


def test_the_quick_tier_runs_transformers_and_the_torch_backend():
    from benchmarks import run

    cases = run.plan(_args(quick=True))
    assert "torch" in {c[2] for c in cases}
    ab = [c for c in cases if c[3] == "mlm_ab"]
    assert all("transformers" in c[4].get("refs", ("keras_hub", "transformers")) for c in ab)
    assert any(c[3] == "encoder_inference" for c in cases)


@pytest.mark.parametrize("quick", [False, True])
def test_threads_reach_every_comparison(quick):
    from benchmarks import run

    cases = run.plan(_args(threads=3, quick=quick))
    assert all(c[4]["threads"] == 3 for c in cases if c[3] in COMPARISONS)


# --- bf16: the fastest steps across backends ------------------------------------------------------------------


def _precision(backend, f32, bf16):
    return {"backend": backend, "shape": "base", "batch": 8, "float32_step_s": f32, "bf16_step_s": bf16,
            "speedup": f32 / bf16, "first_step_s": {"float32": 10, "mixed_bfloat16": 10}, "cpu_bf16_units": [],
            "threads": {"threads": 1}}


def test_the_bf16_target_reads_the_fastest_steps_across_backends():
    from benchmarks import bench_precision

    curve = {"backend": "tensorflow", "max_gap": 0.01, "final_gap": 0.0, "seeds": 1, "window": 1, "steps": 1,
             "batch": 8, "shape": "small", "first_loss": {"float32": 1, "mixed_bfloat16": 1},
             "final_loss": {"float32": 1, "mixed_bfloat16": 1}}
    by = {("precision", "step tensorflow"): _precision("tensorflow", 1.82, 1.25),
          ("precision", "step jax"): _precision("jax", 2.02, 2.35),
          ("precision", "step torch"): _precision("torch", 3.40, 1.48),  # 2.30x its own, from a slow float32
          ("precision", "curve tensorflow"): curve}
    [(name, measured, ok), (curve_name, gap, curve_ok)] = bench_precision.report(by, quick=False)[1]
    assert measured.startswith("1.46x (tensorflow bf16 1.25 s vs tensorflow float32 1.82 s") and not ok
    assert "torch 2.30x" in measured
    assert "loss curve" in curve_name and gap.startswith("1.00% (tensorflow") and curve_ok
    by[("precision", "step jax")] = _precision("jax", 2.02, 1.0)
    [(name, measured, ok), _] = bench_precision.report(by, quick=False)[1]
    assert measured.startswith("1.82x (jax") and ok
    # The default tier runs no curve: the speed target stands alone, judged on speed.
    del by[("precision", "curve tensorflow")]
    [(name, measured, ok)] = bench_precision.report(by, quick=False)[1]
    assert "loss curve" not in name and ok


def test_the_bf16_kernel_account_is_amdahl_over_the_matmuls(monkeypatch):
    from benchmarks import bench_precision
    from benchmarks.fixtures import MLM_SHAPES, mlm_step_flops

    dims = MLM_SHAPES["base"]
    flops = mlm_step_flops(batch=8, seq=128, predictions=20, **dims)
    rates = {"float32": 300.0, "bfloat16": 1200.0}
    monkeypatch.setattr(bench_precision, "matmul_rate", lambda library, n, dtype, repeats: rates[dtype])
    monkeypatch.setattr(bench_precision, "keras_backend", lambda: "tensorflow")
    f32_step = 2 * flops / 300e9  # the matmuls take half the float32 step
    account = bench_precision.kernel_account(dims, 8, 128, 20, f32_step)
    assert account["matmul_share_float32"] == pytest.approx(0.5)
    assert account["bf16_step_if_only_matmuls_s"] == pytest.approx(f32_step * (0.5 + 0.5 / 4))
    rates["bfloat16"] = 240.0  # a bf16 matmul slower than float32 (no bf16 kernel): no speed-up possible
    assert bench_precision.kernel_account(dims, 8, 128, 20, f32_step)["bf16_step_if_only_matmuls_s"] > f32_step
    by = {("precision", "step tensorflow"): dict(_precision("tensorflow", 1.82, 1.25), **account)}
    [section] = bench_precision.report(by, quick=False)[0]
    assert "300 / 1200 (4.00x) | 50% |" in section


# --- The same work: transformers' MLM decoder at the predicted positions -------------------------------------


def _decoder_inputs(module):
    seen = []
    module.register_forward_hook(lambda m, args, out: seen.append(tuple(args[0].shape)))
    return seen


@pytest.mark.one_backend
def test_the_transformers_mlm_step_decodes_only_the_predictions():
    from benchmarks.fixtures import MLM_SHAPES, build_mlm

    batch, seq, predictions = 4, 32, 5
    step, params, backend = build_mlm("transformers", "tiny", batch, seq, predictions)
    seen = _decoder_inputs(step.model.cls.predictions.decoder)
    assert np.isfinite(step())
    assert seen == [(batch * predictions, MLM_SHAPES["tiny"]["H"])]  # [B x P, H], not [B, T, H]
    assert params == sum(p.numel() for p in step.model.parameters()) and backend == "torch"


@pytest.mark.one_backend
def test_the_gathered_loss_is_transformers_own_loss():
    import torch
    import transformers as t

    from benchmarks.fixtures import hf_mlm_loss, mlm_batch

    torch.manual_seed(0)
    model = t.BertForMaskedLM(t.BertConfig(vocab_size=100, hidden_size=16, num_hidden_layers=1,
                                           num_attention_heads=2, intermediate_size=32)).eval()
    ids, positions, labels, _ = mlm_batch(3, 12, 100, 4)
    inputs = {"input_ids": torch.from_numpy(ids.astype("int64"))}
    full = np.full(ids.shape, -100, "int64")
    np.put_along_axis(full, positions, labels, axis=1)
    with torch.no_grad():
        gathered = float(hf_mlm_loss(model.bert, model.cls, inputs, positions, labels)())
        own = float(model(**inputs, labels=torch.from_numpy(full)).loss)
    assert abs(gathered - own) < 1e-5


@pytest.mark.one_backend
@pytest.mark.parametrize("family, decoder", [("roberta", "lm_head.decoder"), ("albert", "predictions.decoder"),
                                             ("ernie", "cls.predictions.decoder"), ("distil_bert", "vocab_projector")])
def test_each_family_reference_decodes_only_the_predictions(family, decoder):
    import math

    from benchmarks import bench_families

    dims = bench_families._dims(family, "tiny")
    batch, seq = 2, 32
    _, builders, notes = bench_families.BUILDERS[family](dims, batch, seq, "tiny")
    step, params = builders["transformers"]()
    module = step.model
    for part in decoder.split("."):
        module = getattr(module, part)
    seen = _decoder_inputs(module)
    assert np.isfinite(step())
    predictions = math.ceil(0.15 * seq)
    width = dims.get("E", dims["H"]) if family == "albert" else dims["H"]
    assert seen == [(batch * predictions, width)]
    assert bench_families.MLM_DECODER_NOTE in notes or family == "distil_bert"


@pytest.mark.one_backend
def test_the_torch_elmo_trains_as_many_parameters_as_ours():
    from benchmarks import bench_families

    config, vocabulary, samples = bench_families._elmo_config("tiny")
    model = bench_families._torch_elmo(config, vocabulary, samples)
    frozen = [name for name, p in model.named_parameters() if not p.requires_grad]
    assert frozen and all("bias_hh" in name for name in frozen)
    assert all(float(p.abs().sum()) == 0.0 for name, p in model.named_parameters() if "bias_hh" in name)


# --- Model FLOPs utilization ------------------------------------------------------------------------------------


@pytest.mark.one_backend
def test_the_step_flops_are_the_matmuls_forward_and_backward():
    import torch

    layer = torch.nn.Linear(4, 3, bias=False)
    x = torch.ones(2, 4)

    def step():
        loss = layer(x).sum()
        loss.backward()
        return float(loss.detach())

    # Forward 2 * (2 x 4 x 3) = 48; backward: the weight's gradient 48 (the input needs none).
    assert harness.torch_step_flops(step) == 96
    assert harness.mfu(96e9, 2.0, 60.0) == pytest.approx(0.8)
    assert harness.mfu(None, 2.0, 60.0) is None
    gflops, library = harness.best_matmul(["numpy"], n=64, repeats=2)
    assert library == "numpy" and gflops > 0


@pytest.mark.one_backend
def test_the_matmul_shape_ceiling_replays_the_steps_matmuls(monkeypatch):
    import torch

    layer = torch.nn.Linear(4, 3)
    x = torch.ones(2, 4, requires_grad=True)

    def step():
        loss = layer(x).sum()
        loss.backward()
        return float(loss.detach())

    calls = []
    flops = harness.torch_step_flops(step, matmuls=calls)
    # Forward addmm [2, 4] x [4, 3] (the weight transposed: strides (1, 4)), backward: the input's gradient
    # [2, 3] x [3, 4] and the weight's [3, 2] x [2, 4]; each 48 FLOPs, all of the counted 144.
    assert flops == 144
    assert sorted((op, n, per_call) for op, _, _, n, per_call in calls) == [
        ("aten.addmm.default", 1, 48), ("aten.mm.default", 1, 48), ("aten.mm.default", 1, 48)]
    addmm = next(c for c in calls if c[0] == "aten.addmm.default")
    assert addmm[1][2] == ["tensor", [4, 3], [1, 4], "float32"]
    out = harness._replay(*addmm[:3])()  # random factors of the recorded sizes and strides
    assert tuple(out.shape) == (2, 3) and out.dtype == torch.float32

    # Each call timed alone: at 48 FLOPs per 1e-9 s (48 GFLOP/s) against a best rate of 96 GFLOP/s, the ceiling
    # is 50%; FLOPs no matmul accounts for (here 144 more) count at the best rate.
    monkeypatch.setattr(harness, "fastest_call", lambda fn: 1e-9)
    ceiling = harness.matmul_shape_ceiling(calls, flops, 96.0)
    assert ceiling["ceiling"] == pytest.approx(0.5) and ceiling["matmul_share"] == 1.0 and ceiling["shapes"] == 3
    assert ceiling["slowest"].endswith("(48 GFLOP/s, 33% of the time)")
    assert harness.matmul_shape_ceiling(calls, 2 * flops, 96.0)["ceiling"] == pytest.approx(2 / 3)
    assert harness.matmul_shape_ceiling([], flops, 96.0) is None

    # A pass slowed by load does not count: each shape keeps its fastest time over the passes.
    times = iter([4e-9, 1e-9, 1e-9, 1e-9, 4e-9, 4e-9] + [4e-9] * 3 * (harness.REPLAY_PASSES - 2))
    monkeypatch.setattr(harness, "fastest_call", lambda fn: next(times))
    assert harness.matmul_shape_ceiling(calls, flops, 96.0)["ceiling"] == pytest.approx(0.5)


def test_the_families_report_judges_mfu_on_the_best_backend():
    from benchmarks import bench_families

    def result(backend, step_s, share):
        side = {"step_s": step_s, "params": 10, "loss_first": 1.0, "loss_last": 0.5}
        return {"shape": "base", "batch": 8, "seq": 128, "objective": "MLM", "threads": {"threads": 2},
                "ours": side, "transformers": dict(side, step_s=2 * step_s),
                "vs_transformers": {"median": 2.0, "min": 1.9, "max": 2.1}, "params": "equal",
                "mfu": {"ours": share, "transformers": share / 2}, "model_flops": 1e12,
                "matmul_best_gflops": 100.0, "matmul_library": "torch", "rounds": 5}

    by = {("families", "gpt jax"): result("jax", 1.0, 0.65), ("families", "gpt tensorflow"): result("tf", 2.0, 0.3)}
    sections, targets = bench_families.report(by, quick=False)
    mfu_targets = [t for t in targets if "MFU" in t[0]]
    assert mfu_targets == [(mfu_targets[0][0], "65% (jax)", True)]  # the fastest backend's, not the other's
    assert "65% / 32% (1 TFLOP; 100.0 GFLOP/s torch)" in sections[0]
    # With the ceiling of the step's matmul shapes, the target and the table state it.
    slowest = "bmm [96, 128, 64] x [96, 64, 128] (80 GFLOP/s, 30% of the time)"
    by[("families", "gpt jax")]["mfu_ceiling"] = {"ceiling": 0.7, "matmul_share": 0.9, "shapes": 12, "slowest": slowest}
    sections, targets = bench_families.report(by, quick=False)
    assert [t[1] for t in targets if "MFU" in t[0]] == ["65% (jax); the ceiling of its matmul shapes 70%"]
    assert ("65% / 32% (1 TFLOP; 100.0 GFLOP/s torch; its matmul shapes' ceiling 70% (12 shapes, 90% of the FLOPs; "
            "slowest: bmm [96, 128, 64] x [96, 64, 128] (80 GFLOP/s, 30% of the time)))") in sections[0]
    # The transformers target states what share of the best matmul 1.2x would need (the same FLOPs per step).
    speed = [t for t in targets if "1.2x transformers" in t[0]]
    assert speed == [(speed[0][0], "2.00x (jax); jax 2.00x, tensorflow 2.00x; transformers at 32% MFU: 1.2x needs 39%",
                      True)]


def test_the_report_says_where_the_minutes_went():
    from benchmarks import run

    results = [{"group": "families", "label": "gpt jax", "backend": "jax", "wall_s": 120.4},
               {"group": "families", "label": "elmo jax", "backend": "jax", "wall_s": 400.0},
               {"group": "qa", "label": "serving", "backend": None, "wall_s": 60.0}]
    text = run.case_times(results, 580.4)
    assert text.startswith("### Where the 9.7 minutes went")
    rows = [line for line in text.splitlines() if line.startswith("| families") or line.startswith("| qa")]
    assert rows == ["| families elmo jax | jax | 400 |", "| families gpt jax | jax | 120 |", "| qa serving | - | 60 |"]


@pytest.mark.one_backend
def test_references_use_the_fused_tanh_gelu_the_same_function_as_gelu_new():
    """Issue 45, same work: transformers' `gelu_new` is the tanh GELU in seven unfused kernels (34% slower per
    BERT-base step here); the references compute the same function with the fused `gelu_pytorch_tanh`."""
    import glob

    import torch
    from transformers.activations import ACT2FN

    from benchmarks import bench_qa
    from benchmarks.fixtures import HF_ENCODERS, TANH_GELU, TINY

    x = torch.linspace(-8, 8, 10001)
    assert torch.allclose(ACT2FN[TANH_GELU](x), ACT2FN["gelu_new"](x), atol=1e-6)
    assert not torch.allclose(ACT2FN[TANH_GELU](x), ACT2FN["gelu"](x), atol=1e-4)  # not the erf form
    for family in ("bert", "albert"):
        assert HF_ENCODERS[family][2](TINY)["hidden_act"] == TANH_GELU
    assert bench_qa._hf_config({k: v for k, v in TINY.items() if k != "E"}).hidden_act == TANH_GELU
    for path in glob.glob(os.path.join(ROOT, "benchmarks", "*.py")):
        with open(path, encoding="utf-8") as f:
            assert '"gelu_new"' not in f.read(), f"{path} builds a reference with the unfused gelu_new"


def test_auto_backend_takes_the_measured_backend_else_the_fastest_matmul(monkeypatch):
    from benchmarks import run

    probe = {"gflops_per_s": {"jax": 276.0, "tensorflow": 301.0, "torch": 330.0}, "best": "torch"}
    calls = []
    monkeypatch.setattr(run, "run_case", lambda case, kwargs, backend, timeout: calls.append((case, kwargs)) or
                        (probe, 1.0))
    args = _args(inference_backend="auto", threads=2, timeout=60)
    args.probe = run.choose_backend(args, flags={"avx2"})  # as `main` keeps it for the report
    assert args.probe is probe and args.inference_backend == "torch"
    assert calls == [("backend_probe", {"threads": 2})]
    assert run.probe_text(probe) == "torch 330, tensorflow 301, jax 276 GFLOP/s"
    assert "torch, the fastest float32 2048^3 matmul" in run.backend_line(args)
    # The families and encoders of the default tier then run on it.
    assert {c[2] for c in run.plan(args) if c[0] == "inference"} == {"torch"}
    # Where ours measured fastest on this kind of CPU, that wins over the probe (which still runs, and is reported).
    measured = _args(inference_backend="auto", threads=2, timeout=60)
    measured.probe = run.choose_backend(measured, flags={"avx2", "avx512f"})
    assert measured.inference_backend == run.MEASURED_BACKENDS["avx512f"] == "tensorflow" and len(calls) == 2
    line = run.backend_line(measured)
    assert "tensorflow, where ours measured fastest on CPUs with avx512f" in line and "torch 330" in line
    assert {c[2] for c in run.plan(measured) if c[0] == "inference"} == {"tensorflow"}
    quick = _args(inference_backend="auto", quick=True)
    assert run.choose_backend(quick) is None and quick.inference_backend == "jax" and len(calls) == 2
    fixed = _args(inference_backend="tensorflow")
    assert run.choose_backend(fixed) is None and fixed.inference_backend == "tensorflow"


@pytest.mark.one_backend
def test_the_backend_probe_measures_every_library_in_one_process():
    from benchmarks.cases import backend_probe

    result = backend_probe(threads=1, n=64, repeats=1, libraries=("torch", "jax"))
    assert set(result["gflops_per_s"]) == {"torch", "jax"} and result["best"] in ("torch", "jax")
    assert all(rate > 0 for rate in result["gflops_per_s"].values()) and result["threads"]["threads"] == 1


def test_elmo_runs_on_jax_whatever_the_matmul_probe_picks():
    """ELMo is not matmul-bound: the probe's backend is not its best (RESULTS.md: JAX 1.72x, PyTorch 0.91x on the
    same machine), so the default tier times it on JAX and the other families on the probe's choice."""
    from benchmarks import run

    args = _args(inference_backend="torch", threads=2)
    families = {c[1].split()[0]: c[2] for c in run.plan(args) if c[0] == "families"}
    assert families["elmo"] == "jax"
    assert families["roberta"] == families["gpt"] == "torch"
    assert run.family_backends("elmo", "tensorflow", set()) == ("jax",)


def test_the_encoder_target_states_its_float32_ceiling():
    """The encoder row says what share of the best matmul transformers already runs at, and so what 1.2x needs."""
    from benchmarks import run

    r = {"transformers": {"b32_gflops_per_s": 245.0}, "matmul_library": "torch"}
    assert run.encoder_ceiling(r, 334.0) == ("; transformers at 73% of the best float32 matmul (334 GFLOP/s torch): "
                                             "1.2x needs 88%")
    assert run.encoder_ceiling({"transformers": {}}, 334.0) == "" and run.encoder_ceiling(r, None) == ""


def test_the_report_prints_the_allocator_settings():
    """glibc's malloc tunables move the ratios (page faults on freshly allocated tensors): the report says which."""
    from benchmarks import run

    assert "default settings" in run.allocator_line({"PATH": "/bin"})
    assert run.allocator_line({"MALLOC_MMAP_THRESHOLD_": "4000000000", "HOME": "/root"}) == (
        "Allocator: glibc malloc with MALLOC_MMAP_THRESHOLD_=4000000000.")


def test_quick_runs_the_backends_side_by_side_after_the_process_without_one(monkeypatch):
    """`--quick` runs its backend processes QUICK_PARALLEL at a time, after the one without a backend (whose
    machine-ceiling case measures how two processes scale), and reports the cases in the plan's order."""
    import threading
    import time

    from benchmarks import run

    events, lock = [], threading.Lock()

    def fake(cases, backend, timeout, torch_threads=None):
        with lock:
            events.append(("start", backend))
        time.sleep(0.2)
        with lock:
            events.append(("end", backend))
        return [{"case_wall_s": 0.1, "name": name} for name, _ in cases], 0.2

    monkeypatch.setattr(run, "run_cases_together", fake)
    monkeypatch.setattr(run, "QUICK_PARALLEL", 2)
    plan = [("g", "a", "jax", "x", {}), ("g", "b", None, "y", {}), ("g", "c", "torch", "z", {}),
            ("g", "d", "jax", "w", {})]
    results = run.run_quick(plan, argparse.Namespace(timeout=10, torch_threads=None))
    assert [r["label"] for r in results] == ["a", "d", "b", "c"]  # grouped by backend, in the plan's order
    assert [r["result"]["name"] for r in results] == ["x", "w", "y", "z"]
    assert events[:2] == [("start", None), ("end", None)]  # alone, first
    assert {e for e in events[2:4]} == {("start", "jax"), ("start", "torch")}  # both backends at once


@pytest.mark.tf_only  # the double trace is Keras' TensorFlow trainer's
def test_the_keras_hub_reference_traces_its_step_once():
    """keras-hub's tasks keep Keras' TensorFlow double trace (the optimizer's and the loss trackers' variables are
    created inside the first trace); the benchmark builds them first, as our tasks do, so the untimed warm-up is
    one trace shorter. Its steps and losses are those of the unbuilt model."""
    import keras

    from benchmarks import fixtures

    def run(build_first, monkeypatch):
        if not build_first:
            monkeypatch.setattr(fixtures, "keras_hub_build_first", lambda *args: None)
        step, params, _ = fixtures.build_mlm("keras_hub", "tiny", batch=2, seq=16, predictions=3)
        traces = []
        train_step = step.model.train_step
        step.model.train_step = lambda data: traces.append(1) or train_step(data)
        losses = [step(), step()]
        monkeypatch.undo()
        return len(traces), losses, params

    with pytest.MonkeyPatch.context() as monkeypatch:
        built = run(True, monkeypatch)
    with pytest.MonkeyPatch.context() as monkeypatch:
        deferred = run(False, monkeypatch)
    assert (built[0], deferred[0]) == (1, 2)
    assert built[2] == deferred[2] and keras.config.backend() == "tensorflow"
    np.testing.assert_allclose(built[1], deferred[1], rtol=1e-6)
