"""GPT (GPT-1) backbone: post-LN transformer decoder with learned positions."""

import keras

from keras_pretrain.layers.initializers import normal_kernel_initializer
from keras_pretrain.models.backbone import TransformerBackbone
from keras_pretrain.models.backbone import check_config_sizes
from keras_pretrain.models.backbone import constructor_config
from keras_pretrain.models.backbone import int_inputs
from keras_pretrain.models.backbone import transformer_blocks
from keras_pretrain.models.gpt.gpt_block import TransformerDecoder


@keras.saving.register_keras_serializable(package="keras_pretrain")
class GPTBackbone(TransformerBackbone):
    """The GPT decoder network (Radford et al., 2018, "GPT-1").

    Token and learned position embeddings are summed (no LayerNorm), dropped
    out and passed through `num_layers` post-LN decoder blocks with causal
    self-attention and no cross-attention. keras-hub's `TransformerDecoder`
    built without an encoder sequence and with `normalize_first=False`
    (here `gpt_block.TransformerDecoder`: the same layer, fewer ops) is exactly
    GPT-1's block: `n = LN(x + Dropout(Attn(x)))`,
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
    token_ids = np.array([[40, 2310, 2018, 0], [40, 2310, 0, 0]], "int32")
    padding_mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], "int32")  # padding on the right
    outputs = backbone({"token_ids": token_ids, "padding_mask": padding_mask})
    outputs["sequence_output"].shape  # (2, 4, 64)
    ```

    Reference: Radford et al., "Improving Language Understanding by
    Generative Pre-Training" (2018),
    https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf
    """

    # Decoder blocks take the padding mask as `decoder_padding_mask`.
    block_mask_argument = "decoder_padding_mask"
    # Causal blocks: no last-block-at-positions shortcut (`sequence_output_at`).
    supports_sequence_output_at = False

    def __init__(
        self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
        max_sequence_length=512, activation="gelu_approximate", layer_norm_epsilon=1e-5, initializer_range=0.02,
        dtype=None, **kwargs,
    ):
        config = check_config_sizes(self, constructor_config(locals()))
        # === Layers ===
        init = lambda: normal_kernel_initializer(initializer_range)  # noqa: E731
        self._embedding_layers(config, init, dtype)  # no LayerNorm on the embeddings
        self.transformer_layers = transformer_blocks(
            config, init, dtype, block=TransformerDecoder, normalize_first=False
        )

        # === Functional Model ===
        inputs = int_inputs("token_ids", "padding_mask")
        super().__init__(inputs=inputs, outputs=self._encode(inputs), dtype=dtype, **kwargs)

        # === Config ===
        self._keep_config(**config)


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
