"""Published GPT-1 configuration and small ones (exact shapes; no weights)."""


from keras_pretrain.models.presets import transformer_config


def _gpt(num_layers, hidden_dim, num_heads, vocabulary_size=40478, max_sequence_length=512):
    return transformer_config(num_layers, hidden_dim, num_heads, vocabulary_size, "gelu_approximate", 1e-5,
                              max_sequence_length=max_sequence_length, initializer_range=0.02)


_OPENAI = "https://github.com/openai/finetune-transformer-lm"

backbone_presets = {
    "gpt_tiny": {
        "config": _gpt(2, 64, 2, vocabulary_size=8000, max_sequence_length=128),
        "description": "2-layer GPT, 64 hidden, 2 heads, 8000 BPE entries (tests, demos).",
    },
    "gpt_small": {
        "config": _gpt(4, 256, 4, vocabulary_size=16000, max_sequence_length=256),
        "description": "4-layer GPT, 256 hidden, 4 heads, 16000 BPE entries.",
    },
    "gpt1": {
        "config": _gpt(12, 768, 12),
        "description": "GPT-1 (openai-gpt): 12 layers, 768 hidden, 12 heads, "
        "40478 BPE entries (40,000 merges), 512 positions.",
        "params": 116_534_784,
        "source": _OPENAI,
    },
}
