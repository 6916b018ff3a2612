"""The GPT-1 family's registry entry (imported by `keras_pretrain.models.gpt`)."""

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.families import Family
from keras_pretrain.families import adamw
from keras_pretrain.families import huggingface_converter
from keras_pretrain.families import huggingface_exporter
from keras_pretrain.layers import initializers
from keras_pretrain.layers import summaries
from keras_pretrain.models.gpt.gpt_contract import GPT_CONTRACT

GPT = families.register(Family(
    "gpt", "GPTBackbone", "GPTCausalLM", "GPTClassifier", "GPTTokenizer", contract=GPT_CONTRACT,
    packing=packing.GPT, vocabulary=families.BPE, kind=families.CAUSAL_LM, objective=families.CAUSAL_LM,
    objectives=(families.CAUSAL_LM,), casing=False, demo_config=families.TINY_ENCODER, huggingface=("openai-gpt",),
    exporters=huggingface_exporter("gpt"),
    summary=summaries.SequenceSummary(summaries.ExtractToken, initializer=initializers.normal_kernel_initializer),
    preprocessor="keras_pretrain.models.gpt.gpt_text:GPTTextPreprocessor", keras_preprocessor="GPTPreprocessor",
    multiple_choice="GPTClassifier", multiple_choice_options={"task": "multiple_choice"},
    fine_tuning_optimizer=adamw(6.25e-5, weight_decay=0.01),
    converters={**huggingface_converter("gpt"), "openai": "keras_pretrain.models.gpt.gpt_convert:convert_openai"}))
