"""Published RoBERTa configurations (exact shapes; metadata only, no weights).

Parameter counts in the Hugging Face / fairseq layout (514 positions, one
token-type row): base 124,055,040 without the pooler, 124,645,632 with it;
large 354,310,144 / 355,359,744. The figures 124,052,736 / 354,307,072 often
quoted "without pooler" are keras-hub's layout, which drops the two unused
offset position rows and the token-type row (3 x H fewer).
"""


from keras_pretrain.models.presets import preset
from keras_pretrain.models.presets import transformer_config


def _roberta(num_layers, hidden_dim, num_heads):
    return transformer_config(num_layers, hidden_dim, num_heads, 50265, "gelu", 1e-5, max_sequence_length=514,
                              num_segments=1, padding_id=1, use_pooler=False)


_FAIRSEQ = "https://github.com/facebookresearch/fairseq/tree/main/examples/roberta"

backbone_presets = {
    "roberta_base_en": preset(
        _roberta(12, 768, 12), "RoBERTa-base: 12 layers, 768 hidden, 12 heads, byte-level BPE (V 50265).", _FAIRSEQ,
        params=124_055_040, params_with_pooler=124_645_632, params_keras_hub_layout=124_052_736,
    ),
    "roberta_large_en": preset(
        _roberta(24, 1024, 16), "RoBERTa-large: 24 layers, 1024 hidden, 16 heads, byte-level BPE (V 50265).", _FAIRSEQ,
        params=354_310_144, params_with_pooler=355_359_744, params_keras_hub_layout=354_307_072,
    ),
}
