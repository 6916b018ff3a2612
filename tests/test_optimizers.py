"""`keras_pretrain.optimizers`: AdamW equals Keras' AdamW (fused on PyTorch); the warmup schedule."""

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
