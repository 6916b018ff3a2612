"""Published BERT configurations (exact shapes; metadata only, no weights)."""


from keras_pretrain.models.presets import transformer_config


def _bert(num_layers, hidden_dim, num_heads, vocabulary_size=30522, activation="gelu_approximate"):
    return transformer_config(num_layers, hidden_dim, num_heads, vocabulary_size, activation, 1e-12,
                              max_sequence_length=512, num_segments=2)


_GOOGLE = "https://github.com/google-research/bert"

backbone_presets = {
    "bert_tiny_en_uncased": {
        "config": _bert(2, 128, 2),
        "description": "2-layer BERT, 128 hidden, 2 heads (Turc et al. 2019).",
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_mini_en_uncased": {
        "config": _bert(4, 256, 4),
        "description": "4-layer BERT, 256 hidden, 4 heads.",
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_small_en_uncased": {
        "config": _bert(4, 512, 8),
        "description": "4-layer BERT, 512 hidden, 8 heads.",
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_medium_en_uncased": {
        "config": _bert(8, 512, 8),
        "description": "8-layer BERT, 512 hidden, 8 heads.",
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_base_en_uncased": {
        "config": _bert(12, 768, 12),
        "description": "BERT-base uncased: 12 layers, 768 hidden, 12 heads.",
        "params": 109_482_240,
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_large_en_uncased": {
        "config": _bert(24, 1024, 16),
        "description": "BERT-large uncased: 24 layers, 1024 hidden, 16 heads.",
        "params": 335_141_888,
        "lowercase": True,
        "source": _GOOGLE,
    },
    "bert_base_zh": {
        "config": _bert(12, 768, 12, vocabulary_size=21128),
        "description": "BERT-base Chinese (21128 WordPiece entries).",
        "params": 102_267_648,
        "lowercase": False,
        "source": _GOOGLE,
    },
}

# Whole-word-masking BERT differs only in its pretraining data (see
# keras_pretrain.data.WholeWordMasking); the published Chinese one keeps
# BERT-base Chinese shapes.
backbone_presets["bert_wwm_base_zh"] = {
    "config": _bert(12, 768, 12, vocabulary_size=21128, activation="gelu"),
    "description": "Chinese BERT-wwm base: BERT-base Chinese shapes (vocab 21128) pretrained with "
    "whole-word masking over segmenter-decided Chinese words.",
    "params": 102_267_648,
    "lowercase": True,
    "masking": "whole_word (with a Chinese word segmenter)",
    "source": "https://github.com/ymcui/Chinese-BERT-wwm",
}
