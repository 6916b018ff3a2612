"""ELMo pretraining task: forward and backward word LMs sharing one softmax."""

import math

import keras
import numpy as np
from keras import ops

from keras_pretrain.models.task import Task
from keras_pretrain.models.elmo.elmo_backbone import ElmoBackbone

NEG_INF = -1e30


def log_uniform_probability(ids, vocabulary_size):
    """Q(k) = (log(k + 2) - log(k + 1)) / log(V + 1), TF's LogUniformSampler.

    Word ids must be sorted by decreasing frequency (Zipf's law).
    """
    ids = ops.cast(ids, "float32")
    return (ops.log(ids + 2.0) - ops.log(ids + 1.0)) / math.log(vocabulary_size + 1.0)


def log_uniform_sample(num_sampled, vocabulary_size, seed=None):
    """`num_sampled` ids drawn with replacement from the log-uniform Q.

    The inverse-CDF draw of TF's `LogUniformSampler`:
    `floor(exp(u * log(V + 1))) - 1` for u ~ U[0, 1).
    """
    u = keras.random.uniform((num_sampled,), seed=seed)
    ids = ops.floor(ops.exp(u * math.log(vocabulary_size + 1.0))) - 1.0
    return ops.clip(ops.cast(ids, "int32"), 0, vocabulary_size - 1)


