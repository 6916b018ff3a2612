"""ELMo vectors for downstream models: a scalar mix of the biLM layers."""

import keras

from keras_pretrain.models.elmo.elmo_layers import ScalarMix
from keras_pretrain.models.task import with_layers


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoEmbedder(keras.layers.Layer):
    """`ELMo_k = gamma * sum_j s_j h_kj` from a pretrained `ElmoBackbone`.

    Runs the backbone on character ids and mixes its L+1 layer outputs
    (B, W, 2D) with a `ScalarMix` (softmax-normalised weights, scale gamma,
    optional layer normalisation, zero at padding). The mix is always
    trainable; the backbone is frozen by default (`trainable_backbone=False`,
    the feature-based use of the paper) or fine-tuned with it.

    Sequences built by `character_ids(..., add_sentence_boundaries=True)`
    keep their `<S>` / `</S>` positions (first and last real token).

    With a stateful backbone (`ElmoBackbone(stateful=True)`, bilm-tf's
    inference) the LSTM states carry over from one call to the next;
    `reset_states()` zeros them.

    Args:
        backbone: an `ElmoBackbone`.
        trainable_backbone: bool. Whether the biLM weights are trained.
        layer_norm: bool. ScalarMix layer normalisation.
        dropout: float. Dropout on the mixed vectors (training only).

    Inputs: int char ids (B, W, 50). Output: (B, W, 2D).

    Example:
    ```python
    char_ids = keras.Input((None, 50), dtype="int32")
    vectors = ElmoEmbedder(backbone)(char_ids)
    logits = keras.layers.Dense(num_tags)(vectors)
    ```
    """

    def __init__(
        self,
        backbone,
        trainable_backbone=False,
        layer_norm=False,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.trainable_backbone = trainable_backbone
        self.backbone.trainable = trainable_backbone
        self.layer_norm = layer_norm
        self.dropout = dropout
        self.scalar_mix = ScalarMix(
            backbone.num_layers + 1,
            layer_norm=layer_norm,
            dtype=self.dtype_policy,
            name="scalar_mix",
        )
        self.mix_dropout = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        dim = 2 * self.backbone.hidden_dim
        shape = tuple(input_shape[:2]) + (dim,)
        self.scalar_mix.build([shape] * (self.backbone.num_layers + 1))

    def call(self, char_ids, training=None):
        outputs = self.backbone({"char_ids": char_ids}, training=training)
        mixed = self.scalar_mix(
            outputs["encoder_outputs"], mask=outputs["padding_mask"]
        )
        return self.mix_dropout(mixed, training=training)

    def reset_states(self):
        """Zeros the carried LSTM states of a stateful backbone (see `ElmoBackbone`)."""
        self.backbone.reset_states()

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:2]) + (2 * self.backbone.hidden_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "backbone": keras.layers.serialize(self.backbone),
                "trainable_backbone": self.trainable_backbone,
                "layer_norm": self.layer_norm,
                "dropout": self.dropout,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**with_layers(config))
