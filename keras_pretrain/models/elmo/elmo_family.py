"""The ELMo family's registry entry (imported by `keras_pretrain.models.elmo`)."""

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.families import Family
from keras_pretrain.families import adam
from keras_pretrain.layers import summaries
from keras_pretrain.models.elmo.elmo_contract import ELMO_CONTRACT

# ELMo: the frozen biLM's scalar mix (ElmoEmbedder) as token states, their mean over the real tokens.
ELMO = families.register(Family(
    "elmo", "ElmoBackbone", "ElmoBiLM", "ElmoClassifier", "ElmoCharacterMapper", contract=ELMO_CONTRACT,
    packing=packing.ELMO, vocabulary=families.WORDS, kind=families.BIDIRECTIONAL_LM,
    objective=families.BIDIRECTIONAL_LM, objectives=(families.BIDIRECTIONAL_LM,), positions=False,
    summary=summaries.SequenceSummary(summaries.MaskedMean, output_dropout=False, initializer=None),
    token_states=summaries.TokenStates("keras_pretrain.models.elmo:ElmoEmbedder", attribute="embedder",
                                       layer_name="elmo", characters=True),
    preprocessor="keras_pretrain.models.elmo.elmo_text:ElmoTextPreprocessor", keras_preprocessor="ElmoPreprocessor",
    multiple_choice=None, fine_tuning_optimizer=adam(1e-3),
    demo_config={"num_layers": 2, "hidden_dim": 64, "lstm_dim": 256, "num_highway": 1,
                 "filters": [[1, 32], [2, 32], [3, 64], [4, 128]]},
    exporters={"bilm": "keras_pretrain.models.elmo.elmo_export:export_bilm"},
    converters={"bilm": "keras_pretrain.models.elmo.elmo_convert:convert_bilm",
                "tf1_hub": "keras_pretrain.models.elmo.elmo_convert:convert_tf1_hub"}))