def sampled_softmax_nll(hidden, labels, embeddings, bias, sampled, vocabulary_size):
    """Per-example sampled-softmax negative log-likelihood.

    The computation of `tf.nn.sampled_softmax_loss` (`subtract_log_q=True`,
    `remove_accidental_hits=True`) for candidates drawn with replacement by
    `log_uniform_sample` (TF's `log_uniform_candidate_sampler(unique=False)`):
    the expected count of a class is `num_sampled * Q(class)`; every logit
    gets `- log(expected count)`; a sampled class equal to the true one is
    removed. The samples are shared by the whole batch, as in TF.

    Args:
        hidden: (N, D). labels: (N,) int. embeddings: (V, D). bias: (V,).
        sampled: (S,) int candidate ids.

    Returns: (N,) float32.
    """
    num_sampled = ops.shape(sampled)[0]
    hidden = ops.cast(hidden, "float32")
    embeddings = ops.cast(embeddings, "float32")
    bias = ops.cast(bias, "float32")
    labels = ops.cast(labels, "int32")
    s = ops.cast(num_sampled, "float32")
    true_w = ops.take(embeddings, labels, axis=0)  # (N, D)
    true_logits = ops.sum(hidden * true_w, axis=-1) + ops.take(bias, labels)
    true_logits = true_logits - ops.log(s * log_uniform_probability(labels, vocabulary_size))
    sampled_w = ops.take(embeddings, sampled, axis=0)  # (S, D)
    sampled_logits = ops.matmul(hidden, ops.transpose(sampled_w)) + ops.take(bias, sampled)
    sampled_logits = sampled_logits - ops.log(
        s * log_uniform_probability(sampled, vocabulary_size)
    )
    hits = ops.equal(labels[:, None], ops.cast(sampled, "int32")[None, :])
    sampled_logits = ops.where(hits, NEG_INF, sampled_logits)
    logits = ops.concatenate([true_logits[:, None], sampled_logits], axis=-1)
    return ops.logsumexp(logits, axis=-1) - true_logits


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoSoftmax(keras.layers.Layer):
    """The word softmax shared by the forward and backward LMs.

    Holds bilm-tf's `softmax/W` (V, D) and `softmax/b` (V,). Given hidden
    states (B, W, D) and target ids (B, W) it returns the per-token negative
    log-likelihood (B, W): with the full softmax, or, while training with
    `num_sampled` set, with the sampled softmax of `sampled_softmax_nll`
    (fresh negatives at every call, from a seeded `keras.random` generator).
    Evaluation and prediction always use the full softmax, so the reported
    perplexity is the true one.

    Args:
        vocabulary_size: int. Word vocabulary V (ids sorted by frequency for
            the sampled softmax).
        num_sampled: int or None. Negatives per step (8192 in the original);
            None: full softmax in training too.
        seed: int or None. Seed of the negative sampler.
    """

    def __init__(self, vocabulary_size, num_sampled=None, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.num_sampled = num_sampled
        self.seed = seed
        self.seed_generator = keras.random.SeedGenerator(seed)

    def build(self, inputs_shape, labels_shape=None):
        dim = inputs_shape[-1]
        self.embeddings = self.add_weight(
            name="embeddings",
            shape=(self.vocabulary_size, dim),
            initializer=keras.initializers.RandomNormal(stddev=1.0 / math.sqrt(dim)),
        )
        self.bias = self.add_weight(
            name="bias", shape=(self.vocabulary_size,), initializer="zeros"
        )

    def logits(self, inputs):
        """Full-softmax logits (B, W, V) in float32."""
        x = ops.cast(inputs, "float32")
        w = ops.cast(self.embeddings, "float32")
        return ops.matmul(x, ops.transpose(w)) + ops.cast(self.bias, "float32")

    def call(self, inputs, labels, training=None):
        labels = ops.cast(labels, "int32")
        if training and self.num_sampled:
            shape = ops.shape(labels)
            sampled = log_uniform_sample(
                self.num_sampled, self.vocabulary_size, self.seed_generator
            )
            nll = sampled_softmax_nll(
                ops.reshape(inputs, (-1, ops.shape(inputs)[-1])),
                ops.reshape(labels, (-1,)),
                self.embeddings,
                self.bias,
                sampled,
                self.vocabulary_size,
            )
            return ops.reshape(nll, shape)
        logits = self.logits(inputs)
        true = ops.take_along_axis(logits, labels[:, :, None], axis=-1)[:, :, 0]
        return ops.logsumexp(logits, axis=-1) - true

    def compute_output_shape(self, inputs_shape, labels_shape):
        return tuple(labels_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.vocabulary_size,
                "num_sampled": self.num_sampled,
                "seed": self.seed,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class LanguageModelLoss(keras.losses.Loss):
    """Mean of per-token NLL (`y_pred`) over targets `y_true` != 0 (0 = pad)."""

    def __init__(self, name="lm_loss", **kwargs):
        super().__init__(name=name, **kwargs)

    def call(self, y_true, y_pred):
        mask = ops.cast(ops.not_equal(y_true, 0), y_pred.dtype)
        return ops.sum(y_pred * mask) / ops.maximum(ops.sum(mask), 1.0)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class Perplexity(keras.metrics.Metric):
    """exp(mean NLL) over all targets `y_true` != 0 seen so far."""

    def __init__(self, name="perplexity", **kwargs):
        super().__init__(name=name, **kwargs)
        self.total = self.add_variable(shape=(), initializer="zeros", name="total")
        self.count = self.add_variable(shape=(), initializer="zeros", name="count")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_pred = ops.cast(y_pred, "float32")
        mask = ops.cast(ops.not_equal(y_true, 0), "float32")
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, "float32")
        self.total.assign_add(ops.sum(y_pred * mask))
        self.count.assign_add(ops.sum(mask))

    def result(self):
        return ops.exp(self.total / ops.maximum(self.count, 1.0))


def lm_targets(token_ids):
    """Next and previous token ids (NumPy) of right-padded word ids (0 = pad).

    Forward target at position i is token i+1, backward target is token
    i-1; 0 (no target) past the ends and at padding.
    """
    token_ids = np.asarray(token_ids)
    zeros = np.zeros_like(token_ids[:, :1])
    next_ids = np.concatenate([token_ids[:, 1:], zeros], axis=1)
    previous_ids = np.concatenate([zeros, token_ids[:, :-1]], axis=1)
    real = token_ids != 0
    return next_ids * real, previous_ids * real


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoBiLM(Task):
    """ELMo's pretraining objective: a forward and a backward word LM.

    The forward LM reads the top forward LSTMP output at position i and
    predicts word i+1; the backward LM reads the top backward output at i
    and predicts word i-1 (bilm-tf's `next_token_id` / `next_token_id_reverse`).
    Both share the character encoder (in the backbone) and one `ElmoSoftmax`.
    The model outputs each direction's per-token negative log-likelihood
    (B, W); the losses average it over real targets (target id != 0) and the
    total loss is `forward + backward`. Metrics: `forward_perplexity`,
    `backward_perplexity` (true perplexities in `evaluate`; during `fit` with
    `num_sampled` they are those of the sampled softmax).

    `fit()` accepts datasets of feature dicts `char_ids` (B, W, 50),
    `next_token_ids`, `previous_token_ids` (B, W), as `keras_pretrain.data.words.elmo_pretraining_dataset`
    yields (`lm_targets` builds the targets from word ids).

    Args:
        backbone: an `ElmoBackbone`.
        vocabulary_size: int. Word vocabulary size (index 0 is padding and is
            never a target).
        num_sampled: int or None. Sampled softmax negatives in training.
        seed: int or None. Seed of the negative sampler.
        preprocessor: optional keras-hub preprocessor.

    Example:
    ```python
    lm = ElmoBiLM(ElmoBackbone.from_preset("elmo_small"), vocabulary_size=50000,
                  num_sampled=8192, seed=0)
    lm.fit(elmo_pretraining_dataset(paths, vocabulary, 20, 64, seed=0))
    ```

    Reference: https://arxiv.org/abs/1802.05365
    """

    backbone_cls = ElmoBackbone
    preprocessor_cls = None

    def __init__(
        self,
        backbone,
        vocabulary_size,
        num_sampled=None,
        seed=None,
        preprocessor=None,
        **kwargs,
    ):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.softmax = ElmoSoftmax(
            vocabulary_size,
            num_sampled=num_sampled,
            seed=seed,
            dtype=backbone.dtype_policy,
            name="softmax",
        )
        self.output_dropout = keras.layers.Dropout(
            backbone.dropout, dtype=backbone.dtype_policy, name="output_dropout"
        )

        # === Functional Model ===
        char_ids = keras.Input(
            shape=(None, backbone.max_characters), dtype="int32", name="char_ids"
        )
        next_ids = keras.Input(shape=(None,), dtype="int32", name="next_token_ids")
        previous_ids = keras.Input(
            shape=(None,), dtype="int32", name="previous_token_ids"
        )
        outputs = backbone({"char_ids": char_ids})
        forward = self.softmax(self.output_dropout(outputs["forward_output"]), next_ids)
        backward = self.softmax(
            self.output_dropout(outputs["backward_output"]), previous_ids
        )
        super().__init__(
            inputs={
                "char_ids": char_ids,
                "next_token_ids": next_ids,
                "previous_token_ids": previous_ids,
            },
            outputs={"forward": forward, "backward": backward},
            **kwargs,
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_sampled = num_sampled
        self.seed = seed

    def _config(self):
        return {
            "vocabulary_size": self.vocabulary_size,
            "num_sampled": self.num_sampled,
            "seed": self.seed,
        }

    def is_feature_dict(self, x):
        return "next_token_ids" in x and "previous_token_ids" in x

    def adapt_features(self, features):
        x = {
            "char_ids": features["char_ids"],
            "next_token_ids": features["next_token_ids"],
            "previous_token_ids": features["previous_token_ids"],
        }
        y = {
            "forward": features["next_token_ids"],
            "backward": features["previous_token_ids"],
        }
        return x, y, None

    def default_compile_args(self):
        return {
            "optimizer": keras.optimizers.Adagrad(0.2, initial_accumulator_value=1.0, clipnorm=10.0),
            "loss": {
                "forward": LanguageModelLoss(name="forward_loss"),
                "backward": LanguageModelLoss(name="backward_loss"),
            },
            "metrics": {
                "forward": [Perplexity()],
                "backward": [Perplexity()],
            },
        }

    def lm_logits(self, char_ids):
        """Full-softmax logits of both directions: (forward, backward), (B, W, V)."""
        outputs = self.backbone({"char_ids": char_ids})
        return (
            self.softmax.logits(outputs["forward_output"]),
            self.softmax.logits(outputs["backward_output"]),
        )
