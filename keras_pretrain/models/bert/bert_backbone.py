"""BERT backbone: post-LN transformer encoder with learned positions."""

import keras

from keras_pretrain.layers.initializers import kernel_initializer
from keras_pretrain.models.backbone import TransformerBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.backbone import embedding
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.backbone import pooler
from keras_pretrain.models.backbone import transformer_blocks


@keras.saving.register_keras_serializable(package="keras_pretrain")
class BertBackbone(TransformerBackbone):
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
        num_task_types: int or None. ERNIE 2.0 / 3.0's task-type embeddings:
            with a number of task types, a `task_type_embedding` is added to
            the embedding sum (as the segment embedding), fed by a
            `task_type_ids` input (Hugging Face `ErnieModel` with
            `use_task_id`). None (BERT): no such input.
        dtype: Keras dtype policy of the variables and computations.

    Inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (and
    `task_type_ids` with `num_task_types`), int [B, T].
    Outputs: dict with `sequence_output` [B, T, H], `pooled_output` [B, H] and
    `encoder_outputs` (a list of one [B, T, H] per block).

    Example:
    ```python
    backbone = BertBackbone.from_preset("bert_tiny_en_uncased")
    token_ids = np.array([[101, 7592, 2088, 102, 0, 0]], "int32")  # [CLS] hello world [SEP] [PAD] [PAD]
    outputs = backbone({
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": (token_ids != 0).astype("int32"),
    })
    outputs["pooled_output"].shape  # (1, 128)
    ```

    Reference: https://arxiv.org/abs/1810.04805
    """

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
        max_sequence_length=512, num_segments=2, activation="gelu_approximate", layer_norm_epsilon=1e-12,
        initializer_range=0.02, num_task_types=None, dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        # === Layers ===
        init = lambda: kernel_initializer(initializer_range)  # noqa: E731
        self._embedding_layers(config, init, dtype, num_segments=num_segments, layer_norm_epsilon=layer_norm_epsilon)
        self.task_type_embedding = None
        if num_task_types:
            self.task_type_embedding = embedding(
                num_task_types, hidden_dim, init, dtype, "task_type_embedding"
            )
        self.transformer_layers = transformer_blocks(config, init, dtype)
        self.pooled_dense = pooler(hidden_dim, init, dtype)

        # === Functional Model ===
        inputs = int_inputs("token_ids", "segment_ids", "padding_mask")
        if num_task_types:
            inputs.update(int_inputs("task_type_ids"))
        super().__init__(inputs=inputs, outputs=self._encode(inputs), dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)

    def _embedding_parts(self, inputs):
        """Token, position, segment (and task-type) embeddings."""
        parts = super()._embedding_parts(inputs)
        if self.task_type_embedding is not None and "task_type_ids" in inputs:
            parts.append(self.task_type_embedding(inputs["task_type_ids"]))
        return parts
