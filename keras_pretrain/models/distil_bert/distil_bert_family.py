"""The DistilBERT family's registry entry (imported by `keras_pretrain.models.distil_bert`)."""

from keras_pretrain import families
from keras_pretrain.export import contracts
from keras_pretrain.families import Family
from keras_pretrain.families import adamw
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.layers import summaries
from keras_pretrain.models.bert.bert_family import ENCODER

# DistilBERT's head (`DistilBertForSequenceClassification`): `pre_classifier` Dense(H, relu) on the [CLS] state,
# no dropout before it, `seq_classif_dropout` 0.2 after it.
DISTIL_BERT = families.register(Family(
    "distil_bert", "DistilBertBackbone", "DistilBertPretrainer", "DistilBertClassifier",
    "bert.BertTokenizer", objective="full_sentences", masking="token", dynamic=True,
    demo_config=families.TINY_ENCODER, huggingface=("distilbert",), exporters=huggingface_exporter("distil_bert"),
    converters=huggingface_converter("distil_bert"), keras_preprocessor="bert.BertPreprocessor",
    summary=summaries.SequenceSummary(summaries.FirstToken, activation="relu", dropout=0.2),
    fine_tuning_optimizer=adamw(2e-5, weight_decay=0.1, beta_2=0.98, epsilon=1e-6),
    **{**ENCODER, "contract": contracts.ROBERTA}))
