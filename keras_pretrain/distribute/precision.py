"""Mixed precision that works under every distribution."""

import keras

from keras_pretrain.errors import ConfigError

POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# Short names (`--mixed-precision bf16`).
ALIASES = {"fp32": "float32", "fp16": "mixed_float16", "bf16": "mixed_bfloat16"}


def set_mixed_precision(policy):
    """Set the global Keras dtype policy (before building the model): one of `POLICIES`, or `ALIASES`'s
    short names ("bf16", "fp16"); None is float32.

    `mixed_float16` needs loss scaling: Keras' `compile()` wraps the optimizer
    in `keras.optimizers.LossScaleOptimizer` for models whose policy is
    `mixed_float16` (use `loss_scale_optimizer(...)` in custom loops);
    `mixed_bfloat16` needs none (bfloat16 has float32's exponent range).
    Variables stay float32 in both, so replicas all-reduce float32 gradients.
    """
    policy = ALIASES.get(policy, policy or "float32")
    if policy not in POLICIES:
        raise ConfigError(f"Unknown mixed precision policy {policy!r}; expected one of {POLICIES} "
                          f"or {tuple(ALIASES)}.")
    keras.mixed_precision.set_global_policy(policy)
    return keras.mixed_precision.global_policy()


def loss_scale_optimizer(optimizer):
    """`optimizer` wrapped for loss scaling when the global policy is float16."""
    if keras.mixed_precision.global_policy().name == "mixed_float16" and not isinstance(
        optimizer, keras.optimizers.LossScaleOptimizer
    ):
        return keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
