"""BERT pretraining task: masked LM + next sentence prediction."""

import keras

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.masked_lm import MaskedLMAccuracy
from keras_pretrain.layers.masked_lm import MaskedLMHead
from keras_pretrain.losses import classification_loss
from keras_pretrain.losses import masked_lm_loss
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer
from keras_pretrain.models.task import Task
from keras_pretrain.models.task import feature
from keras_pretrain.models.task import ones_like
from keras_pretrain.optimizers import AdamW

# Aliases accepted for the three encoder inputs in a feature dict.
TOKEN_IDS = ("token_ids", "input_ids", "input_word_ids")
SEGMENT_IDS = ("segment_ids", "input_type_ids")
PADDING_MASK = ("padding_mask", "input_mask")


def encoder_inputs(features):
    """Our three encoder inputs from a dict using any of the usual names."""
    return {
        "token_ids": feature(features, *TOKEN_IDS),
        "segment_ids": feature(features, *SEGMENT_IDS),
        "padding_mask": feature(features, *PADDING_MASK),
    }




@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertPretrainer(Task):
    """Masked LM + next sentence prediction on top of a `BertBackbone`.

    The MLM head (dense + activation + LayerNorm, then the transposed word
    embeddings plus a bias; keras-hub's `MaskedLMHead` computed in 2-D, see
    `keras_pretrain.layers.masked_lm`) runs only at the gathered
    `masked_lm_positions`.
    The NSP head is a 2-way dense layer on the pooled output (0 = IsNext,
    1 = random next, as the original).

    `fit()` accepts datasets of the original feature dicts: `input_ids`,
    `input_mask`, `segment_ids`, `masked_lm_positions`, `masked_lm_ids`,
    `masked_lm_weights`, `next_sentence_labels` (our names `token_ids`,
    `padding_mask` work too). Losses: masked-LM cross-entropy averaged over
    real predictions, NSP cross-entropy; metrics: `mlm_accuracy`,
    `nsp_accuracy`.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: optional keras-hub preprocessor.
        sentence_head: bool. Whether to add the next-sentence head.

    Outputs: dict with `mlm` logits [B, P, V] and `nsp` logits [B, 2].

    On TensorFlow, `compile()` uses XLA on CPU as well (`xla_on_cpu`; pass
    `jit_compile=False` to turn it off).
    """

    xla_on_cpu = True
    last_block_at_predictions = True
    sentence_output = "nsp"
    sentence_label = "next_sentence_labels"

    def __init__(self, backbone, preprocessor=None, sentence_head=True, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        init = bert_kernel_initializer(backbone.initializer_range)
        self.masked_lm_head = MaskedLMHead(
            vocabulary_size=backbone.vocabulary_size,
            token_embedding=backbone.token_embedding,
            intermediate_activation=get_activation(backbone.activation),
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=init,
            dtype=backbone.dtype_policy,
            name="mlm_head",
        )
        self.sentence_head = None
        if sentence_head:
            self.sentence_head = keras.layers.Dense(
                2,
                kernel_initializer=bert_kernel_initializer(
                    backbone.initializer_range
                ),
                dtype=backbone.dtype_policy,
                name=f"{self.sentence_output}_head",
            )

        # === Functional Model ===
        inputs = dict(backbone.input)
        inputs["masked_lm_positions"] = keras.Input(
            shape=(None,), dtype="int32", name="masked_lm_positions"
        )
        outputs = backbone(
            {k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")}
        )
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
        self.use_sentence_head = sentence_head

    def _config(self):
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

    def adapt_features(self, features):
        x = encoder_inputs(features)
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
