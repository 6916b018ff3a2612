"""Where the time of an MLM training step goes (ours, one backend), measured in one process.

    KERAS_BACKEND=jax python -m benchmarks.profile_step [--shape base] [--batch 8] [--rounds 3]

Alternates, round after round (so load changes on a shared machine hit every variant alike):
`step` (the compiled train step, dropout 0.1), `step_no_dropout` (same weights shape, dropout 0),
`forward` (inference forward of the same model), and on JAX `grads` (forward + backward, no optimizer
update, jit-compiled). Prints median seconds per variant and the shares they imply. For ours against
keras-hub in one process use `python -m benchmarks.cases mlm_ab '{"shape": "small", "batch": 16}'`;
for where the time goes inside a step, a profiler (jax.profiler.trace, torch.profiler,
tf.profiler.experimental) on that step.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from benchmarks.fixtures import mlm_step_flops  # noqa: E402
from benchmarks.fixtures import MLM_SHAPES  # noqa: E402
from benchmarks.fixtures import mlm_batch  # noqa: E402


def build(dims, dropout):
    from keras_pretrain.models.bert import BertBackbone
    from keras_pretrain.models.bert import BertPretrainer

    backbone = BertBackbone(vocabulary_size=dims["V"], num_layers=dims["L"], num_heads=dims["A"],
                            hidden_dim=dims["H"], intermediate_dim=dims["I"], dropout=dropout)
    model = BertPretrainer(backbone, sentence_head=False)
    model.compile(optimizer=keras.optimizers.AdamW(1e-4, weight_decay=0.01))
    return model


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="base", choices=sorted(MLM_SHAPES))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    dims = MLM_SHAPES[args.shape]
    ids, positions, labels, weights = mlm_batch(args.batch, 128, dims["V"], 20)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids),
         "masked_lm_positions": positions}
    y, sw = {"mlm": labels}, {"mlm": weights}
    keras.utils.set_random_seed(0)
    model = build(dims, 0.1)
    plain = build(dims, 0.0)
    variants = {
        "step": lambda: model.train_on_batch(x, y, sample_weight=sw),
        "step_no_dropout": lambda: plain.train_on_batch(x, y, sample_weight=sw),
        "forward": lambda: keras.Model.predict_on_batch(model, x),
    }
    if keras.backend.backend() == "jax":
        import jax

        def values(variables):  # read each time: the compiled train step donates the old buffers
            return [v.value for v in variables]

        def loss(tv, ntv, mv, ov):
            value, _ = model.compute_loss_and_updates(
                tv, ntv, mv, x, y, sw, training=True, optimizer_variables=ov
            )
            return value

        grad_fn = jax.jit(jax.grad(loss))
        variants["grads"] = lambda: jax.block_until_ready(grad_fn(
            values(model.trainable_variables), values(model.non_trainable_variables),
            values(model.metrics_variables), values(model.optimizer.variables)))
    for fn in variants.values():  # compile
        fn()
    times = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, fn in variants.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    flops = mlm_step_flops(dims["L"], dims["H"], dims["I"], dims["V"], args.batch, 128, 20)
    print(f"backend {keras.backend.backend()}, shape {args.shape}, batch {args.batch}, "
          f"model GFLOP/step {flops / 1e9:.1f}, JAX PRNG {os.environ.get('JAX_DEFAULT_PRNG_IMPL', 'default')}")
    for name, t in med.items():
        print(f"  {name:16s} {t:8.3f} s  ({flops / t / 1e9 if name.startswith('step') else float('nan'):6.1f}"
              f" model GFLOP/s)  {[round(v, 3) for v in times[name]]}")
    step = med["step"]
    print(f"  dropout costs {(step - med['step_no_dropout']) / step * 100:.0f}% of the step; "
          f"forward is {med['forward'] / step * 100:.0f}% (ideal ~33%)"
          + (f"; optimizer+metrics {(step - med['grads']) / step * 100:.0f}%" if "grads" in med else ""))


if __name__ == "__main__":
    main()
