"""Distributed training on CPU: each check runs once (in the TensorFlow run),
in fresh subprocesses with the backend and devices it needs.

Every distributed run trains the tiny BERT pretrainer of `worker.py` for
`STEPS` SGD steps on the same global batches as a single-device run, and must
give the same per-step losses and final weights (float32, within TOLERANCE).
"""

import json
import os
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest

from keras_pretrain.distribute import NAMES
from keras_pretrain.distribute import get_distribution
from keras_pretrain.distribute import get_layout_map
from keras_pretrain.errors import ConfigError
from tests.distribute import worker

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOLERANCE = 1e-4  # float32; measured differences are ~1e-7
# bfloat16 / float16 compute: reduction order changes results at the level of
# the half-precision epsilon (measured: losses <= 2.2e-4 apart, weights
# <= 1.1e-3); a run without the gradient all-reduce is 0.15 off in weights.
MIXED_LOSS_TOLERANCE = 2e-2
MIXED_WEIGHT_TOLERANCE = 5e-3
TIMEOUT = 240  # seconds per subprocess (a few seconds of work, slow shared CPUs)
once = pytest.mark.tf_only  # run each check once in the whole suite


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(mode, out, backend, n=1, env=None):
    """Start `n` worker processes; return their JSON results (rank order)."""
    procs = []
    for rank in range(n):
        penv = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
        penv.update(env(rank) if callable(env) else (env or {}))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "tests.distribute.worker", mode, str(out).replace("RANK", str(rank))],
            cwd=ROOT, env=penv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        ))
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=TIMEOUT)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, log in zip(procs, logs):
        assert p.returncode == 0, f"{mode} worker failed ({p.returncode}):\n{log[-4000:]}"
    return [json.load(open(str(out).replace("RANK", str(r)))) for r in range(n)]


def final_weights(json_path):
    data = np.load(os.path.splitext(str(json_path))[0] + ".npz")
    return {k.replace("|", "/"): data[k] for k in data.files}


@pytest.fixture(scope="module")
def reference():
    """Single-device TensorFlow run, in this process (the TF test run)."""
    result = {}
    weights = worker.run_single(result)
    return result["ref_losses"], weights


def assert_same_losses(losses, ref, atol=TOLERANCE):
    assert len(losses) == len(ref) == worker.STEPS
    np.testing.assert_allclose(losses, ref, atol=atol, rtol=0)


def assert_mixed(run, policy):
    """`run[policy]`: distributed vs single-device under a mixed policy."""
    sub = run[policy]
    assert sub["compute_dtype"] == policy.split("_")[1]
    assert sub.get("variable_dtype", "float32") == "float32"
    assert sub["loss_scaled"] == (policy == "mixed_float16")  # LossScaleOptimizer
    assert np.all(np.isfinite(sub["losses"]))
    assert_same_losses(sub["losses"], sub["ref_losses"], atol=MIXED_LOSS_TOLERANCE)
    assert sub["weights_diff"] <= MIXED_WEIGHT_TOLERANCE


@once
def test_mirrored_two_logical_cpus(tmp_path):
    (r,) = launch("tf_mirrored", tmp_path / "m.json", "tensorflow")
    assert r["num_replicas"] == 2
    assert_same_losses(r["losses"], r["ref_losses"])
    assert r["weights_diff"] <= TOLERANCE
    assert_mixed(r, "mixed_bfloat16")
    assert_mixed(r, "mixed_float16")


@once
def test_multi_worker_mirrored_two_processes(tmp_path, reference):
    ref_losses, ref_weights = reference
    workers = [f"127.0.0.1:{free_port()}" for _ in range(2)]

    def env(rank):
        config = {"cluster": {"worker": workers}, "task": {"type": "worker", "index": rank}}
        return {"TF_CONFIG": json.dumps(config)}

    results = launch("tf_multi_worker", tmp_path / "wRANK.json", "tensorflow", n=2, env=env)
    assert [r["name"] for r in results] == ["multi_worker"] * 2
    assert [r["is_chief"] for r in results] == [True, False]
    assert results[0]["num_replicas"] == 2 and results[0]["global_batch"] == worker.GLOBAL_BATCH
    for rank, r in enumerate(results):
        assert_same_losses(r["losses"], ref_losses)
        w = final_weights(tmp_path / f"w{rank}.json")
        assert worker.max_diff(ref_weights, w) <= TOLERANCE


