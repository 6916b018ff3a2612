"""Choosing and building a distribution for the current Keras backend.

`get_distribution(name)` returns a `Distribution` with one interface on the
three backends:

- `scope()`: enter it to build and compile the model (a no-op where the
  backend needs none);
- `num_replicas`: model replicas training in sync (the data-parallel width);
- `global_batch_size(per_replica)`: the batch size to batch datasets with;
- `shard(dataset)`: a `tf.data` dataset batched with the *global* batch size
  -> what this worker must feed to `fit`;
- `is_chief`: whether this process writes checkpoints and exports.

Names: `"tensorflow"` backend: `"mirrored"` (`tf.distribute.MirroredStrategy`
over GPUs, or logical CPU devices from `configure_cpu_devices`),
`"multi_worker"` (`MultiWorkerMirroredStrategy` from `TF_CONFIG`), `"tpu"`
(`TPUStrategy`); `"jax"`: `"data_parallel"` / `"model_parallel"`
(`keras.distribution`); `"torch"`: `"ddp"` (torchrun + gloo/nccl, see
`torch_ddp.py`); everywhere: `"auto"` (picks from the environment and the
devices) and `"none"` (one device).
"""

import json
import os

import keras

from keras_pretrain.distribute.base import Distribution
from keras_pretrain.distribute.torch_ddp import TorchDDP
from keras_pretrain.errors import ConfigError

NAMES = ("auto", "none", "mirrored", "multi_worker", "tpu", "data_parallel", "model_parallel", "ddp")
BACKEND_OF = {
    "mirrored": "tensorflow", "multi_worker": "tensorflow", "tpu": "tensorflow",
    "data_parallel": "jax", "model_parallel": "jax", "ddp": "torch",
}
TPU_TIMEOUT = 30.0
# Seconds the multi-worker start waits for every worker of TF_CONFIG (env
# KERAS_PRETRAIN_WORKER_TIMEOUT overrides it).
WORKER_TIMEOUT = 120.0


def configure_cpu_devices(n):
    """Split the host CPU into `n` logical TensorFlow devices.

    Must run before TensorFlow initialises its devices (before any op);
    raises a ConfigError otherwise. Lets `MirroredStrategy` run `n` replicas
    on one CPU (tests, debugging).
    """
    import tensorflow as tf

    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration() for _ in range(n)]
        )
    except RuntimeError as error:
        existing = len(tf.config.list_logical_devices("CPU"))
        if existing == n:
            return
        raise ConfigError(
            f"configure_cpu_devices({n}) must run before TensorFlow initialises "
            f"its devices; found {existing} logical CPU device(s) already set up ({error})."
        ) from None


class TFDistribution(Distribution):
    """A `tf.distribute.Strategy`; Keras' `fit` distributes the batches.

    Datasets are batched with the global batch size; `shard` sets the
    `DATA` auto-shard policy: each worker keeps its slice of every global batch
    (works for any source, not only files, and keeps the same order of
    examples as a single replica).
    """

    def __init__(self, name, strategy, num_workers=1, worker_index=0):
        super().__init__(strategy.num_replicas_in_sync, num_workers, worker_index)
        self.name = name
        self.strategy = strategy

    def scope(self):
        return self.strategy.scope()

    def shard(self, dataset):
        import tensorflow as tf

        options = tf.data.Options()
        options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
        return dataset.with_options(options)


class KerasDistribution(Distribution):
    """A `keras.distribution` (JAX) set globally by `get_distribution`.

    Keras' `fit` places each global batch over the batch axis of the mesh
    (and, with several processes, `distribute_dataset` shards it per process),
    so `shard` leaves the dataset to Keras.
    """

    def __init__(self, name, distribution):
        import jax

        mesh = distribution.device_mesh
        batch_axis = mesh.axis_names.index(distribution.batch_dim_name)
        super().__init__(mesh.shape[batch_axis], jax.process_count(), jax.process_index())
        if "model" in mesh.axis_names:
            self.vocabulary_multiple = mesh.shape[mesh.axis_names.index("model")]
        self.name = name
        self.distribution = distribution

    def scope(self):
        return self.distribution.scope()


