"""Published DistilBERT configuration (exact shapes; metadata only, no weights)."""

from keras_pretrain.models.presets import transformer_config

backbone_presets = {
    "distil_bert_base_en_uncased": {
        "config": transformer_config(6, 768, 12, 30522, "gelu", 1e-12, max_sequence_length=512),
        "description": "DistilBERT-base uncased: 6 layers, 768 hidden, 12 heads, distilled from "
                       "BERT-base uncased (student initialised from teacher layers 0, 2, 4, 7, 9, 11).",
        "params": 66_362_880,
        "lowercase": True,
        "source": "https://github.com/huggingface/transformers-research-projects/tree/main/distillation",
    },
}