@once
def test_tf_config_alone_is_not_multi_worker_and_missing_workers_fail_fast(monkeypatch):
    """A TF_CONFIG left in the environment does not turn "auto" into a
    multi-worker run (which would wait for the other machines); an explicit
    "multi_worker" whose peer never comes fails with a ConfigError naming it
    within KERAS_PRETRAIN_WORKER_TIMEOUT, instead of hanging."""
    import time

    me, absent = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    config = {"cluster": {"worker": [me, absent]}, "task": {"type": "worker", "index": 0}}
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))
    monkeypatch.setenv("KERAS_PRETRAIN_WORKER_TIMEOUT", "2")
    assert get_distribution("auto").name == "none"
    started = time.monotonic()
    with pytest.raises(ConfigError, match=f"cannot reach the worker\\(s\\) \\['{absent}'\\] of TF_CONFIG within 2s"):
        get_distribution("multi_worker")
    assert time.monotonic() - started < 30


@once
def test_jax_data_and_model_parallel_2x2(tmp_path):
    (r,) = launch("jax", tmp_path / "j.json", "jax",
                  # Unoptimised XLA:CPU programs, as the suite's JAX run (tests/conftest.py): this run compiles
                  # the reference, data- and model-parallel steps, and compares them with each other.
                  env={"XLA_FLAGS": "--xla_force_host_platform_device_count=4 --xla_backend_optimization_level=0"})
    assert r["devices"] == 4
    dp, mp = r["data_parallel"], r["model_parallel"]
    assert dp["num_replicas"] == 4 and mp["num_replicas"] == 2
    # Data parallel: weights replicated on the 4 devices, batches split.
    assert all(s["replicated"] and s["devices"] == 4 for s in dp["shardings"].values())
    assert dp["data_layout"][0] == "batch"
    # Model parallel: embeddings and dense kernels really split on "model".
    s = mp["shardings"]
    assert s["token_embedding/embeddings"]["spec"] == ["model", None]
    assert s["transformer_layer_0/self_attention_layer/query/kernel"]["spec"] == [None, "model", None]
    assert s["transformer_layer_1/self_attention_layer/attention_output/kernel"]["spec"] == ["model", None, None]
    assert s["transformer_layer_0/feedforward_intermediate_dense/kernel"]["spec"] == [None, "model"]
    assert s["transformer_layer_0/feedforward_output_dense/kernel"]["spec"] == ["model", None]
    assert not s["token_embedding/embeddings"]["replicated"]
    assert s["embeddings_layer_norm/gamma"]["replicated"]
    assert mp["data_layout"][0] == "batch"
    for run in (dp, mp):
        assert_same_losses(run["losses"], r["ref_losses"])
        assert run["weights_diff"] <= TOLERANCE
    assert_mixed(mp, "mixed_bfloat16")