def get_distribution(name="auto", *, backbone="BertBackbone", model_parallel=2, devices=None, tpu=None,
                     tpu_timeout=TPU_TIMEOUT, set_global=True):
    """The distribution named `name` for the current Keras backend.

    Args:
        name: one of `NAMES`. `"auto"`: TensorFlow: `"tpu"` when a TPU is
            configured (`TPU_NAME`), `"mirrored"` with 2+ GPUs (never
            `"multi_worker"`: a `TF_CONFIG` left in the environment must not
            turn a plain run into one that waits for other machines; name
            `"multi_worker"` explicitly); JAX: `"data_parallel"`
            with 2+ devices; torch: `"ddp"` when torchrun set `WORLD_SIZE` > 1;
            otherwise `"none"`.
        backbone: backbone (instance, class or class name) whose layout map
            `"model_parallel"` uses.
        model_parallel: size of the `"model"` mesh axis (`"model_parallel"`);
            the `"batch"` axis gets the remaining devices.
        devices: explicit device list (TF device names / JAX devices).
        tpu: TPU name or address for `TPUClusterResolver` (`"local"` on a
            TPU VM); default: `TPU_NAME`.
        tpu_timeout: seconds allowed to reach the TPU before a ConfigError.
        set_global: JAX: also `keras.distribution.set_distribution(...)`.

    Raises:
        ConfigError: unknown name, a name of another backend, no TPU, bad mesh.

    Example:
    ```python
    dist = get_distribution("auto")
    with dist.scope():
        model = BertPretrainer(BertBackbone(...))
        model.compile()
    model.fit(dist.shard(dataset.batch(dist.global_batch_size(32))))
    ```
    """
    backend = keras.config.backend()
    if name not in NAMES:
        raise ConfigError(f"Unknown distribution {name!r}; expected one of {NAMES}.")
    if name == "auto":
        name = _auto_name(backend, tpu)
    if name == "none":
        return Distribution()
    if BACKEND_OF[name] != backend:
        raise ConfigError(
            f"Distribution {name!r} needs the {BACKEND_OF[name]} backend; the Keras backend is "
            f"{backend!r} (set KERAS_BACKEND={BACKEND_OF[name]})."
        )
    if name == "mirrored":
        return _mirrored(devices)
    if name == "multi_worker":
        return _multi_worker()
    if name == "tpu":
        return _tpu(tpu, tpu_timeout)
    if name in ("data_parallel", "model_parallel"):
        return _keras_distribution(name, backbone, model_parallel, devices, set_global)
    return TorchDDP.from_environment()


def _auto_name(backend, tpu):
    if backend == "tensorflow":
        import tensorflow as tf

        if tpu or os.environ.get("TPU_NAME"):
            return "tpu"
        if len(_tf_config().get("cluster", {}).get("worker", [])) > 1:
            import logging

            logging.getLogger(__name__).warning(
                "TF_CONFIG names several workers, but distribution 'auto' runs on this machine only; "
                "pass 'multi_worker' (--distribution multi_worker) to train with them.")
        if len(tf.config.list_logical_devices("GPU")) > 1:
            return "mirrored"
    elif backend == "jax":
        import jax

        if jax.device_count() > 1:
            return "data_parallel"
    elif backend == "torch" and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return "ddp"
    return "none"


def _tf_config():
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return {}
    try:
        return json.loads(raw)
    except json.JSONDecodeError as error:
        raise ConfigError(f"TF_CONFIG is not valid JSON ({error}): {raw[:200]!r}") from None


def _mirrored(devices):
    import tensorflow as tf

    if devices is None:
        devices = [d.name for d in tf.config.list_logical_devices("GPU")]
        if not devices:
            devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    return TFDistribution("mirrored", tf.distribute.MirroredStrategy(devices))


def _multi_worker():
    import tensorflow as tf

    config = _tf_config()
    workers = config.get("cluster", {}).get("worker", [])
    task = config.get("task", {})
    if not workers or task.get("type") not in ("worker", "chief") or "index" not in task:
        raise ConfigError(
            "multi_worker needs TF_CONFIG with cluster.worker (a list of host:port) and "
            f"task {{type: worker, index: i}}; found TF_CONFIG={os.environ.get('TF_CONFIG')!r}."
        )
    chief = "chief" in config["cluster"]
    peers = list(config["cluster"].get("chief", [])) + list(workers)
    me = (config["cluster"]["chief"] if task["type"] == "chief" else workers)[task["index"]]
    _wait_for_peers(me, [p for p in peers if p != me], _worker_timeout())
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    _reduce_nested_values(strategy)
    index = task["index"] + (1 if chief and task["type"] == "worker" else 0)
    return TFDistribution("multi_worker", strategy, len(workers) + chief, index)


def _worker_timeout():
    raw = os.environ.get("KERAS_PRETRAIN_WORKER_TIMEOUT")
    try:
        return float(raw) if raw else WORKER_TIMEOUT
    except ValueError:
        raise ConfigError(f"KERAS_PRETRAIN_WORKER_TIMEOUT={raw!r} is not a number of seconds.") from None


def _wait_for_peers(me, peers, timeout):
    """Wait until every other worker of TF_CONFIG accepts connections, or
    raise a ConfigError naming those that did not within `timeout` seconds.

    `MultiWorkerMirroredStrategy()` blocks for ever (deaf to SIGTERM) when a
    worker never comes, so this runs first: meanwhile a plain socket listens
    on this worker's own port for the others' checks; it closes just before
    TensorFlow's server takes the port (a peer checking in between retries).
    """
    import socket
    import threading
    import time

    port = int(me.rpartition(":")[2])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(("", port))
    except OSError as error:
        listener.close()
        raise ConfigError(f"TF_CONFIG: this worker's address {me} cannot be used ({error}).") from None
    listener.listen(16)
    listener.settimeout(0.2)
    stop = threading.Event()

    def answer():
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                continue
            with connection:  # the peer closes first (no TIME_WAIT on this port)
                connection.settimeout(2.0)
                try:
                    connection.recv(1)
                except OSError:
                    pass

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    waiting, deadline = set(peers), time.monotonic() + timeout
    try:
        while waiting and time.monotonic() < deadline:
            for peer in sorted(waiting):
                host, _, peer_port = peer.rpartition(":")
                try:
                    socket.create_connection((host, int(peer_port)), timeout=1.0).close()
                    waiting.discard(peer)
                except OSError:
                    pass
            if waiting:
                time.sleep(0.5)
        # Let the others finish their checks of this worker before its port changes hands.
        time.sleep(1.0 if not waiting else 0)
    finally:
        stop.set()
        thread.join()
        listener.close()
    if waiting:
        raise ConfigError(
            f"multi_worker: cannot reach the worker(s) {sorted(waiting)} of TF_CONFIG within {timeout:.0f}s "
            "(start every worker listed in TF_CONFIG, check host:port and firewalls; "
            "KERAS_PRETRAIN_WORKER_TIMEOUT sets the wait in seconds)."
        )


