"""The ERNIE family's registry entry (imported by `keras_pretrain.models.ernie`)."""

from keras_pretrain import families
from keras_pretrain.families import Family
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.models.bert.bert_family import ENCODER

# ERNIE 1.0: knowledge masking (phrases / entities from --lexicon).
ERNIE = families.register(Family(
    "ernie", "ErnieBackbone", "ErniePretrainer", "ErnieClassifier", "bert.BertTokenizer",
    objective="nsp", masking="knowledge", demo_config=families.TINY_ENCODER, huggingface=("ernie",),
    exporters=huggingface_exporter("ernie"), keras_preprocessor="bert.BertPreprocessor",
    converters=huggingface_converter("ernie"), **ENCODER))
