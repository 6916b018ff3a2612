"""Optimizers and learning-rate schedules of the pretraining and fine-tuning recipes."""

import math
import re

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW`, with fused updates on PyTorch and TensorFlow.

    Same arguments, state variables, math and saved config as Keras' AdamW
    (weight decay, its exclusions, gradient clipping and accumulation, EMA
    and loss scaling stay Keras'); only the Adam update itself is computed
    differently. Keras' version chains about a dozen elementwise passes over
    every parameter (`torch._foreach_*` on PyTorch, separate ops in a
    TensorFlow graph); here:

    - PyTorch: one call of PyTorch's fused Adam kernel
      (`torch._fused_adamw_`, one read and write of each tensor) per step.
      Keras' update is `p -= lr * sqrt(1 - b2^t) / (1 - b1^t) * m /
      (sqrt(v) + eps)`; the kernel computes `p -= lr / (1 - b1^t) * m /
      (sqrt(v) / sqrt(1 - b2^t) + eps')`, the same update when
      `eps' = eps / sqrt(1 - b2^t)`, which is what it is given each step.
    - TensorFlow: TensorFlow's fused `ResourceApplyAdam` kernel per
      variable (the same formula as Keras'; XLA compiles it too).
    - JAX: Keras' own (XLA fuses the update).

    On 2 CPU cores the BERT-base training step is about 5% faster on
    PyTorch and 3% faster on TensorFlow without XLA. AMSGrad falls back to
    Keras' update.
    """

    def __init__(self, *args, layer_decay=None, num_layers=None, **kwargs):
        super().__init__(*args, **kwargs)
        if layer_decay is not None and not (0 < layer_decay <= 1 and num_layers):
            raise ValueError(f"layer_decay must be in (0, 1] with num_layers > 0; got {layer_decay}, {num_layers}.")
        self.layer_decay = layer_decay
        self.num_layers = num_layers

    def build(self, variables):
        super().build(variables)
        if self.layer_decay is not None:  # by index: the backends pass their own variables to the updates
            self._rate_multipliers = [layer_rate_multiplier(v.path, self.layer_decay, self.num_layers)
                                      for v in variables]

    def rate_multiplier(self, variable):
        """The variable's learning-rate factor: 1, or its layer's under layer-wise decay."""
        if self.layer_decay is None:
            return 1.0
        return self._rate_multipliers[self._get_variable_index(variable)]

    def update_step(self, gradient, variable, learning_rate):
        if self.layer_decay is not None:
            learning_rate = learning_rate * self.rate_multiplier(variable)
        if keras.config.backend() != "tensorflow" or self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        import tensorflow as tf

        index = self._get_variable_index(variable)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step),
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.convert_to_tensor(gradient),
        )

    def _apply_weight_decay(self, variables):
        if self.layer_decay is None or self.weight_decay is None:
            return super()._apply_weight_decay(variables)
        # Decoupled decay at each variable's own (layer-decayed) rate: Keras' own update (distribution-aware
        # on every backend) per group of equal factor, `weight_decay` scaled by it (read when traced).
        groups = {}
        for variable in variables:
            groups.setdefault(self.rate_multiplier(variable), []).append(variable)
        weight_decay = self.weight_decay
        try:
            for multiplier, group in groups.items():
                self.weight_decay = weight_decay * multiplier
                super()._apply_weight_decay(group)
        finally:
            self.weight_decay = weight_decay

    def get_config(self):
        config = super().get_config()
        if self.layer_decay is not None:
            config.update(layer_decay=self.layer_decay, num_layers=self.num_layers)
        return config

    def _backend_update_step(self, grads, trainable_variables, learning_rate):
        if keras.config.backend() != "torch" or self.amsgrad:
            return super()._backend_update_step(
                grads, trainable_variables, learning_rate
            )
        import torch

        with torch.no_grad():
            self._fused_torch_update(grads, trainable_variables, learning_rate)

    def _fused_torch_update(self, grads, variables, learning_rate):
        import torch

        step = float(self.iterations.value.item()) + 1.0
        beta_1, beta_2 = float(self.beta_1), float(self.beta_2)
        eps = self.epsilon / math.sqrt(1.0 - beta_2**step)
        lr = float(ops.convert_to_numpy(learning_rate))
        groups = {}
        for grad, variable in zip(grads, variables):
            index = self._get_variable_index(variable)
            param = variable.value
            group = groups.setdefault((param.device, param.dtype, self.rate_multiplier(variable)), ([], [], [], []))
            group[0].append(param)
            group[1].append(grad.to(param.dtype))
            group[2].append(self._momentums[index].value)
            group[3].append(self._velocities[index].value)
        for (device, _, multiplier), (params, grads_, momentums, velocities) in groups.items():
            steps = [torch.tensor(step, dtype=torch.float32, device=device)] * len(params)
            torch._fused_adamw_(
                params, grads_, momentums, velocities, [], steps,
                lr=lr * multiplier, beta1=beta_1, beta2=beta_2, weight_decay=0.0, eps=eps,
                amsgrad=False, maximize=False,
            )


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


# A path component naming one layer of a stack: `transformer_layer_3`, XLNet's `attention_layer_3` /
# `feedforward_layer_3`; and one of the embeddings (`token_embedding`, `embeddings_layer_norm`, XLNet's
# `mask_emb`, ALBERT's `embeddings_projection`).
LAYER_COMPONENT = re.compile(r"^(?:[a-z]+_)?layer_(\d+)$")


def layer_rate_multiplier(path, decay, num_layers):
    """Layer-wise learning-rate decay (XLNet's `lr_layer_decay_rate`, ELECTRA's `layerwise_lr_decay`).

    Layer `i` of `num_layers` trains at `decay ** (num_layers - 1 - i)` of the rate (the top layer at the
    full rate, as XLNet), the embeddings below the first layer at `decay ** num_layers` (as ELECTRA), and
    everything above the stack (pooler, task head) at the full rate.
    """
    for component in path.split("/"):
        match = LAYER_COMPONENT.match(component)
        if match:
            return decay ** (num_layers - 1 - int(match.group(1)))
    if any("emb" in component for component in path.split("/")):
        return decay**num_layers
    return 1.0


def layer_decay_arguments(model, decay):
    """`AdamW(layer_decay=..., num_layers=...)` arguments for `model` (a task or a backbone).

    Raises `ConfigError` where the backbone has no per-layer weights to decay (ALBERT shares one layer).
    """
    from keras_pretrain.errors import ConfigError

    if decay is None:
        return {}
    backbone = getattr(model, "backbone", model)
    num_layers = getattr(backbone, "num_layers", None)
    found = {int(m.group(1)) for v in backbone.weights for c in v.path.split("/")
             for m in [LAYER_COMPONENT.match(c)] if m}
    if not num_layers or found != set(range(num_layers)):
        raise ConfigError(
            f"{type(backbone).__name__}: layer-wise learning-rate decay needs one set of weights per layer "
            f"(found layers {sorted(found)} of {num_layers}); ALBERT shares its layers: leave it off."
        )
    return {"layer_decay": float(decay), "num_layers": int(num_layers)}


def make_optimizer(name, learning_rate, total_steps, warmup_ratio=0.1, weight_decay=0.01, clipnorm=1.0, **kwargs):
    """AdamW or LAMB with warmup and linear decay, and gradient clipping.

    No weight decay on LayerNorm parameters and biases. `layer_decay` / `num_layers` (AdamW only, see
    `layer_decay_arguments`) add layer-wise learning-rate decay.
    """
    schedule = WarmupLinearDecay(learning_rate, total_steps, int(warmup_ratio * total_steps))
    common = dict(learning_rate=schedule, weight_decay=weight_decay, clipnorm=clipnorm, **kwargs)
    if name == "adamw":
        optimizer = AdamW(epsilon=1e-6, **common)
    elif name == "lamb":
        optimizer = keras.optimizers.Lamb(epsilon=1e-6, **common)
    else:
        raise ValueError(f"Unknown optimizer {name!r}; expected 'adamw' or 'lamb'.")
    # No decay on LayerNorm parameters and biases, as BERT.
    optimizer.exclude_from_weight_decay(var_names=["gamma", "beta", "bias"])
    return optimizer