def _reduce_nested_values(strategy):
    """Let `strategy.reduce` take nested structures, as MirroredStrategy's does.

    Keras 3 (`_maybe_symbolic_build` in its TensorFlow trainer) reduces the
    first distributed batch, a dict, with `strategy.reduce("MEAN", batch)`;
    `MultiWorkerMirroredStrategy.reduce` accepts only single values, so
    `fit` fails with "Attempt to convert a value ({'token_ids': PerReplica...".
    Reducing leaf by leaf gives what Keras expects (it only reads shapes).
    Keras also reduces the scalar logs (loss, metrics) with `axis=0`, which
    fails on scalars ("Invalid reduction dimension 0 for input with 0
    dimensions"): scalars are reduced across replicas only (`axis=None`).
    """
    import tensorflow as tf

    reduce = strategy.reduce

    def leaf(reduce_op, v, axis):
        if axis is not None and strategy.experimental_local_results(v)[0].shape.rank == 0:
            axis = None
        return reduce(reduce_op, v, axis)

    def nested_reduce(reduce_op, value, axis=None):
        return tf.nest.map_structure(lambda v: leaf(reduce_op, v, axis), value)

    strategy.reduce = nested_reduce


def _tpu(tpu, timeout):
    """A TPUStrategy, or a ConfigError within `timeout` seconds, never a hang.

    TensorFlow's TPU connection holds the interpreter while it waits (a
    watchdog thread could not even report), so everything that could block is
    checked first with plain sockets: a local TPU needs TPU device files, a
    `grpc://host:port` address must accept a connection, a Cloud TPU name
    needs the Google Cloud metadata server.
    """
    import tensorflow as tf

    tpu = tpu or os.environ.get("TPU_NAME")
    local_devices = tf.config.list_logical_devices("TPU") or _has_tpu_device_files()
    if not tpu:
        if not local_devices:
            raise ConfigError(
                "No TPU found: no TPU devices, no /dev/accel* or /dev/vfio devices and no TPU name "
                "(pass tpu=... or set TPU_NAME; use tpu='local' on a TPU VM)."
            )
        tpu = "local"
    if tpu == "local" and not local_devices:
        raise ConfigError("tpu='local' but this machine has no TPU devices (/dev/accel*, /dev/vfio).")
    if tpu.startswith("grpc://"):
        host, _, port = tpu[len("grpc://"):].rpartition(":")
        _require_reachable(host, int(port), timeout, f"the TPU worker {tpu}")
    elif tpu != "local":
        _require_reachable("metadata.google.internal", 80, min(timeout, 5.0),
                           f"the Google Cloud metadata server (needed to resolve the Cloud TPU name {tpu!r})")
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu)
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        return TFDistribution("tpu", tf.distribute.TPUStrategy(resolver))
    except Exception as error:  # noqa: BLE001 - reported as a ConfigError
        raise ConfigError(
            f"Could not connect to the TPU {tpu!r}: {type(error).__name__}: "
            f"{str(error).splitlines()[0][:300] if str(error) else ''}"
        ) from None


def _require_reachable(host, port, timeout, what):
    import socket

    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as error:
        raise ConfigError(f"Cannot reach {what} at {host}:{port} within {timeout:.0f}s ({error}).") from None


def _has_tpu_device_files():
    import glob

    return bool(glob.glob("/dev/accel*") or glob.glob("/dev/vfio/[0-9]*"))


def _keras_distribution(name, backbone, model_parallel, devices, set_global):
    from keras_pretrain.distribute.layouts import get_layout_map

    devices = devices or keras.distribution.list_devices()
    if name == "data_parallel":
        distribution = keras.distribution.DataParallel(devices=devices)
    else:
        if model_parallel < 1 or len(devices) % model_parallel:
            raise ConfigError(
                f"model_parallel={model_parallel} must divide the number of devices ({len(devices)})."
            )
        mesh = keras.distribution.DeviceMesh(
            (len(devices) // model_parallel, model_parallel), ["batch", "model"], devices
        )
        distribution = keras.distribution.ModelParallel(
            layout_map=get_layout_map(mesh, backbone), batch_dim_name="batch"
        )
    if set_global:
        keras.distribution.set_distribution(distribution)
    return KerasDistribution(name, distribution)
