"""The ALBERT family's registry entry (imported by `keras_pretrain.models.albert`)."""

from keras_pretrain import families
from keras_pretrain.families import Family
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.models.bert.bert_family import ENCODER

# ALBERT v2 trains without dropout; with it (or at 2e-3) the tiny demo model stalls at unigram statistics on the
# bundled corpus. Two shared layers take 2500 steps in the time four take 1000, and leave the unigram plateau
# (held-out accuracy 0.158 against 0.098).
ALBERT = families.register(Family(
    "albert", "AlbertBackbone", "AlbertPretrainer", "AlbertClassifier", "AlbertTokenizer",
    objective="sop", masking="ngram", dropout=0.0, learning_rate=1e-3, steps=2500,
    demo_config={**families.TINY_ENCODER, "num_groups": 1, "embedding_dim": 64},
    huggingface=("albert",), exporters=huggingface_exporter("albert"), keras_preprocessor="AlbertPreprocessor",
    converters={**huggingface_converter("albert"), "tf1": "keras_pretrain.models.albert.albert_convert:convert_tf1"},
    **ENCODER))
