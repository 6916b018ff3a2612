"""Pretraining data: corpus reading, instance building, masking strategies, TFRecords and tf.data pipelines.

The pure-Python parts (corpus, instances, masking) are importable without TensorFlow; `DynamicMasking`,
the TFRecord functions and `pretraining_dataset` import it when first used.
"""

from keras_pretrain import lazy
from keras_pretrain.data.corpus import CorpusStats, expand_paths, read_documents, split_sentences
from keras_pretrain.data.features import FEATURE_NAMES, instance_to_features, instances_to_arrays
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

_LAZY = {
    "DynamicMasking": "keras_pretrain.data.dynamic",
    "read_tfrecords": "keras_pretrain.data.tfrecords",
    "write_instances": "keras_pretrain.data.tfrecords",
    "shard_paths": "keras_pretrain.data.tfrecords",
    "pretraining_dataset": "keras_pretrain.data.pipeline",
    "create_training_instances": "keras_pretrain.data.pipeline",
    "tokenize_documents": "keras_pretrain.data.pipeline",
    "ShardBuilder": "keras_pretrain.data.shards",
    "StaticDataSettings": "keras_pretrain.data.shards",
    "target_counts": "keras_pretrain.data.baselines",
    "unigram_accuracy": "keras_pretrain.data.baselines",
    "lm_blocks": "keras_pretrain.data.lm",
    "lm_dataset": "keras_pretrain.data.lm",
    "build_word_vocabulary": "keras_pretrain.data.words",
    "elmo_pretraining_dataset": "keras_pretrain.data.words",
}


__getattr__ = lazy.attributes(__name__, _LAZY)
