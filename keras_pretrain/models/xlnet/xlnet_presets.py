"""Published XLNet configurations (exact shapes; metadata only, no weights)."""


from keras_pretrain.models.presets import preset
from keras_pretrain.models.presets import transformer_config


def _xlnet(num_layers, hidden_dim, num_heads, vocabulary_size=32000, **extra):
    recurrence = dict(attn_type="bi", mem_len=None, reuse_len=None, clamp_len=-1, same_length=False, bi_data=False,
                      untie_r=True)
    return transformer_config(num_layers, hidden_dim, num_heads, vocabulary_size, "gelu", 1e-12,
                              **{**recurrence, **extra})


def xlnet_parameter_count(vocabulary_size, num_layers, hidden_dim, intermediate_dim):
    """Parameters of `XLNetBackbone` (= `transformers.XLNetModel`), by formula.

    Per layer: q, k, v, o, r (5 H^2), r_w/r_r/r_s biases (3 H), seg_embed (2 H),
    two LayerNorms (4 H), feed-forward (2 H I + I + H); plus word embeddings
    (V H) and mask_emb (H).
    """
    h, i = hidden_dim, intermediate_dim
    per_layer = 5 * h * h + 3 * h + 2 * h + 4 * h + 2 * h * i + i + h
    return vocabulary_size * h + h + num_layers * per_layer


_SOURCE = "https://github.com/zihangdai/xlnet"

backbone_presets = {
    "xlnet_base_cased": preset(
        _xlnet(12, 768, 12), "XLNet-Base, cased: 12 layers, 768 hidden, 12 heads (SentencePiece 32000).", _SOURCE,
        params=116_718_336, lowercase=False,
    ),
    "xlnet_large_cased": preset(
        _xlnet(24, 1024, 16), "XLNet-Large, cased: 24 layers, 1024 hidden, 16 heads (SentencePiece 32000).", _SOURCE,
        params=360_268_800, lowercase=False,
    ),
}
