"""Optimizers and learning-rate schedules used by the pretraining recipes."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_pretrain")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak` over `warmup_steps`, then linear decay to 0.

    This is BERT's schedule (and RoBERTa's, ALBERT's with LAMB).
    """

    def __init__(self, peak, total_steps, warmup_steps=0):
        self.peak = float(peak)
        self.total_steps = int(total_steps)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step):
        step = ops.cast(step, "float32")
        warmup = ops.maximum(float(self.warmup_steps), 1.0)
        decay = ops.maximum(float(self.total_steps - self.warmup_steps), 1.0)
        up = self.peak * step / warmup
        down = self.peak * ops.maximum(
            0.0, 1.0 - (step - self.warmup_steps) / decay
        )
        return ops.where(step < self.warmup_steps, up, down)

    def get_config(self):
        return {
            "peak": self.peak,
            "total_steps": self.total_steps,
            "warmup_steps": self.warmup_steps,
        }


def make_optimizer(name, learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, clipnorm=1.0, **kwargs):
    """AdamW or LAMB with warmup and linear decay, and gradient clipping."""
    schedule = WarmupLinearDecay(learning_rate, total_steps, int(warmup_ratio * total_steps))
    common = dict(learning_rate=schedule, weight_decay=weight_decay, clipnorm=clipnorm, **kwargs)
    if name == "adamw":
        optimizer = keras.optimizers.AdamW(epsilon=1e-6, **common)
    elif name == "lamb":
        optimizer = keras.optimizers.Lamb(epsilon=1e-6, **common)
    else:
        raise ValueError(f"Unknown optimizer {name!r}; expected 'adamw' or 'lamb'.")
    # No decay on LayerNorm parameters and biases, as BERT.
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    return optimizer
