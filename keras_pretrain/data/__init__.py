"""Pretraining data: corpus reading, instance building, masking strategies, TFRecords and tf.data pipelines."""

from keras_pretrain.data.corpus import CorpusStats, read_documents, split_sentences
from keras_pretrain.data.instances import (
    TrainingInstance,
    create_doc_sentences,
    create_full_sentences,
    create_instances,
    create_lm_stream,
    create_nsp_instances,
    create_sop_instances,
)
from keras_pretrain.data.masking import (
    KnowledgeMasking,
    MaskedLmOutput,
    MaskingStrategy,
    NgramMasking,
    TokenMasking,
    WholeWordMasking,
    get_masking,
)
