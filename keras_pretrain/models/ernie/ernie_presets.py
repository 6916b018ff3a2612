"""Published ERNIE configurations and the Chinese BERT-wwm preset (metadata only, no weights).

ERNIE 1.0 (Baidu, PaddlePaddle release `ERNIE_1.0_max-len-512`, ported to Hugging Face as
`nghuyong/ernie-1.0-base-zh`): BERT-base shapes with vocab 18000, relu, 513 positions, 2 token
types. The LayerNorm epsilon is PaddlePaddle's default 1e-5. (Shapes recalled from the released
`ernie_config.json`; no machine here can download it to re-check.)

Chinese BERT-wwm (Cui et al., 2019, https://github.com/ymcui/Chinese-BERT-wwm): exactly Google's
BERT-base Chinese configuration (vocab 21128, gelu); only the pretraining data differ: whole-word
masking where a Chinese word segmenter (LTP in the paper) decides word boundaries, i.e.
`keras_pretrain.data.WholeWordMasking(segmenter=...)`. Build it with `BertBackbone(**config)` (or
`ErnieBackbone.from_preset("bert_wwm_base_zh")`, the same network); its weights convert with the
BERT converters (`model_type: bert`).
"""

from keras_pretrain.models.bert.bert_presets import backbone_presets as bert_backbone_presets
from keras_pretrain.models.presets import transformer_config

ernie_presets = {
    "ernie_1.0_base_zh": {
        "config": transformer_config(12, 768, 12, 18000, "relu", 1e-5, max_sequence_length=513, num_segments=2,
                                     use_task_id=False),
        "description": "ERNIE 1.0 base Chinese: 12 layers, 768 hidden, 12 heads, relu, vocab 18000; "
                       "pretrained with knowledge (phrase and entity) masking.",
        "params": 99_866_112,
        "lowercase": True,
        "source": "https://github.com/PaddlePaddle/ERNIE",
    },
}

# BERT-wwm is a BERT configuration (defined with the BERT presets); ERNIE's
# backbone can build it too.
bert_wwm_presets = {"bert_wwm_base_zh": bert_backbone_presets["bert_wwm_base_zh"]}

backbone_presets = {**ernie_presets, **bert_wwm_presets}
