"""Base class of every keras_pretrain task (pretrainers, classifiers, ...)."""

import os
import sys

import keras
import keras_hub
import numpy as np

from keras_pretrain.optimizers import AdamW

# Feature names accepted for each backbone input (ours first, then the
# original TFRecord / TF-Hub / Hugging Face names).
TOKEN_IDS = ("token_ids", "input_ids", "input_word_ids")
SEGMENT_IDS = ("segment_ids", "input_type_ids")
PADDING_MASK = ("padding_mask", "input_mask")
TASK_TYPE_IDS = ("task_type_ids", "task_ids")
INPUT_ALIASES = {
    "token_ids": TOKEN_IDS,
    "segment_ids": SEGMENT_IDS,
    "padding_mask": PADDING_MASK,
    "task_type_ids": TASK_TYPE_IDS,
}


class TaskMixin:
    """Accepting the original feature dicts; default compile arguments.

    Pretraining data comes as dicts named like the original TFRecord features
    (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`,
    `masked_lm_ids`, `masked_lm_weights`, `next_sentence_labels`, ...).
    Subclasses implement `adapt_features(features)` returning
    `(x, y, sample_weight)` so that `model.fit(dataset)` works directly on such
    a dataset, on every backend (keras-hub maps `preprocess_samples` over
    `tf.data` pipelines before they reach the backend).

    Subclasses also implement `_config()` (their extra constructor arguments)
    and `default_compile_args()`; `compile()` with no arguments uses those.

    `xla_on_cpu = True` (the masked-LM pretrainers) makes `jit_compile="auto"`
    compile with XLA on TensorFlow on CPU too (Keras turns XLA off on
    CPU-only machines; for these steps XLA measured 1.05-1.1x faster than
    TensorFlow's graph, with a compilation of a few seconds per shape).
    Under a `tf.distribute` strategy it stays off, as Keras has it, and the
    environment variable `KERAS_PRETRAIN_XLA_ON_CPU=0` turns it off too
    (the test suite does: compiling costs more than a few steps gain).
    Under a bfloat16 compute dtype (`mixed_bfloat16`) it stays off too:
    on an avx512_bf16 CPU, XLA:CPU's bfloat16 matmul ran at 272 GFLOP/s
    (2048^3), below its float32 (345), while TensorFlow's oneDNN bfloat16
    kernel ran at 690; the BERT-base MLM step without XLA took 1.88 s in
    bfloat16 against 2.66 s in float32 with XLA (benchmarks/RESULTS.md).
    """

    xla_on_cpu = False

    def _resolve_auto_jit_compile(self):
        if (
            self.xla_on_cpu
            and self.dtype_policy.compute_dtype != "bfloat16"
            and os.environ.get("KERAS_PRETRAIN_XLA_ON_CPU", "1") != "0"
            and keras.config.backend() == "tensorflow"
            and not getattr(self, "_distribute_strategy", None)
        ):
            # private API: Keras' own check of whether a model can be XLA-compiled (the one
            # `jit_compile="auto"` uses); no public function exposes it.
            from keras.src.trainers.trainer import model_supports_jit

            return model_supports_jit(self)
        return super()._resolve_auto_jit_compile()

    def _maybe_symbolic_build(self, iterator=None, data_batch=None):
        """Builds the model, its compiled loss and metrics and the optimizer before the step is traced.

        Keras' TensorFlow trainer does this (`_symbolic_build`) only under a `tf.distribute` strategy; without
        one it creates those variables inside the first trace of the train step, and `tf.function` then traces
        the step a second time. The JAX and PyTorch trainers always build first: the same variables, the same
        numbers, one trace. The RoBERTa-base pretraining step's first call took 19.2 s instead of 25.4 s (2
        threads, XLA). `fit` / `evaluate` build from the dataset's `element_spec`, not from a batch pulled from it
        (as Keras' other paths do), so a shuffled dataset's first epoch is the order it was before. If the
        symbolic build fails, Keras' deferred way runs.
        """
        if keras.config.backend() != "tensorflow" or getattr(self, "_distribute_strategy", None) is not None:
            return super()._maybe_symbolic_build(iterator=iterator, data_batch=data_batch)
        if not self._unbuilt_for_training():
            return  # built already (every call after the first): nothing to do
        if iterator is not None:  # fit / evaluate: the shapes and dtypes of the batches, none pulled
            # private API: the tf.data dataset of Keras' TensorFlow epoch iterator
            data_batch = getattr(getattr(iterator, "_distributed_dataset", None), "element_spec", None)
        if data_batch is None:
            return
        try:
            # private API: the build Keras' trainers run before tracing (the strategy path of this method)
            self._symbolic_build(data_batch=data_batch)
        except Exception:  # noqa: BLE001 - a spec or model it cannot build: built in the trace instead, as Keras
            pass

    def _unbuilt_for_training(self):
        """Whether `_symbolic_build` has something to build (Keras' own conditions in it, private attributes)."""
        compiled = (getattr(self, "_compile_loss", None), getattr(self, "_compile_metrics", None),
                    getattr(self, "optimizer", None))
        return (any(part is not None and not part.built for part in compiled)
                or not all(layer.built for layer in self._flatten_layers()))

    def takes_inputs_as_given(self, x):
        """`x` is already a dict of this model's inputs (ids, masks): the preprocessor, if any, is skipped,
        so a task saved with its preprocessor predicts from strings and from encoded inputs alike."""
        names = self.input if isinstance(getattr(self, "_inputs_struct", None), dict) else None
        return isinstance(x, dict) and bool(x) and names is not None and set(x) <= set(names)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        parent = getattr(super(), "preprocess_samples", None)
        if parent is not None and not (getattr(self, "preprocessor", None) is not None
                                       and self.takes_inputs_as_given(x)):
            x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
                parent(x, y, sample_weight)
            )
        if y is None and isinstance(x, dict) and self.is_feature_dict(x):
            x, y, sample_weight = self.adapt_features(x)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def train_on_batch(self, x, y=None, sample_weight=None, **kwargs):
        """`keras.Model.train_on_batch` that accepts dicts of targets.

        keras-hub's `PipelineModel.train_on_batch` converts `y` and
        `sample_weight` with one `convert_to_tensor`, which fails on a dict
        such as `{"mlm": ..., "nsp": ...}` (and on the original feature dicts,
        whose adapted targets are dicts); here every leaf is converted.
        """
        x, y, sample_weight = self._batch_tensors(x, y, sample_weight)
        return keras.Model.train_on_batch(
            self, x, y, sample_weight=sample_weight, **kwargs
        )

    def test_on_batch(self, x, y=None, sample_weight=None, **kwargs):
        """`keras.Model.test_on_batch` that accepts dicts of targets."""
        x, y, sample_weight = self._batch_tensors(x, y, sample_weight)
        return keras.Model.test_on_batch(
            self, x, y, sample_weight=sample_weight, **kwargs
        )

    def _batch_tensors(self, x, y, sample_weight):
        x, y, sample_weight = keras.utils.unpack_x_y_sample_weight(
            self.preprocess_samples(x, y, sample_weight)
        )
        convert = lambda s: keras.tree.map_structure(  # noqa: E731
            keras.ops.convert_to_tensor, s
        )
        return (
            convert(x),
            None if y is None else convert(y),
            None if sample_weight is None else convert(sample_weight),
        )

    def is_feature_dict(self, x):
        """Whether `x` is a dict of original features holding the labels."""
        return False

    def adapt_features(self, features):
        raise NotImplementedError

    def default_compile_args(self):
        return {}

    def compile(
        self,
        optimizer="auto",
        loss="auto",
        *,
        weighted_metrics="auto",
        metrics="auto",
        **kwargs,
    ):
        defaults = self.default_compile_args()
        if optimizer == "auto":
            optimizer = defaults.get("optimizer", AdamW(5e-5))
        if loss == "auto":
            loss = defaults.get("loss")
        if weighted_metrics == "auto":
            weighted_metrics = defaults.get("weighted_metrics")
        if metrics == "auto":
            metrics = defaults.get("metrics")
        super().compile(
            optimizer=optimizer,
            loss=loss,
            weighted_metrics=weighted_metrics,
            metrics=metrics,
            **kwargs,
        )

    def get_config(self):
        config = super().get_config()
        config.update(self._config())
        return config

    def _config(self):
        return {}


