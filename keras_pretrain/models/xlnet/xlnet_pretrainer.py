"""XLNet pretraining task: permutation language modeling with segment recurrence."""

import keras
from keras import ops

from keras_pretrain.losses import masked_lm_loss
from keras_pretrain.models.task import PADDING_MASK
from keras_pretrain.models.task import SEGMENT_IDS
from keras_pretrain.models.task import TOKEN_IDS
from keras_pretrain.models.task import SubclassedTask
from keras_pretrain.models.task import feature
from keras_pretrain.models.task import ones_like
from keras_pretrain.models.xlnet.xlnet_backbone import RefusesInputMask
from keras_pretrain.optimizers import AdamW
from keras_pretrain.models.xlnet.xlnet_backbone import XLNetBackbone

# Aliases of the PLM features (ours, the original XLNet TFRecords, transformers' collator).
TARGET_IDS = ("target_ids", "target", "labels")
TARGET_WEIGHTS = ("target_weights", "target_mask")


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetLMHead(keras.layers.Layer):
    """Logits `x @ E^T + b` with the word embedding `E` (tied, as `lm_loss` of the reference).

    Args:
        token_embedding: the backbone's `ReversibleEmbedding`.
        vocabulary_size: int.
    """

    def __init__(self, token_embedding=None, vocabulary_size=None, **kwargs):
        super().__init__(**kwargs)
        self.token_embedding = token_embedding
        self.vocabulary_size = vocabulary_size

    def build(self, input_shape=None):
        self.bias = self.add_weight(shape=(self.vocabulary_size,), initializer="zeros", name="bias")
        self.built = True

    def call(self, x):
        return self.token_embedding(x, reverse=True) + self.bias

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.vocabulary_size,)

    def get_config(self):
        config = super().get_config()
        config["vocabulary_size"] = self.vocabulary_size
        return config


