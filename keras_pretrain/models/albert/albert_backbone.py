"""ALBERT backbone: factorized embeddings and cross-layer parameter sharing."""

import keras

from keras_pretrain.errors import ConfigError
from keras_pretrain.layers.initializers import kernel_initializer
from keras_pretrain.models.backbone import TransformerBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.backbone import pooler
from keras_pretrain.models.backbone import transformer_blocks


def group_of_layer(layer_index, num_layers, num_groups):
    """The group layer `layer_index` uses, exactly as the original code.

    `int(layer_index / num_layers * num_groups)` in the original TF1 code
    (`modeling.transformer_model`); it also covers `num_layers` that are not
    multiples of `num_groups` (e.g. 3 layers, 2 groups: groups 0, 0, 1).
    """
    return int(layer_index * num_groups / num_layers)


@keras.saving.register_keras_serializable(package="keras_pretrain")
class AlbertBackbone(TransformerBackbone):
    """The ALBERT encoder network (Lan et al., 2020).

    Word, position and segment embeddings live in a small space of width
    `embedding_dim` (E); they are summed, layer-normalised, dropped out and
    projected to `hidden_dim` (H) by a dense layer with bias (the factorized
    embedding). The `num_layers` post-LN transformer layers share parameters:
    there are `num_groups` groups of `num_inner_repetitions` keras-hub
    `TransformerEncoder` blocks each; layer `l` uses group
    `int(l * num_groups / num_layers)` and applies that group's blocks in
    order. Sharing is done by calling the same layer objects again.
    keras-hub's own `AlbertBackbone` is not reused because it fixes the
    activation to the tanh GELU (the Chinese models use ReLU), requires
    `num_layers % num_groups == 0`, and does not return per-layer outputs.

    Args:
        vocabulary_size: int. Size of the vocabulary (V).
        num_layers: int. Number of (shared) transformer layers.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the hidden states (H).
        intermediate_dim: int. Width of the feed-forward inner layer.
        embedding_dim: int. Width of the factorized embeddings (E).
        num_groups: int. Number of distinct parameter groups
            (`num_hidden_groups` in `albert_config.json`).
        num_inner_repetitions: int. Blocks per group (`inner_group_num`).
        dropout: float. Dropout on embeddings, attention and block outputs
            (0 in the published v2 and zh models).
        max_sequence_length: int. Number of learned positions.
        num_segments: int. Number of token types.
        activation: str. One of our activation names (`"gelu_approximate"`
            is what the original code calls "gelu"; `"relu"` for the zh
            models).
        layer_norm_epsilon: float. LayerNorm epsilon (1e-12).
        initializer_range: float. Stddev of the truncated normal initializers.
        dtype: Keras dtype policy of the variables and computations.

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (int [B, T]).
    Outputs: dict with `sequence_output` [B, T, H], `pooled_output` [B, H] and
    `encoder_outputs` (a list of one [B, T, H] per layer).

    Example:
    ```python
    backbone = AlbertBackbone.from_preset("albert_base_v2")  # 12 layers sharing one block
    token_ids = np.array([[2, 10975, 126, 3]], "int32")  # [CLS] ▁hello ▁world [SEP]
    mask = np.ones_like(token_ids)
    outputs = backbone({"token_ids": token_ids, "segment_ids": 0 * mask, "padding_mask": mask})
    len(outputs["encoder_outputs"])  # 12, one per layer
    ```

    Reference: https://arxiv.org/abs/1909.11942
    """

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, embedding_dim=128,
        num_groups=1, num_inner_repetitions=1, dropout=0.0, max_sequence_length=512, num_segments=2,
        activation="gelu_approximate", layer_norm_epsilon=1e-12, initializer_range=0.02, dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        if not 1 <= num_groups <= num_layers:
            raise ConfigError(
                f"AlbertBackbone: num_groups must be between 1 and num_layers "
                f"({num_layers}); found {num_groups}."
            )
        if num_inner_repetitions < 1:
            raise ConfigError(
                "AlbertBackbone: num_inner_repetitions must be >= 1; found "
                f"{num_inner_repetitions}."
            )

        # === Layers ===
        init = lambda: kernel_initializer(initializer_range)  # noqa: E731
        # BERT's embedding layers at width E, then the E -> H projection.
        self._embedding_layers(config, init, dtype, num_segments=num_segments, layer_norm_epsilon=layer_norm_epsilon)
        self.embeddings_projection = keras.layers.Dense(
            hidden_dim,
            kernel_initializer=init(),
            dtype=dtype,
            name="embeddings_projection",
        )
        # transformer_layers[group][inner]: the distinct (shared) blocks.
        self.transformer_layers = [
            transformer_blocks(
                config, init, dtype, names=[f"group_{g}_inner_{i}" for i in range(num_inner_repetitions)]
            )
            for g in range(num_groups)
        ]
        self.pooled_dense = pooler(hidden_dim, init, dtype)

        # === Functional Model ===
        self.num_layers = num_layers  # read by `_layer_blocks` while building
        inputs = int_inputs("token_ids", "segment_ids", "padding_mask")
        super().__init__(inputs=inputs, outputs=self._encode(inputs), dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)

    def _embed(self, inputs):
        return self.embeddings_projection(super()._embed(inputs))

    def _layer_blocks(self):
        """Each layer's (shared) blocks: those of its group."""
        num_groups = len(self.transformer_layers)
        return [
            self.transformer_layers[group_of_layer(l, self.num_layers, num_groups)]
            for l in range(self.num_layers)  # noqa: E741
        ]
