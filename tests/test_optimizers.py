"""`keras_pretrain.optimizers`: AdamW equals Keras' AdamW (fused on PyTorch); the warmup schedule."""

import contextlib

import keras
import numpy as np
import pytest

from keras_pretrain.optimizers import AdamW
from keras_pretrain.optimizers import WarmupLinearDecay
from keras_pretrain.optimizers import make_optimizer


def _train(optimizer, steps=6):
    """Apply `steps` fixed random gradients to four variables; their values after each step."""
    rs = np.random.RandomState(0)
    variables = [keras.Variable(rs.randn(7, 5).astype("float32"), name=f"kernel_{i}") for i in range(3)]
    variables.append(keras.Variable(np.zeros(5, "float32"), name="bias"))
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    history = []
    for _ in range(steps):
        grads = [keras.ops.convert_to_tensor(rs.randn(*v.shape).astype("float32")) for v in variables]
        optimizer.apply(grads, variables)
        history.append([keras.ops.convert_to_numpy(v) for v in variables])
    return history


@pytest.mark.parametrize("epsilon", [1e-6, 0.5])  # a large epsilon checks its per-step rescaling
def test_adamw_equals_keras_adamw(epsilon):
    kwargs = dict(
        learning_rate=WarmupLinearDecay(0.05, 10, 2), weight_decay=0.1, beta_2=0.98,
        epsilon=epsilon, clipnorm=1.0,
    )
    ours, reference = _train(AdamW(**kwargs)), _train(keras.optimizers.AdamW(**kwargs))
    moved = np.abs(reference[-1][0] - _train(keras.optimizers.AdamW(**kwargs), steps=1)[0][0]).max()
    assert moved > 1e-2  # the variables do move over the steps
    for step, (a, b) in enumerate(zip(ours, reference)):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, atol=1e-6, err_msg=f"step {step + 1}")
    # The bias was excluded from weight decay and only moved by Adam: both agree above.


def test_adamw_uses_the_fused_kernel_on_torch(monkeypatch):
    if keras.config.backend() != "torch":
        pytest.skip("the fused update is PyTorch's")
    import torch

    calls = []
    fused = torch._fused_adamw_
    monkeypatch.setattr(torch, "_fused_adamw_", lambda *a, **k: calls.append(len(a[0])) or fused(*a, **k))
    _train(AdamW(learning_rate=1e-3, weight_decay=0.01), steps=2)
    assert calls == [4, 4]  # one fused call per step, over all four variables


def test_adamw_config_round_trip():
    optimizer = AdamW(learning_rate=WarmupLinearDecay(1e-4, 100, 10), weight_decay=0.01, epsilon=1e-6)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(restored) is AdamW
    assert restored.get_config() == optimizer.get_config()


def test_make_optimizer():
    optimizer = make_optimizer("adamw", 1e-3, total_steps=100)
    assert isinstance(optimizer, AdamW)
    assert isinstance(make_optimizer("lamb", 1e-3, total_steps=100), keras.optimizers.Lamb)
    with pytest.raises(ValueError, match="expected 'adamw' or 'lamb'"):
        make_optimizer("sgd", 1e-3, total_steps=100)


def test_warmup_linear_decay():
    schedule = WarmupLinearDecay(1.0, total_steps=10, warmup_steps=2)
    values = [float(keras.ops.convert_to_numpy(schedule(step))) for step in (0, 1, 2, 6, 10, 12)]
    np.testing.assert_allclose(values, [0.0, 0.5, 1.0, 0.5, 0.0, 0.0], atol=1e-7)


MIRRORED_SCRIPT = r"""
import json
import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
import keras
from keras_pretrain.optimizers import AdamW


def train(optimizer_class):
    keras.utils.set_random_seed(0)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        model.compile(optimizer=optimizer_class(learning_rate=0.05, weight_decay=0.1, epsilon=0.5), loss="mse")
    initial = model.get_weights()
    rs = np.random.RandomState(0)
    x, y = rs.randn(32, 6).astype("float32"), rs.randn(32, 1).astype("float32")
    model.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    moved = max(float(np.abs(a - b).max()) for a, b in zip(model.get_weights(), initial))
    return model.get_weights(), strategy.num_replicas_in_sync, moved


ours, replicas, moved = train(AdamW)
reference, _, _ = train(keras.optimizers.AdamW)
diff = max(float(np.abs(a - b).max()) for a, b in zip(ours, reference))
print("RESULT " + json.dumps({"replicas": replicas, "diff": diff, "moved": moved}))
"""


