"""BERT backbone: post-LN transformer encoder with learned positions."""

import keras
import keras_hub

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.layers.transformer_encoder import TransformerEncoder
from keras_pretrain.models.backbone import Backbone
from keras_pretrain.models.backbone import check_sizes


def bert_kernel_initializer(stddev=0.02):
    return keras.initializers.TruncatedNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertBackbone(Backbone):
    """The BERT encoder network (Devlin et al., 2019).

    Token, position and segment embeddings are summed, layer-normalised and
    passed through `num_layers` post-LN transformer blocks (keras-hub's
    `TransformerEncoder` with `normalize_first=False` computes exactly BERT's
    block; `keras_pretrain.layers.transformer_encoder.TransformerEncoder` is
    that layer, same variables, computed faster). The pooled output is
    `tanh(Dense(sequence_output[:, 0]))`.

    Args:
        vocabulary_size: int. Size of the WordPiece vocabulary.
        num_layers: int. Number of transformer blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the hidden states.
        intermediate_dim: int. Width of the feed-forward inner layer.
        dropout: float. Dropout on embeddings, attention and block outputs.
        max_sequence_length: int. Number of learned positions.
        num_segments: int. Number of token types (segment ids).
        activation: str. Feed-forward activation, one of our names: `"gelu"`
            (exact erf form), `"gelu_approximate"` (tanh form, what the
            original Google code calls "gelu"), `"relu"`, ...
        layer_norm_epsilon: float. LayerNorm epsilon (1e-12 in BERT).
        initializer_range: float. Stddev of the truncated normal initializers.
        dtype: Keras dtype policy of the variables and computations.

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (int [B, T]).
    Outputs: dict with `sequence_output` [B, T, H], `pooled_output` [B, H] and
    `encoder_outputs` (a list of one [B, T, H] per block).

    Example:
    ```python
    backbone = BertBackbone.from_preset("bert_tiny_en_uncased")
    outputs = backbone({
        "token_ids": np.ones((1, 12), "int32"),
        "segment_ids": np.zeros((1, 12), "int32"),
        "padding_mask": np.ones((1, 12), "int32"),
    })
    ```

    Reference: https://arxiv.org/abs/1810.04805
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
        num_segments=2,
        activation="gelu_approximate",
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
        self.segment_embedding = keras.layers.Embedding(
            input_dim=num_segments,
            output_dim=hidden_dim,
            embeddings_initializer=init(),
            dtype=dtype,
            name="segment_embedding",
        )
        self.embeddings_add = keras.layers.Add(dtype=dtype, name="embeddings_add")
        self.embeddings_layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_epsilon,
            dtype=dtype,
            name="embeddings_layer_norm",
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
        self.pooled_dense = keras.layers.Dense(
            hidden_dim,
            activation="tanh",
            kernel_initializer=init(),
            dtype=dtype,
            name="pooled_dense",
        )

        # === Functional Model ===
        token_ids = keras.Input(shape=(None,), dtype="int32", name="token_ids")
        segment_ids = keras.Input(
            shape=(None,), dtype="int32", name="segment_ids"
        )
        padding_mask = keras.Input(
            shape=(None,), dtype="int32", name="padding_mask"
        )
        x = self._embed({"token_ids": token_ids, "segment_ids": segment_ids})
        encoder_outputs = []
        for layer in self.transformer_layers:
            x = layer(x, padding_mask=padding_mask)
            encoder_outputs.append(x)
        pooled = self.pooled_dense(x[:, 0, :])
        super().__init__(
            inputs={
                "token_ids": token_ids,
                "segment_ids": segment_ids,
                "padding_mask": padding_mask,
            },
            outputs={
                "sequence_output": x,
                "pooled_output": pooled,
                "encoder_outputs": encoder_outputs,
            },
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
        self.num_segments = num_segments
        self.activation = activation
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range

    def _embedding_parts(self, inputs):
        """The embeddings summed: token, position, segment."""
        tokens = self.token_embedding(inputs["token_ids"])
        return [
            tokens,
            self.position_embedding(tokens),
            self.segment_embedding(inputs["segment_ids"]),
        ]

    def _embed(self, inputs):
        """The embedding sum, LayerNorm, dropout: `[B, T, H]`."""
        x = self.embeddings_add(self._embedding_parts(inputs))
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
            "num_segments": self.num_segments,
            "activation": self.activation,
            "layer_norm_epsilon": self.layer_norm_epsilon,
            "initializer_range": self.initializer_range,
        }
