"""The masked-LM pretrainer base: BERT, ALBERT, RoBERTa, DistilBERT and ERNIE specialise it.

`MaskedLMPretrainer` is the whole pretraining network of the encoder families:
the masked-LM head at the gathered `masked_lm_positions`, an optional 2-way
sentence head (NSP, SOP) on `pooled_output`, the last block run only at the
predictions, the feature-dict handling and the compile defaults. A family's
pretrainer writes only its difference (class attributes and, where needed, a
hook: `mlm_activation`, `backbone_features`, `default_compile_args`).
"""

import keras
import keras_hub

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.masked_lm import MaskedLMAccuracy
from keras_pretrain.layers.masked_lm import MaskedLMHead
from keras_pretrain.losses import classification_loss
from keras_pretrain.losses import masked_lm_loss
from keras_pretrain.models.task import TaskMixin
from keras_pretrain.models.task import backbone_inputs
from keras_pretrain.models.task import ones_like
from keras_pretrain.optimizers import AdamW


def kernel_initializer(backbone):
    """BERT's truncated normal, with the backbone's `initializer_range`."""
    stddev = getattr(backbone, "initializer_range", 0.02)
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class MaskedLMPretrainer(TaskMixin, keras_hub.models.MaskedLM):
    """Masked LM (+ optional sentence head) over any encoder backbone.

    The MLM head (dense + activation + LayerNorm, then the transposed word
    embeddings plus a bias; keras-hub's `MaskedLMHead` computed in 2-D, see
    `keras_pretrain.layers.masked_lm`) runs only at the gathered
    `masked_lm_positions`. The optional sentence head is a 2-way dense layer
    on the pooled output, named after `sentence_output` (`nsp`: 0 = IsNext,
    1 = random next, as the original BERT; `sop` for ALBERT). The graph takes
    whatever inputs the backbone declares (RoBERTa and DistilBERT have no
    segment ids, ERNIE may have task ids) plus `masked_lm_positions`.

    `fit()` accepts datasets of the original feature dicts: `input_ids`,
    `input_mask`, `segment_ids`, `masked_lm_positions`, `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels` (our names `token_ids`,
    `padding_mask` work too; entries the model does not use are ignored).
    Losses: masked-LM cross-entropy averaged over real predictions, sentence
    cross-entropy; metrics: `mlm_accuracy` (and `nsp_accuracy` / ...).

    Args:
        backbone: an encoder backbone with `token_embedding`,
            `vocabulary_size`, `activation`, `layer_norm_epsilon`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool. Add a 2-way head on `pooled_output` (the
            backbone must have one); default `default_sentence_head`.
            Ignored (always off) where `sentence_head_option` is False.

    Outputs: dict with `mlm` logits [B, P, V] (and the sentence logits [B, 2]).

    On TensorFlow, `compile()` uses XLA on CPU as well (`xla_on_cpu`; pass
    `jit_compile=False` to turn it off).

    What a family may set:
        sentence_output: name of the sentence head's output (`nsp`, `sop`).
        sentence_label: the feature holding its labels.
        default_sentence_head: bool, the default of `sentence_head`.
        sentence_head_option: False for MLM-only families (no
            `sentence_head` argument in their config).
        mlm_activation(backbone): the activation of the MLM transform.
        backbone_features(features): the backbone's inputs from a feature dict.
    """

    preprocessor_cls = None  # keras-hub's `from_preset` builds no preprocessor for it

    xla_on_cpu = True
    last_block_at_predictions = True
    sentence_output = "nsp"
    sentence_label = "next_sentence_labels"
    default_sentence_head = False
    sentence_head_option = True

    def mlm_activation(self, backbone):
        """The activation of the MLM head's transform (the backbone's)."""
        return backbone.activation

    def __init__(self, backbone, preprocessor=None, sentence_head=None, **kwargs):
        if not self.sentence_head_option:
            sentence_head = False
        elif sentence_head is None:
            sentence_head = self.default_sentence_head
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.masked_lm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            token_embedding=backbone.token_embedding,
            intermediate_activation=get_activation(self.mlm_activation(backbone)),
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=kernel_initializer(backbone),
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )
        self.sentence_head = None
        if sentence_head:
            self.sentence_head = keras.layers.Dense(
                2,
                kernel_initializer=kernel_initializer(backbone),
                dtype=backbone.dtype_policy,
                name=f"{self.sentence_output}_head",
            )

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["masked_lm_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_lm_positions"
        )
        outputs = backbone({k: inputs[k] for k in backbone.input})
        results = {
            "mlm": self.masked_lm_head(
                outputs["sequence_output"],
                mask_positions=inputs["masked_lm_positions"],
            )
        }
        if self.sentence_head is not None:
            results[self.sentence_output] = self.sentence_head(
                outputs["pooled_output"]
            )
        super().__init__(inputs=inputs, outputs=results, **kwargs)

        # === Config ===
        self.use_sentence_head = bool(sentence_head)

    def _config(self):
        if not self.sentence_head_option:
            return {}
        return {"sentence_head": self.use_sentence_head}

    def call(self, inputs, training=None, mask=None):
        """The functional graph's outputs, with the last block at the predictions.

        Only the hidden states at `masked_lm_positions` (and position 0 for
        the sentence head) reach the outputs, so the backbone's last block
        runs only there (`Backbone.sequence_output_at`): the same values and
        gradients as the graph (float32 rounding apart), with roughly
        `(1 - P / T) * 10 / 12` of one block's matmuls skipped. Set
        `last_block_at_predictions = False` on the instance to run the whole
        graph instead.
        """
        backbone = self.backbone
        if (
            not self.last_block_at_predictions
            or any(m is not None for m in keras.tree.flatten(mask))
            or not getattr(backbone, "supports_sequence_output_at", False)
        ):
            return super().call(inputs, training=training, mask=mask)
        inputs = keras.tree.pack_sequence_as(
            self._inputs_struct, self._standardize_inputs(inputs)
        )
        sequence, pooled = backbone.sequence_output_at(
            {name: inputs[name] for name in backbone.input},
            inputs["masked_lm_positions"],
            pooled=self.sentence_head is not None,
        )
        results = {"mlm": self.masked_lm_head(sequence)}
        if self.sentence_head is not None:
            results[self.sentence_output] = self.sentence_head(pooled)
        return results

    def is_feature_dict(self, x):
        return "masked_lm_ids" in x

    def backbone_features(self, features):
        """The backbone's inputs from a feature dict (see `backbone_inputs`)."""
        return backbone_inputs(self.backbone, features)

    def adapt_features(self, features):
        x = self.backbone_features(features)
        x["masked_lm_positions"] = features["masked_lm_positions"]
        y = {"mlm": features["masked_lm_ids"]}
        weights = features.get("masked_lm_weights")
        if weights is None:
            weights = ones_like(features["masked_lm_ids"])
        sample_weight = {"mlm": weights}
        if self.sentence_head is not None:
            # [B] or [B, 1] (as the original TFRecords store them).
            labels = features[self.sentence_label]
            y[self.sentence_output] = labels
            sample_weight[self.sentence_output] = ones_like(labels)
        return x, y, sample_weight

    def default_compile_args(self):
        # The values of keras' SparseCategoricalCrossentropy(from_logits=True,
        # reduction="mean_with_sample_weight") and SparseCategoricalAccuracy,
        # with fewer passes over the [B, P, V] logits.
        loss = {"mlm": masked_lm_loss()}
        metrics = {"mlm": [MaskedLMAccuracy(name="accuracy")]}
        if self.sentence_head is not None:
            name = self.sentence_output
            loss[name] = classification_loss(f"{name}_loss")
            metrics[name] = [
                keras.metrics.SparseCategoricalAccuracy(name="accuracy")
            ]
        return {
            "optimizer": AdamW(1e-4, weight_decay=0.01),
            "loss": loss,
            "weighted_metrics": metrics,
        }
