"""`Distribution`: one process's view of a run, the base of every distribution.

Its own module so that `distribution.py` (which builds them) and the
backend-specific ones (`torch_ddp.py`) both import it without a cycle.
"""

import contextlib


class Distribution:
    """One process's view of a (possibly) distributed run (see `keras_pretrain.distribute.distribution`)."""

    name = "none"
    # The vocabulary size must divide by this (the "model" axis that shards
    # the embedding rows); recipes pad their vocabulary up to a multiple.
    vocabulary_multiple = 1

    def __init__(self, num_replicas=1, num_workers=1, worker_index=0):
        self.num_replicas = num_replicas
        self.num_workers = num_workers
        self.worker_index = worker_index

    @property
    def is_chief(self):
        return self.worker_index == 0

    def scope(self):
        return contextlib.nullcontext()

    def global_batch_size(self, per_replica):
        return int(per_replica) * self.num_replicas

    def shard(self, dataset):
        return dataset

    def __repr__(self):
        return (f"{type(self).__name__}(name={self.name!r}, num_replicas={self.num_replicas}, "
                f"num_workers={self.num_workers}, worker_index={self.worker_index})")