class Task(TaskMixin, keras_hub.models.Task):
    """A keras-hub `Task` (functional) that also accepts the original feature dicts."""


def _stored(name):
    """A read/write property kept in `_<name>` (None until set), as keras-hub's."""
    private = f"_{name}"
    return property(
        lambda self: getattr(self, private, None),
        lambda self, value: setattr(self, private, value),
    )


class SubclassedTask(TaskMixin, keras.Model):
    """Base of tasks that cannot be functional models (XLNet's memories).

    See `SubclassedBackbone` for why it does not derive from keras-hub's
    `Task`. It keeps the keras-hub conventions (`backbone`, `preprocessor`,
    default `compile()`, feature dicts in `fit` / `evaluate` / `predict`:
    `preprocess_samples` is mapped over `tf.data` datasets and applied to
    in-memory inputs).
    """

    def __init__(self, *args, compile=True, **kwargs):
        super().__init__(*args, **kwargs)
        if compile:
            self.compile()

    def __setattr__(self, name, value):
        is_property = isinstance(getattr(type(self), name, None), property)
        if keras.config.backend() == "torch" and is_property:
            return object.__setattr__(self, name, value)
        return super().__setattr__(name, value)

    backbone = _stored("backbone")
    preprocessor = _stored("preprocessor")

    def _preprocessed(self, x, y=None, sample_weight=None):
        tf = sys.modules.get("tensorflow")
        if tf is not None and isinstance(x, tf.data.Dataset):
            return x.map(self._map_batch), None, None
        return keras.utils.unpack_x_y_sample_weight(self.preprocess_samples(x, y, sample_weight))

    def _map_batch(self, *batch):
        batch = batch[0] if len(batch) == 1 else batch
        return self.preprocess_samples(*keras.utils.unpack_x_y_sample_weight(batch))

    def fit(self, x=None, y=None, sample_weight=None, **kwargs):
        x, y, sample_weight = self._preprocessed(x, y, sample_weight)
        return super().fit(x, y, sample_weight=sample_weight, **kwargs)

    def evaluate(self, x=None, y=None, sample_weight=None, **kwargs):
        x, y, sample_weight = self._preprocessed(x, y, sample_weight)
        return super().evaluate(x, y, sample_weight=sample_weight, **kwargs)

    def predict(self, x, **kwargs):
        x, _, _ = self._preprocessed(x)
        return super().predict(x, **kwargs)

    def get_config(self):
        config = {
            "backbone": keras.layers.serialize(self.backbone),
            "preprocessor": keras.layers.serialize(self.preprocessor),
            "name": self.name,
        }
        config.update(self._config())
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**with_layers(config))