@pytest.mark.tf_only
def test_adamw_under_mirrored_strategy_equals_keras_adamw():
    """TensorFlow's fused update runs per replica under tf.distribute and gives Keras' result."""
    import json
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=root)
    out = subprocess.run([sys.executable, "-c", MIRRORED_SCRIPT], cwd=root, env=env, capture_output=True,
                         text=True, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("RESULT ")]
    assert out.returncode == 0 and lines, out.stdout[-2000:] + out.stderr[-3000:]
    result = json.loads(lines[-1][len("RESULT "):])
    assert result["replicas"] == 2
    assert result["moved"] > 1e-2
    assert result["diff"] <= 1e-6, result


def _stack_variables():
    """Variables at the paths of a 3-layer backbone and its head: {path: variable}."""
    rs = np.random.RandomState(1)
    paths = ["token_embedding/embeddings", "transformer_layer_0/kernel", "transformer_layer_2/kernel",
             "xl_net_backbone/feedforward_layer_1/kernel", "logits/kernel"]
    variables = {}
    for path in paths:
        *scopes, name = path.split("/")
        with contextlib.ExitStack() as stack:
            for scope in scopes:
                stack.enter_context(keras.name_scope(scope))
            variables[path] = keras.Variable(rs.randn(4, 3).astype("float32"), name=name)
    return variables


def test_layer_decay_trains_each_layer_at_its_own_rate():
    """Each variable moves as Keras' AdamW at `decay ** depth` of the rate (weight decay scaled alike)."""
    from keras_pretrain.optimizers import layer_rate_multiplier

    decay, layers = 0.5, 3
    expected = {"token_embedding/embeddings": 0.125, "transformer_layer_0/kernel": 0.25,
                "transformer_layer_2/kernel": 1.0, "xl_net_backbone/feedforward_layer_1/kernel": 0.5,
                "logits/kernel": 1.0}
    variables = _stack_variables()
    assert {p: v.path for p, v in variables.items()} == {p: p for p in variables}
    assert {p: layer_rate_multiplier(p, decay, layers) for p in variables} == expected
    rs = np.random.RandomState(2)
    grads = [[rs.randn(4, 3).astype("float32") for _ in variables] for _ in range(3)]
    initial = {p: keras.ops.convert_to_numpy(v) for p, v in variables.items()}
    ours = AdamW(learning_rate=0.1, weight_decay=0.2, layer_decay=decay, num_layers=layers)
    for step in grads:
        ours.apply([keras.ops.convert_to_tensor(g) for g in step], list(variables.values()))
    for i, (path, variable) in enumerate(variables.items()):
        reference = keras.Variable(initial[path])
        optimizer = keras.optimizers.AdamW(learning_rate=0.1 * expected[path], weight_decay=0.2)
        for step in grads:
            optimizer.apply([keras.ops.convert_to_tensor(step[i])], [reference])
        np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), keras.ops.convert_to_numpy(reference),
                                   atol=1e-5, err_msg=path)  # PyTorch's fused formula: ~2e-6 apart
    assert np.abs(keras.ops.convert_to_numpy(variables["logits/kernel"]) - initial["logits/kernel"]).max() > 0.1
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(ours))
    assert (restored.layer_decay, restored.num_layers) == (decay, layers)


def test_layer_decay_arguments_of_a_backbone():
    from keras_pretrain.errors import ConfigError
    from keras_pretrain.models.albert import AlbertBackbone
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.optimizers import layer_decay_arguments

    kwargs = dict(vocabulary_size=30, num_layers=3, num_heads=2, hidden_dim=8, intermediate_dim=16,
                  max_sequence_length=16)
    assert layer_decay_arguments(BertBackbone(**kwargs), 0.8) == {"layer_decay": 0.8, "num_layers": 3}
    assert layer_decay_arguments(BertBackbone(**kwargs), None) == {}
    with pytest.raises(ConfigError, match="ALBERT shares its layers"):
        layer_decay_arguments(AlbertBackbone(embedding_dim=4, **kwargs), 0.8)
    with pytest.raises(ValueError, match="layer_decay"):
        AdamW(1e-3, layer_decay=1.5, num_layers=3)
