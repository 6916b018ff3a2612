"""Training runs for tests/distribute, one per fresh process.

`python -m tests.distribute.worker MODE OUT_JSON [--policy P]`, with
KERAS_BACKEND set by the caller. Every mode trains the same tiny BERT
pretrainer (dropout 0, deterministic numpy initial weights) on the same
global batches with SGD for STEPS steps, and writes the per-step losses and
the final weights (npz next to OUT_JSON) of the distributed run and, where
the process can, of a single-device reference run on the same global batches.
"""

import argparse
import json
import os
import sys

import numpy as np

GLOBAL_BATCH = 8
STEPS = 3
SEQ, PREDICTIONS, VOCAB = 16, 4, 64
LEARNING_RATE = 0.5


def features(seed=0):
    rng = np.random.RandomState(seed)
    n = GLOBAL_BATCH * STEPS
    mask = np.ones((n, SEQ), "int32")
    mask[:, 12:] = 0  # padding present
    return {
        "input_ids": (rng.randint(1, VOCAB, (n, SEQ)) * mask).astype("int32"),
        "input_mask": mask,
        "segment_ids": np.concatenate([np.zeros((n, 6)), np.ones((n, SEQ - 6))], 1).astype("int32") * mask,
        "masked_lm_positions": np.stack([rng.choice(12, PREDICTIONS, replace=False) for _ in range(n)]).astype("int32"),
        "masked_lm_ids": rng.randint(1, VOCAB, (n, PREDICTIONS)).astype("int32"),
        "masked_lm_weights": np.ones((n, PREDICTIONS), "float32"),
        "next_sentence_labels": rng.randint(0, 2, (n, 1)).astype("int32"),
    }


def dataset():
    import tensorflow as tf

    return tf.data.Dataset.from_tensor_slices(features()).batch(GLOBAL_BATCH, drop_remainder=True).repeat()


def build(compile=True):
    import keras

    from keras_pretrain.models.bert.bert_backbone import BertBackbone
    from keras_pretrain.models.bert.bert_pretrainer import BertPretrainer

    backbone = BertBackbone(vocabulary_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=16,
                            intermediate_dim=32, dropout=0.0, max_sequence_length=SEQ)
    model = BertPretrainer(backbone)
    rng = np.random.RandomState(1234)
    for v in model.weights:  # the same start on every backend and process
        if not v.path.endswith("gamma"):
            v.assign(rng.normal(0.0, 0.05, tuple(v.shape)).astype("float32"))
    if compile:
        model.compile(optimizer=keras.optimizers.SGD(LEARNING_RATE))
    return model


def train(model, data):
    history = model.fit(data, epochs=STEPS, steps_per_epoch=1, verbose=0)
    return [float(x) for x in history.history["loss"]]


def weights(model):
    import keras

    return {v.path: keras.ops.convert_to_numpy(v.value).astype("float32") for v in model.weights}


def max_diff(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def run_single(result):
    model = build()
    result["ref_losses"] = train(model, dataset())
    return weights(model)


def mixed_precision_runs(result, policies, distributed):
    """For each policy: a single-device run and `distributed()` -> model."""
    import keras

    from keras_pretrain.distribute import set_mixed_precision

    for policy in policies:
        set_mixed_precision(policy)
        try:
            sub = {}
            ref = run_single(sub)
            model, losses = distributed()
            sub.update(
                losses=losses,
                weights_diff=max_diff(ref, weights(model)),
                loss_scaled=isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer),
                compute_dtype=model.backbone.compute_dtype,
                variable_dtype=model.backbone.variable_dtype,
            )
            result[policy] = sub
        finally:
            set_mixed_precision("float32")


def mode_tf_single(result):
    result["weights"] = run_single(result)
    result["losses"] = result["ref_losses"]


def mode_tf_mirrored(result):
    from keras_pretrain.distribute import configure_cpu_devices
    from keras_pretrain.distribute import get_distribution

    configure_cpu_devices(2)
    ref = run_single(result)
    dist = get_distribution("mirrored")
    result["num_replicas"] = dist.num_replicas
    with dist.scope():
        model = build()
    result["losses"] = train(model, dist.shard(dataset()))
    result["weights"] = weights(model)
    result["weights_diff"] = max_diff(ref, result["weights"])

    def distributed():
        with dist.scope():
            model = build()
        return model, train(model, dist.shard(dataset()))

    mixed_precision_runs(result, ("mixed_bfloat16", "mixed_float16"), distributed)


