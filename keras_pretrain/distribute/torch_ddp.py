"""Data-parallel training with the Keras torch backend under `torchrun`.

Keras 3's torch backend has no `DistributedDataParallel` inside `fit`, and
wrapping the model in `torch.nn.parallel.DistributedDataParallel` does not
help either: Keras' `train_step` calls the Keras model, not the wrapper, so
DDP's gradient hooks would never run. We therefore do the one thing DDP does
that matters for correctness, explicitly:

1. `prepare(model)` broadcasts every variable from rank 0 (all replicas start
   from the same weights), and
2. wraps `model.optimizer.apply` so that, after `loss.backward()` and before
   the update, the gradients are averaged over all processes with one
   `torch.distributed.all_reduce` (a single flat buffer).

Each process then applies the same averaged gradient to the same weights, so
the replicas stay identical: this is synchronous data parallelism, equal to
one replica on the global batch when every shard's loss is a mean over the
same number of examples/predictions. Gradients are reduced in one bucket
after the backward pass (no overlap of communication with the backward pass,
as real DDP does): simple and correct, not the fastest.

Launch: `torchrun --nproc_per_node=N -m recipes.pretrain --distribution ddp ...`
(gloo on CPU, nccl on GPUs).
"""

import os

from keras_pretrain.distribute.base import Distribution
from keras_pretrain.errors import ConfigError


class TorchDDP(Distribution):
    """One torchrun process (rank) of a synchronous data-parallel run.

    Example:
    ```python
    dist = get_distribution("ddp")        # reads RANK / WORLD_SIZE / MASTER_*
    model = BertPretrainer(BertBackbone(...)); model.compile()
    dist.prepare(model)                   # same weights, averaged gradients
    model.fit(dist.shard(dataset.batch(dist.global_batch_size(8))))
    ```
    """

    name = "ddp"

    @classmethod
    def from_environment(cls, backend=None, timeout_s=120):
        import datetime

        import torch
        import torch.distributed as dist

        missing = [k for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if k not in os.environ]
        if missing and not dist.is_initialized():
            raise ConfigError(
                f"ddp needs the torchrun environment; missing {missing} "
                "(launch with `torchrun --nproc_per_node=N ...`)."
            )
        if not dist.is_initialized():
            backend = backend or ("nccl" if torch.cuda.is_available() else "gloo")
            if backend == "nccl":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
            dist.init_process_group(backend, timeout=datetime.timedelta(seconds=timeout_s))
        world, rank = dist.get_world_size(), dist.get_rank()
        return cls(num_replicas=world, num_workers=world, worker_index=rank)

    def shard(self, dataset):
        """This rank's part of each global batch: examples rank, rank+N, ..."""
        import tensorflow as tf

        world, rank = self.num_workers, self.worker_index
        if world == 1:
            return dataset

        def take(*batch):
            sliced = tf.nest.map_structure(lambda t: t[rank::world], batch)
            return sliced[0] if len(sliced) == 1 else sliced

        return dataset.map(take)

    def prepare(self, model):
        """Broadcast weights from rank 0 and average gradients in `apply`.

        Call after `model.compile()` (it wraps `model.optimizer`).
        """
        if model.optimizer is None:
            raise ConfigError("TorchDDP.prepare(model) needs a compiled model (call model.compile() first).")
        broadcast_variables(model.weights)
        optimizer = model.optimizer
        if getattr(optimizer, "_ddp_wrapped", False):
            return model
        apply = optimizer.apply

        def apply_averaged(grads, trainable_variables=None):
            return apply(all_reduce_mean(grads), trainable_variables)

        object.__setattr__(optimizer, "apply", apply_averaged)
        object.__setattr__(optimizer, "_ddp_wrapped", True)
        return model

    def all_reduce_mean(self, value):
        """Mean over processes of a Python/numpy scalar (e.g. a logged loss)."""
        import torch
        import torch.distributed as dist

        tensor = torch.tensor(float(value), dtype=torch.float64)
        dist.all_reduce(tensor)
        return float(tensor) / self.num_workers


def broadcast_variables(variables, src=0):
    import torch
    import torch.distributed as dist

    with torch.no_grad():
        for variable in variables:
            value = variable.value.detach().clone()
            dist.broadcast(value, src)
            variable.assign(value)


def all_reduce_mean(grads):
    """Average gradient tensors over all processes (one flat all-reduce)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    present = [g for g in grads if g is not None]
    if not present or world == 1:
        return grads
    flat = torch.cat([g.reshape(-1).to(torch.float32) for g in present])
    dist.all_reduce(flat)
    flat /= world
    out, offset = [], 0
    for g in grads:
        if g is None:
            out.append(None)
            continue
        n = g.numel()
        out.append(flat[offset:offset + n].reshape(g.shape).to(g.dtype))
        offset += n
    return out
