"""GPT's decoder block: keras-hub's `TransformerDecoder`, same variables, computed with fewer ops."""

import keras
import keras_hub
from keras import ops
# private API: keras has no public reader of a tensor's implicit mask; it keeps the masks of tensors that
# take no attributes (JAX arrays) in a global table, so `getattr(x, "_keras_mask", None)` would miss them.
from keras.src.backend import get_keras_mask

from keras_pretrain.layers.transformer_encoder import FusedBlock


@keras.saving.register_keras_serializable(package="keras_pretrain")
class TransformerDecoder(FusedBlock, keras_hub.layers.TransformerDecoder):
    """keras-hub's `TransformerDecoder` built without cross-attention, computed as our encoder block.

    A drop-in: same constructor, sublayers, variables and variable names as
    `keras_hub.layers.TransformerDecoder`, and the same class name: Keras
    names the saved weights of the layers in a list (`transformer_layers`)
    after their class (`transformer_decoder`, `transformer_decoder_1`, ...),
    so `.keras` files written with keras-hub's class load into this one
    (as `keras_pretrain.layers.TransformerEncoder` for the encoders). Without a key/value cache and
    without an encoder sequence (training, scoring, the prompt's first pass
    is cached and stays keras-hub's), the block is GPT-1's
    `n = LN(x + Dropout(Attn(x)))`, `h = LN(n + Dropout(FFN(n)))` with the
    causal mask merged with the padding mask, computed by
    `keras_pretrain.layers.transformer_encoder.FusedBlock`: 2-D matmuls,
    one additive mask bias, `keras.ops.dot_product_attention` without
    attention dropout, and our dropout kernels. keras-hub's decoder runs
    `EinsumDense` projections, keras' masked softmax and Keras' dropout
    masks. The cached decoding step, cross-attention and inputs carrying
    only an implicit Keras mask use keras-hub's implementation.
    """

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        decoder_attention_mask=None,
        encoder_padding_mask=None,
        encoder_attention_mask=None,
        self_attention_cache=None,
        self_attention_cache_update_index=None,
        cross_attention_cache=None,
        cross_attention_cache_update_index=None,
        use_causal_mask=True,
        training=None,
    ):
        keras_path = (
            encoder_sequence is not None
            or self_attention_cache is not None
            or (decoder_padding_mask is None and get_keras_mask(decoder_sequence) is not None)
        )
        if keras_path:
            return super().call(
                decoder_sequence,
                encoder_sequence=encoder_sequence,
                decoder_padding_mask=decoder_padding_mask,
                decoder_attention_mask=decoder_attention_mask,
                encoder_padding_mask=encoder_padding_mask,
                encoder_attention_mask=encoder_attention_mask,
                self_attention_cache=self_attention_cache,
                self_attention_cache_update_index=self_attention_cache_update_index,
                cross_attention_cache=cross_attention_cache,
                cross_attention_cache_update_index=cross_attention_cache_update_index,
                use_causal_mask=use_causal_mask,
                training=training,
            )
        mask = self._compute_self_attention_mask(
            decoder_sequence=decoder_sequence,
            decoder_padding_mask=decoder_padding_mask,
            decoder_attention_mask=decoder_attention_mask,
            use_causal_mask=use_causal_mask,
            self_attention_cache=None,
            self_attention_cache_update_index=None,
        )
        if mask is not None:
            mask = ops.cast(mask, "bool")  # [B, 1 or T, S]
        return self._fused_call(decoder_sequence, mask, training)
