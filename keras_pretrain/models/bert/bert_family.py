"""The BERT family's registry entry (imported by `keras_pretrain.models.bert`)."""

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.export import contracts
from keras_pretrain.families import Family
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter

# What the masked-LM encoders (BERT, ALBERT, RoBERTa, DistilBERT, ERNIE) share.
ENCODER = dict(contract=contracts.BERT, packing=packing.BERT, vocabulary=families.WORDPIECE, kind=families.MASKED_LM,
               objectives=families.MASKED_LM_OBJECTIVES)

BERT = families.register(Family(
    "bert", "BertBackbone", "BertPretrainer", "BertClassifier", "BertTokenizer",
    objective="nsp", masking="token", demo_config=families.TINY_ENCODER, huggingface=("bert",),
    exporters=huggingface_exporter("bert"), keras_preprocessor="BertPreprocessor",
    converters={**huggingface_converter("bert"), "tf1": "keras_pretrain.models.bert.bert_convert:convert_tf1"},
    **ENCODER))