def with_layers(config, keys=("backbone", "preprocessor")):
    """A copy of a config whose serialized layers under `keys` are deserialized (for `from_config` of a
    model or layer wrapping a backbone)."""
    config = dict(config)
    for key in keys:
        if isinstance(config.get(key), dict):
            config[key] = keras.layers.deserialize(config[key])
    return config


def feature(features, *names):
    """The first of `names` present in `features` (aliases of one input)."""
    for name in names:
        if name in features:
            return features[name]
    raise KeyError(
        f"Expected one of the features {names}; found {sorted(features)}."
    )


def ones_like(x, dtype="float32"):
    """`ones_like` that works inside a tf.data graph and on arrays alike.

    `adapt_features` runs inside `tf.data` pipelines (where backend ops cannot
    run on symbolic tensors) as well as on NumPy inputs.
    """
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(x, tf.Tensor):
        return tf.ones_like(x, dtype=dtype)
    return np.ones(np.shape(x), dtype=dtype)


def encoder_inputs(features):
    """Our three encoder inputs from a dict using any of the usual names."""
    return {
        "token_ids": feature(features, *TOKEN_IDS),
        "segment_ids": feature(features, *SEGMENT_IDS),
        "padding_mask": feature(features, *PADDING_MASK),
    }


def backbone_inputs(backbone, features):
    """The inputs `backbone` takes, picked from a feature dict (any alias).

    Missing `segment_ids` / `task_type_ids` default to zeros (one segment,
    task 0). Works inside tf.data graphs and on NumPy arrays.
    """
    return pick_inputs(backbone.input, features)


def pick_inputs(names, features):
    """The inputs `names` picked from a feature dict (any alias; missing `segment_ids` / `task_type_ids`
    are zeros). Works inside tf.data graphs and on NumPy arrays."""
    x = {}
    for name in names:
        aliases = INPUT_ALIASES.get(name, (name,))
        if any(a in features for a in aliases):
            x[name] = feature(features, *aliases)
        elif name in ("segment_ids", "task_type_ids"):
            x[name] = ones_like(feature(features, *TOKEN_IDS), "int32") * 0
        else:
            feature(features, *aliases)  # raises, naming what is missing
    return x
