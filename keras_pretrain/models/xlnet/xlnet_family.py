"""The XLNet family's registry entry (imported by `keras_pretrain.models.xlnet`)."""

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.export import contracts
from keras_pretrain.families import Family
from keras_pretrain.families import adamw
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.layers import initializers
from keras_pretrain.layers import summaries

# XLNet's head (`XLNetForSequenceClassification`, `summary_type="last"`): Dense(H, tanh) on the last position
# (`<cls>`: inputs are left-padded), `summary_last_dropout`, then the output layer.
XLNET = families.register(Family(
    "xlnet", "XLNetBackbone", "XLNetPretrainer", "XLNetClassifier", "XLNetTokenizer",
    contract=contracts.XLNET, packing=packing.XLNET, vocabulary=families.WORDPIECE, kind=families.PERMUTATION_LM,
    objective=families.PERMUTATION_LM, objectives=(families.PERMUTATION_LM,), demo_config=families.TINY_ENCODER,
    positions=False, huggingface=("xlnet",), exporters=huggingface_exporter("xlnet"),
    keras_preprocessor="XLNetPreprocessor",
    summary=summaries.SequenceSummary(summaries.LastToken, activation="tanh", projection="summary_dense",
                                      projection_name="summary", initializer=initializers.normal_kernel_initializer),
    fine_tuning_optimizer=adamw(2e-5, weight_decay=0.01),
    converters={**huggingface_converter("xlnet"), "tf1": "keras_pretrain.models.xlnet.xlnet_convert:convert_tf1"}))
