"""RoBERTa backbone: BERT's encoder with positions offset past the padding id."""

import keras
from keras import ops

from keras_pretrain.layers.initializers import kernel_initializer
from keras_pretrain.models.backbone import TransformerBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.backbone import pooler
from keras_pretrain.models.backbone import transformer_blocks


def padding_offset_positions(padding_mask, padding_id):
    """fairseq / Hugging Face RoBERTa position ids from a padding mask.

    Real tokens get `padding_id + 1, padding_id + 2, ...` (counting only real
    tokens), padded ones `padding_id`: `cumsum(mask) * mask + padding_id`.
    """
    mask = ops.cast(padding_mask, "int32")
    return ops.cumsum(mask, axis=1) * mask + padding_id


@keras.saving.register_keras_serializable(package="keras_pretrain")
class RobertaBackbone(TransformerBackbone):
    """The RoBERTa encoder network (Liu et al., 2019).

    The same post-LN transformer as BERT (keras-hub `TransformerEncoder`),
    with three differences in the embeddings, as in fairseq and the Hugging
    Face port: position ids start at `padding_id + 1` and skip padding
    (`cumsum(padding_mask) * padding_mask + padding_id`), so a base model has
    `512 + 2 = 514` learned positions; keras-hub's `PositionEmbedding` only
    slices positions `0..T-1`, hence a plain `Embedding` over the computed ids.
    There is one token type (the row is kept, as in the published
    checkpoints, and always added); LayerNorm epsilon is 1e-5. RoBERTa is
    pretrained without a pooler; `use_pooler=True` adds BERT's
    `tanh(Dense(sequence_output[:, 0]))` (Hugging Face `RobertaModel` has it).

    The port derives positions from `input_ids != padding_id`; here they come
    from `padding_mask`, which is the same whenever padded slots (and only
    those) hold the padding id.

    Args:
        vocabulary_size: int. Size of the byte-level BPE vocabulary.
        num_layers: int. Number of transformer blocks.
        num_heads: int. Attention heads per block.
        hidden_dim: int. Width of the hidden states.
        intermediate_dim: int. Width of the feed-forward inner layer.
        dropout: float. Dropout on embeddings, attention and block outputs.
        max_sequence_length: int. Number of learned positions, including the
            `padding_id + 1` offset rows (514 for 512 tokens).
        num_segments: int. Token types (1 in the published models).
        activation: str. Feed-forward activation (our names, see
            `keras_pretrain.layers.activations`); "gelu" is the exact form.
        layer_norm_epsilon: float.
        initializer_range: float. Stddev of the truncated normal initializers.
        padding_id: int. Id of `<pad>` (1), the position offset.
        use_pooler: bool. Add the pooled output.
        dtype: Keras dtype policy.

    Inputs: dict with `token_ids` and `padding_mask` (int [B, T]).
    Outputs: dict with `sequence_output` [B, T, H], `encoder_outputs` (one
    [B, T, H] per block) and, with `use_pooler`, `pooled_output` [B, H].

    Example:
    ```python
    backbone = RobertaBackbone.from_preset("roberta_base_en")
    outputs = backbone({
        "token_ids": np.array([[0, 713, 16, 2, 1]], "int32"),
        "padding_mask": np.array([[1, 1, 1, 1, 0]], "int32"),
    })
    ```

    Reference: https://arxiv.org/abs/1907.11692
    """

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
        max_sequence_length=514, num_segments=1, activation="gelu", layer_norm_epsilon=1e-5,
        initializer_range=0.02, padding_id=1, use_pooler=False, dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        # === Layers ===
        self.padding_id = padding_id  # read by `_embedding_parts` while building
        init = lambda: kernel_initializer(initializer_range)  # noqa: E731
        self._embedding_layers(
            config, init, dtype, num_segments=num_segments, layer_norm_epsilon=layer_norm_epsilon, position_ids=True
        )
        self.transformer_layers = transformer_blocks(config, init, dtype)
        self.pooled_dense = pooler(hidden_dim, init, dtype) if use_pooler else None

        # === Functional Model ===
        inputs = int_inputs("token_ids", "padding_mask")
        super().__init__(inputs=inputs, outputs=self._encode(inputs), dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)

    def _embedding_parts(self, inputs):
        """Token, padding-offset position and (the one) segment embeddings."""
        token_ids = inputs["token_ids"]
        positions = padding_offset_positions(inputs["padding_mask"], self.padding_id)
        return [
            self.token_embedding(token_ids),
            self.position_embedding(positions),
            self.segment_embedding(ops.zeros_like(token_ids)),
        ]
