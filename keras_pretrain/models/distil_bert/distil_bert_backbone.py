"""DistilBERT backbone: BERT's encoder without token types or pooler."""

import keras
import keras_hub

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.transformer_encoder import TransformerEncoder
from keras_pretrain.models.backbone import Backbone
from keras_pretrain.models.backbone import check_sizes
from keras_pretrain.models.bert.bert_backbone import bert_kernel_initializer


@keras.saving.register_keras_serializable(package="keras_pretrain")
class DistilBertBackbone(Backbone):
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
        self,
        vocabulary_size,
        num_layers,
        num_heads,
        hidden_dim,
        intermediate_dim,
        dropout=0.1,
        max_sequence_length=512,
        activation="gelu",
        layer_norm_epsilon=1e-12,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_sizes(self, vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads,
                    hidden_dim=hidden_dim, intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length)
        # === Layers ===
        init = lambda: bert_kernel_initializer(initializer_range)  # noqa: E731
        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            input_dim=vocabulary_size,
            output_dim=hidden_dim,
            embeddings_initializer=init(),
            dtype=dtype,
            name="token_embedding",
        )
        self.position_embedding = keras_hub.layers.PositionEmbedding(
            sequence_length=max_sequence_length,
            initializer=init(),
            dtype=dtype,
            name="position_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon, dtype=dtype, name="embeddings_layer_norm"
        )
        self.embeddings_dropout = Dropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.transformer_layers = [
            TransformerEncoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=get_activation(activation),
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=init(),
                dtype=dtype,
                name=f"transformer_layer_{i}",
            )
            for i in range(num_layers)
        ]

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        padding_mask = keras.Input(
            shape=(None,), dtype="int32", name="padding_mask"
        )
        x = self._embed({"token_ids": token_ids})
        encoder_outputs = []
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask)
            encoder_outputs.append(x)
        super().__init__(
            inputs={"token_ids": token_ids, "padding_mask": padding_mask},
            outputs={"sequence_output": x, "encoder_outputs": encoder_outputs},
            dtype=dtype,
            **kwargs,
        )

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.hidden_dim = hidden_dim
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_sequence_length = max_sequence_length
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def _embed(self, inputs):
        """Token + position embeddings, LayerNorm, dropout."""
        tokens = self.token_embedding(inputs["token_ids"])
        x = self.embeddings_add([tokens, self.position_embedding(tokens)])
        x = self.embeddings_layer_norm(x)
        return self.embeddings_dropout(x)

    def _config(self):
        return {
            "vocabulary_size": self.vocabulary_size,
            "num_layers": self.num_layers,
            "num_heads": self.num_heads,
            "hidden_dim": self.hidden_dim,
            "intermediate_dim": self.intermediate_dim,
            "dropout": self.dropout,
            "max_sequence_length": self.max_sequence_length,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
        }