@keras.saving.register_keras_serializable(package="keras_pretrain")
class XLNetPretrainer(RefusesInputMask, SubclassedTask):
    """Permutation LM on an `XLNetBackbone`, trained with `fit`, with memories.

    The query stream at the `P` target positions goes through the tied output
    layer (`lm_loss` of the reference: transposed word embedding + bias); the
    loss is the cross-entropy averaged over real targets (`target_weights`).

    Segment recurrence: with `memory_batch_size` set (and the backbone's
    `mem_len > 0`), the task keeps the memories in two non-trainable
    variables, `memory` `(num_layers, B, mem_len, H)` and `memory_mask`
    `(B, mem_len)` (which slots hold real states; all 0 at the start). Every
    training call reads them, runs the backbone with them, and assigns the new
    memories (`stop_gradient`: no gradient flows into them), so row `b` of
    consecutive batches must continue the same text stream
    (`keras_pretrain.data.permutation.plm_stream_dataset` builds such batches;
    its batches must all have `memory_batch_size` rows: drop the remainder).
    This is the BatchNormalization pattern (state updated inside `call`) and
    works with `fit` on TensorFlow, JAX (Keras carries non-trainable variable
    updates out of the stateless step) and PyTorch. Only training calls
    (`training=True`) use and update the memories; `evaluate` and `predict`
    run each batch without memory. `reset_memory()` empties them.

    Args:
        backbone: an `XLNetBackbone`.
        preprocessor: optional preprocessor.
        memory_batch_size: int or None. Rows per batch of the training
            stream; None disables recurrence.

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask`, `perm_mask`
    `(B, T, T)`, `target_mapping` `(B, P, T)`. Outputs: dict with `plm`
    logits `(B, P, V)`. `fit()` accepts datasets of PLM feature dicts
    (`token_ids`/`input_ids`, `segment_ids`, `padding_mask` (1 = real token;
    `input_mask` is refused: 1 = padding in the original XLNet code),
    `perm_mask`, `target_mapping`, `target_ids`, `target_weights`).

    Why subclassed: the memory update inside `call` (see above).
    """

    backbone_cls = XLNetBackbone
    preprocessor_cls = None

    def __init__(self, backbone, preprocessor=None, memory_batch_size=None, **kwargs):
        kwargs.pop("compile", None)
        super().__init__(compile=False, **kwargs)
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.lm_head = XLNetLMHead(
            backbone.token_embedding, backbone.vocabulary_size, dtype=backbone.dtype_policy, name="lm_head"
        )
        self.lm_head.build()
        # === Config ===
        self.memory_batch_size = memory_batch_size
        mem_len = backbone.mem_len or 0
        self.memory = None
        self.memory_mask = None
        if memory_batch_size and mem_len <= 0:
            raise ValueError("memory_batch_size needs a backbone with mem_len > 0.")
        if memory_batch_size:
            self.memory = self.add_weight(
                shape=(backbone.num_layers, memory_batch_size, mem_len, backbone.hidden_dim),
                initializer="zeros",
                trainable=False,
                name="memory",
            )
            self.memory_mask = self.add_weight(
                shape=(memory_batch_size, mem_len), initializer="zeros", trainable=False, name="memory_mask"
            )
        self.built = True
        self.compile()

    def reset_memory(self):
        """Forgets the carried memories (e.g. before a new, unrelated stream)."""
        if self.memory is not None:
            self.memory.assign(ops.zeros(self.memory.shape, self.memory.dtype))
            self.memory_mask.assign(ops.zeros(self.memory_mask.shape, self.memory_mask.dtype))

    def call(self, inputs, training=None):
        x = {
            "token_ids": inputs["token_ids"],
            "segment_ids": inputs["segment_ids"],
            "padding_mask": inputs["padding_mask"],
            "perm_mask": inputs["perm_mask"],
            "target_mapping": inputs["target_mapping"],
        }
        recurrent = self.memory is not None and bool(training)
        if recurrent:
            x["mems"] = [self.memory[i] for i in range(self.backbone.num_layers)]
            x["memory_mask"] = self.memory_mask
        outputs = self.backbone(x, training=training, sequence_output=False)
        if recurrent:
            self.memory.assign(ops.cast(ops.stack(outputs["mems"], axis=0), self.memory.dtype))
            current = ops.cast(inputs["padding_mask"], self.memory_mask.dtype)
            reuse = self.backbone.reuse_len
            if reuse:
                current = current[:, :reuse]
            mask = ops.concatenate([ops.convert_to_tensor(self.memory_mask), current], axis=1)
            self.memory_mask.assign(mask[:, -self.backbone.mem_len :])
        return {"plm": self.lm_head(outputs["query_output"])}

    def compute_output_spec(self, inputs, training=None):
        t = inputs["target_mapping"]
        return {"plm": keras.KerasTensor((t.shape[0], t.shape[1], self.backbone.vocabulary_size), self.compute_dtype)}

    def _config(self):
        return {"memory_batch_size": self.memory_batch_size}

    def is_feature_dict(self, x):
        return "target_mapping" in x and any(name in x for name in TARGET_IDS)

    def adapt_features(self, features):
        x = {
            "token_ids": feature(features, *TOKEN_IDS),
            "segment_ids": feature(features, *SEGMENT_IDS),
            "padding_mask": feature(features, *PADDING_MASK),
            "perm_mask": features["perm_mask"],
            "target_mapping": features["target_mapping"],
        }
        targets = feature(features, *TARGET_IDS)
        weights = None
        for name in TARGET_WEIGHTS:
            if name in features:
                weights = features[name]
        if weights is None:
            weights = ones_like(targets)
        return x, {"plm": targets}, {"plm": weights}

    def default_compile_args(self):
        return {
            "optimizer": AdamW(1e-4, weight_decay=0.01),
            "loss": {"plm": masked_lm_loss()},
            "weighted_metrics": {"plm": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]},
        }