def mode_tf_multi_worker(result):
    from keras_pretrain.distribute import get_distribution

    dist = get_distribution("multi_worker")
    result.update(name=dist.name, num_replicas=dist.num_replicas, is_chief=dist.is_chief,
                  global_batch=dist.global_batch_size(GLOBAL_BATCH // dist.num_replicas))
    with dist.scope():
        model = build()
    result["losses"] = train(model, dist.shard(dataset()))
    result["weights"] = weights(model)


def mode_jax(result):
    import jax
    import keras

    from keras_pretrain.distribute import check_divisible
    from keras_pretrain.distribute import get_distribution

    result["devices"] = jax.device_count()
    ref = run_single(result)
    for name in ("data_parallel", "model_parallel"):
        dist = get_distribution(name, backbone="BertBackbone", model_parallel=2)
        with dist.scope():
            model = build()
        if name == "model_parallel":
            check_divisible(model, dist.distribution._layout_map)
        shardings = {}
        for v in model.weights:
            s = v.value.sharding
            shardings[v.path] = {"spec": [a if a is None or isinstance(a, str) else list(a) for a in s.spec],
                                 "replicated": bool(s.is_fully_replicated), "devices": len(s.device_set)}
        result[name] = {
            "num_replicas": dist.num_replicas,
            "losses": train(model, dist.shard(dataset())),
            "shardings": shardings,
            "data_layout": list(dist.distribution.get_data_layout((GLOBAL_BATCH, SEQ)).axes),
        }
        result[name]["weights_diff"] = max_diff(ref, weights(model))
        keras.distribution.set_distribution(None)
        if name == "model_parallel":  # the reference runs with no distribution set

            def distributed():
                with dist.scope():
                    model = build()
                    return model, train(model, dist.shard(dataset()))

            mixed_precision_runs(result[name], ("mixed_bfloat16",), distributed)


def mode_torch_ddp(result):
    import keras

    from keras_pretrain.distribute import get_distribution

    dist = get_distribution("ddp")
    result.update(rank=dist.worker_index, num_replicas=dist.num_replicas, is_chief=dist.is_chief)
    model = build()
    dist.prepare(model)
    local = train(model, dist.shard(dataset()))
    result["losses"] = [dist.all_reduce_mean(x) for x in local]
    result["weights"] = weights(model)
    if dist.is_chief:  # the single-process reference, after the distributed run
        result["weights_diff"] = max_diff(run_single(result), result["weights"])

    # mixed_float16 (loss scaling) under DDP; rank 0 also runs the reference,
    # rank 1 only the distributed part (it must take part in the all-reduces).
    from keras_pretrain.distribute import set_mixed_precision

    set_mixed_precision("mixed_float16")
    try:
        model = build()
        dist.prepare(model)
        local = train(model, dist.shard(dataset()))
        sub = {"losses": [dist.all_reduce_mean(x) for x in local],
               "loss_scaled": isinstance(model.optimizer, keras.optimizers.LossScaleOptimizer),
               "compute_dtype": model.backbone.compute_dtype}
        if dist.is_chief:
            sub["weights_diff"] = max_diff(run_single(sub), weights(model))
        result["mixed_float16"] = sub
    finally:
        set_mixed_precision("float32")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode")
    parser.add_argument("out")
    parser.add_argument("--policy", default=None)
    args = parser.parse_args()
    args.out = args.out.format(rank=os.environ.get("RANK", "0"))
    if args.policy:
        from keras_pretrain.distribute import set_mixed_precision

        set_mixed_precision(args.policy)
    result = {"mode": args.mode, "policy": args.policy}
    globals()[f"mode_{args.mode}"](result)
    final = result.pop("weights", None)
    if final is not None:
        np.savez(os.path.splitext(args.out)[0] + ".npz", **{k.replace("/", "|"): v for k, v in final.items()})
    with open(args.out, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    sys.exit(main())
