"""GPT (GPT-1) backbone: post-LN transformer decoder with learned positions."""

import keras
import keras_hub

from keras_pretrain.layers.activations import get_activation
from keras_pretrain.layers.dropout import Dropout
from keras_pretrain.models.backbone import Backbone
from keras_pretrain.models.backbone import check_sizes


def gpt_kernel_initializer(stddev=0.02):
    return keras.initializers.RandomNormal(stddev=stddev)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class GPTBackbone(Backbone):
    """The GPT decoder network (Radford et al., 2018, "GPT-1").

    Token and learned position embeddings are summed (no LayerNorm), dropped
    out and passed through `num_layers` post-LN decoder blocks with causal
    self-attention and no cross-attention. keras-hub's `TransformerDecoder`
    built without an encoder sequence and with `normalize_first=False`
    computes exactly GPT-1's block: `n = LN(x + Dropout(Attn(x)))`,
    `h = LN(n + Dropout(W2 act(W1 n)))`, with attention scaled by
    `1/sqrt(head_dim)`, a causal mask and the padding mask on the keys (the
    parity tests against `transformers.OpenAIGPTModel` check this). Unlike
    GPT-2 there is no final LayerNorm.

    Args:
        vocabulary_size: int. Size of the BPE vocabulary (40478 for GPT-1).
        num_layers: int. Number of decoder blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the hidden states.
        intermediate_dim: int. Width of the feed-forward inner layer.
        dropout: float. Dropout on embeddings, attention probabilities and
            block outputs (GPT-1 uses 0.1 for all three).
        max_sequence_length: int. Number of learned positions (512).
        activation: str. Feed-forward activation, one of our names. GPT-1
            uses the tanh form of GELU (`"gelu_approximate"`): the original
            code's `gelu` and the `transformers` port's `afn="gelu"` both
            compute the tanh approximation.
        layer_norm_epsilon: float. LayerNorm epsilon (1e-5 in GPT-1).
        initializer_range: float. Stddev of the normal initializers (0.02).
        dtype: Keras dtype policy of the variables and computations.

    Inputs: dict with `token_ids` and `padding_mask` (int [B, T]); padding
    must be on the right (positions are 0..T-1 whatever the mask).
    Outputs: dict with `sequence_output` [B, T, H] and `encoder_outputs`
    (a list of one [B, T, H] per block; the last equals `sequence_output`).

    Example:
    ```python
    backbone = GPTBackbone.from_preset("gpt_tiny")
    outputs = backbone({
        "token_ids": np.ones((1, 12), "int32"),
        "padding_mask": np.ones((1, 12), "int32"),
    })
    ```

    Reference: Radford et al., "Improving Language Understanding by
    Generative Pre-Training" (2018),
    https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf
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
        activation="gelu_approximate",
        layer_norm_epsilon=1e-5,
        initializer_range=0.02,
        dtype=None,
        **kwargs,
    ):
        check_sizes(self, vocabulary_size=vocabulary_size, num_layers=num_layers, num_heads=num_heads,
                    hidden_dim=hidden_dim, intermediate_dim=intermediate_dim, max_sequence_length=max_sequence_length)
        # === Layers ===
        init = lambda: gpt_kernel_initializer(initializer_range)  # noqa: E731
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
        self.embeddings_dropout = Dropout(
            dropout, dtype=dtype, name="embeddings_dropout"
        )
        self.transformer_layers = [
            keras_hub.layers.TransformerDecoder(
                num_heads=num_heads,
                intermediate_dim=intermediate_dim,
                activation=get_activation(activation),
                dropout=dropout,
                layer_norm_epsilon=layer_norm_epsilon,
                kernel_initializer=init(),
                normalize_first=False,
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
        tokens = self.token_embedding(token_ids)
        x = self.embeddings_add([tokens, self.position_embedding(tokens)])
        x = self.embeddings_dropout(x)
        encoder_outputs = []
        for layer in self.transformer_layers:
            x = layer(x, decoder_padding_mask=padding_mask)
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


def expand_vocabulary(backbone, num_new_tokens, seed=None):
    """A copy of `backbone` with `num_new_tokens` extra rows in its embedding.

    GPT-1 fine-tuning adds randomly initialised start / delimiter / extract
    tokens to the pretrained vocabulary; their ids are
    `backbone.vocabulary_size + 0, 1, ...`. Every other weight is copied.
    """
    import numpy as np

    config = backbone.get_config()
    config["vocabulary_size"] = backbone.vocabulary_size + num_new_tokens
    for key in ("name", "trainable"):
        config.pop(key, None)
    new = type(backbone).from_config(config)
    rng = np.random.default_rng(seed)
    for old_w, new_w in zip(backbone.weights, new.weights):
        value = keras.ops.convert_to_numpy(old_w)
        if old_w is backbone.token_embedding.embeddings:
            extra = rng.normal(0.0, backbone.initializer_range, (num_new_tokens, value.shape[1]))
            value = np.concatenate([value, extra.astype(value.dtype)], axis=0)
        new_w.assign(value)
    return new
