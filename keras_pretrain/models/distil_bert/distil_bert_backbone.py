"""DistilBERT backbone: BERT's encoder without token types or pooler."""

import keras

from keras_pretrain.layers.initializers import kernel_initializer
from keras_pretrain.models.backbone import TransformerBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.backbone import transformer_blocks


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertBackbone(TransformerBackbone):
    """The DistilBERT encoder network (Sanh et al., 2019).

    Token and learned position embeddings (positions `0..T-1`, keras-hub
    `PositionEmbedding`; `sinusoidal_pos_embds=False` as in the released
    models), LayerNorm (eps 1e-12), then `num_layers` post-LN transformer
    blocks (keras-hub `TransformerEncoder`, exactly DistilBERT's
    `TransformerBlock`). No token-type embeddings and no pooler: the
    classification heads read `sequence_output[:, 0]`.

    Args:
        vocabulary_size: int.
        num_layers: int. Transformer blocks (6 in distilbert-base).
        num_heads: int.
        hidden_dim: int. (`dim` in the Hugging Face config.)
        intermediate_dim: int. (`hidden_dim` in the Hugging Face config.)
        dropout: float.
        max_sequence_length: int. Learned positions.
        activation: str. Our activation name ("gelu" = exact erf form).
        layer_norm_epsilon: float (1e-12).
        initializer_range: float.
        dtype: Keras dtype policy.

    Inputs: dict with `token_ids` and `padding_mask` (int [B, T]).
    Outputs: dict with `sequence_output` [B, T, H] and `encoder_outputs`.

    Example:
    ```python
    backbone = DistilBertBackbone.from_preset("distil_bert_base_en_uncased")
    backbone({"token_ids": np.ones((1, 8), "int32"),
              "padding_mask": np.ones((1, 8), "int32")})
    ```

    Reference: https://arxiv.org/abs/1910.01108
    """

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
        max_sequence_length=512, activation="gelu", layer_norm_epsilon=1e-12, initializer_range=0.02,
        dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        # === Layers ===
        init = lambda: kernel_initializer(initializer_range)  # noqa: E731
        self._embedding_layers(config, init, dtype, layer_norm_epsilon=layer_norm_epsilon)
        self.transformer_layers = transformer_blocks(config, init, dtype)

        # === Functional Model ===
        inputs = int_inputs("token_ids", "padding_mask")
        super().__init__(inputs=inputs, outputs=self._encode(inputs), dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)
