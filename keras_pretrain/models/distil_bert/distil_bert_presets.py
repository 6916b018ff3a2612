"""Published DistilBERT configuration (exact shapes; metadata only, no weights)."""

backbone_presets = {
    "distil_bert_base_en_uncased": {
        "config": {
            "vocabulary_size": 30522,
            "num_layers": 6,
            "num_heads": 12,
            "hidden_dim": 768,
            "intermediate_dim": 3072,
            "dropout": 0.1,
            "max_sequence_length": 512,
            "activation": "gelu",
            "layer_norm_epsilon": 1e-12,
        },
        "description": "DistilBERT-base uncased: 6 layers, 768 hidden, 12 heads, distilled from "
                       "BERT-base uncased (student initialised from teacher layers 0, 2, 4, 7, 9, 11).",
        "params": 66_362_880,
        "lowercase": True,
        "source": "https://github.com/huggingface/transformers-research-projects/tree/main/distillation",
    },
}
