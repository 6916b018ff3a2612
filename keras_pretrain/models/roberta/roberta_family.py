"""The RoBERTa family's registry entry (imported by `keras_pretrain.models.roberta`)."""

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.export import contracts
from keras_pretrain.families import Family
from keras_pretrain.families import adamw
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.layers import summaries
from keras_pretrain.models.bert.bert_family import ENCODER

# RoBERTa's head (`RobertaClassificationHead`): the `<s>` state, dropout, Dense(H, tanh), then the output layer.
SUMMARY = summaries.SequenceSummary(summaries.FirstToken, activation="tanh", input_dropout=True)
# RoBERTa's multiple-choice head (`RobertaForMultipleChoice`): the pooler (`roberta.pooler`: Dense(H, tanh) on
# `<s>`), dropout, Linear(H, 1). The task holds that projection itself (as `pooler_dense`), so that any RoBERTa
# backbone (fairseq's have no pooler) takes the head; no dropout before it.
CHOICE_SUMMARY = summaries.SequenceSummary(summaries.FirstToken, activation="tanh", projection="pooler_dense")

# RoBERTa: no NSP, FULL-SENTENCES packing, a new mask every epoch.
ROBERTA = families.register(Family(
    "roberta", "RobertaBackbone", "RobertaPretrainer", "RobertaClassifier", "RobertaTokenizer",
    objective="full_sentences", masking="token", dynamic=True, casing=False,
    demo_config={**families.TINY_ENCODER, "padding_id": 0}, position_offset=2, huggingface=("roberta",),
    exporters=huggingface_exporter("roberta"),
    converters={**huggingface_converter("roberta"),
                "fairseq": "keras_pretrain.models.roberta.roberta_convert:convert_fairseq"},
    summary=SUMMARY, choice_summary=CHOICE_SUMMARY, keras_preprocessor="RobertaPreprocessor",
    fine_tuning_optimizer=adamw(2e-5, weight_decay=0.1, beta_2=0.98, epsilon=1e-6),
    **{**ENCODER, "contract": contracts.ROBERTA, "packing": packing.ROBERTA}))