@once
def test_torch_ddp_gloo_two_processes(tmp_path):
    port = free_port()

    def env(rank):  # what torchrun sets
        return {"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": "2",
                "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}

    results = launch("torch_ddp", tmp_path / "tRANK.json", "torch", n=2, env=env)
    assert [r["is_chief"] for r in results] == [True, False]
    assert results[0]["num_replicas"] == 2
    for r in results:
        assert_same_losses(r["losses"], results[0]["ref_losses"])
    assert results[0]["weights_diff"] <= TOLERANCE
    w0, w1 = final_weights(tmp_path / "t0.json"), final_weights(tmp_path / "t1.json")
    assert worker.max_diff(w0, w1) == 0.0  # replicas stay identical
    assert_mixed(results[0], "mixed_float16")
    assert results[1]["mixed_float16"]["losses"] == results[0]["mixed_float16"]["losses"]


@once
def test_tpu_without_tpu_is_a_clear_error(tmp_path):
    code = (
        "from keras_pretrain.distribute import get_distribution\n"
        "from keras_pretrain.errors import ConfigError\n"
        "for kw in ({}, {'tpu': 'local'}, {'tpu': 'grpc://127.0.0.1:%d'}, {'tpu': 'my-tpu', 'tpu_timeout': 3}):\n"
        "    try:\n"
        "        get_distribution('tpu', **kw)\n"
        "    except ConfigError as e:\n"
        "        print('ConfigError:', e)\n" % free_port()
    )
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
    env.pop("TPU_NAME", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120)
    lines = [x for x in out.stdout.splitlines() if x.startswith("ConfigError:")]
    assert out.returncode == 0, out.stderr[-3000:]
    assert len(lines) == 4, out.stdout
    assert "No TPU found" in lines[0]
    assert "no TPU devices" in lines[1]
    assert "Cannot reach the TPU worker" in lines[2]
    assert "my-tpu" in lines[3]


@once
def test_layout_map_covers_every_transformer_backbone():
    from keras_pretrain.models.albert.albert_backbone import AlbertBackbone
    from keras_pretrain.models.bert.bert_backbone import BertBackbone
    from keras_pretrain.models.distil_bert.distil_bert_backbone import DistilBertBackbone
    from keras_pretrain.models.ernie.ernie_backbone import ErnieBackbone
    from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
    from keras_pretrain.models.roberta.roberta_backbone import RobertaBackbone

    mesh = keras.distribution.DeviceMesh((1, 2), ["batch", "model"], devices=["cpu:0", "cpu:1"])
    kwargs = dict(vocabulary_size=64, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
                  max_sequence_length=16)
    for cls, extra in [(BertBackbone, {}), (AlbertBackbone, {"embedding_dim": 8}), (RobertaBackbone, {}),
                       (DistilBertBackbone, {}), (ErnieBackbone, {"use_task_id": True}), (GPTBackbone, {})]:
        backbone = cls(**kwargs, **extra)
        layout_map = get_layout_map(mesh, backbone)
        for v in backbone.weights:
            layout = layout_map[v.path]  # raises if two keys match
            if len(v.shape) >= 2:  # every embedding and kernel is sharded
                assert layout is not None and "model" in layout.axes, (cls.__name__, v.path)
            if layout is not None:
                assert len(layout.axes) == len(v.shape), (cls.__name__, v.path)
            elif len(v.shape) == 1:
                assert v.path.endswith(("bias", "gamma", "beta")), (cls.__name__, v.path)


def test_names_and_wrong_backend():
    dist = get_distribution("none")
    assert (dist.num_replicas, dist.is_chief, dist.global_batch_size(16)) == (1, True, 16)
    with dist.scope():
        pass
    with pytest.raises(ConfigError, match="Unknown distribution"):
        get_distribution("horovod")
    other = {"tensorflow": "ddp", "jax": "mirrored", "torch": "model_parallel"}[keras.config.backend()]
    with pytest.raises(ConfigError, match="backend"):
        get_distribution(other)
    assert set(NAMES) >= {"auto", "mirrored", "multi_worker", "tpu", "data_parallel", "model_parallel", "ddp"}


def test_short_policy_names():
    import keras

    from keras_pretrain.distribute import set_mixed_precision
    from keras_pretrain.errors import ConfigError

    try:
        assert set_mixed_precision("bf16").name == "mixed_bfloat16"
        assert set_mixed_precision("fp16").name == "mixed_float16"
        assert set_mixed_precision(None).name == "float32"
        with pytest.raises(ConfigError, match="'bf8'.*'bf16'"):
            set_mixed_precision("bf8")
    finally:
        keras.mixed_precision.set_global_policy("float32")
