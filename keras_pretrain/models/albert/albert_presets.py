"""Published ALBERT configurations (exact shapes; metadata only, no weights).

Shapes from the `albert_config.json` files of the published archives (see
shared/specs/albert-published-checkpoints.md). xlarge v2 uses 32 heads as in
the TF-Hub config (several ports use 16; the parameter count is the same).
Loading a checkpoint always reads the activation and shapes from its file.
"""


from keras_pretrain.models.presets import transformer_config


def _albert(num_layers, hidden_dim, num_heads, vocabulary_size, activation):
    return transformer_config(num_layers, hidden_dim, num_heads, vocabulary_size, activation, 1e-12, dropout=0.0,
                              embedding_dim=128, num_groups=1, num_inner_repetitions=1, max_sequence_length=512,
                              num_segments=2)


_GOOGLE = "https://github.com/google-research/albert"
_SIZES = {
    # size: (layers, hidden, heads v2, heads zh)
    "base": (12, 768, 12, 12),
    "large": (24, 1024, 16, 16),
    "xlarge": (24, 2048, 32, 16),
    "xxlarge": (12, 4096, 64, 16),
}
# Backbone parameters (V = 30000; V = 21128); MLM head with V = 30000 (its
# output bias is V wide); SOP head. Exact counts from the spec.
_PARAMS = {
    "base": (11_683_584, 10_547_968, 128_688, 1_538),
    "large": (17_683_968, 16_548_352, 161_456, 2_050),
    "xlarge": (58_724_864, 57_589_248, 292_528, 4_098),
    "xxlarge": (222_595_584, 221_459_968, 554_672, 8_194),
}

backbone_presets = {}
for _size, (_layers, _hidden, _heads_v2, _heads_zh) in _SIZES.items():
    _params_v2, _params_zh, _mlm, _sop = _PARAMS[_size]
    backbone_presets[f"albert_{_size}_v2"] = {
        "config": _albert(_layers, _hidden, _heads_v2, 30000, "gelu_approximate"),
        "description": f"ALBERT {_size} v2, English, uncased SentencePiece (30k-clean.model).",
        "params": _params_v2,
        "mlm_head_params": _mlm,
        "sop_head_params": _sop,
        "tokenizer": "sentencepiece",
        "lowercase": True,
        "archive": f"albert_{_size}_v2.tar.gz",
        "source": _GOOGLE,
    }
    backbone_presets[f"albert_{_size}_zh"] = {
        "config": _albert(_layers, _hidden, _heads_zh, 21128, "relu"),
        "description": f"ALBERT {_size}, Chinese, BERT's WordPiece vocabulary (21128).",
        "params": _params_zh,
        "mlm_head_params": _mlm - 30000 + 21128,
        "sop_head_params": _sop,
        "tokenizer": "wordpiece",
        "lowercase": True,
        "archive": f"albert_{_size}_zh.tar.gz",
        "source": _GOOGLE,
    }
