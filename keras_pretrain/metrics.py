"""The task metrics, by their public path: GLUE's (`keras_pretrain.tasks.classification.metrics`: NumPy functions
and streaming Keras metrics) and CoNLL NER's entity-level ones (`keras_pretrain.tasks.token_classification.metrics`).
"""

from keras_pretrain.tasks.classification.metrics import GLUE_METRIC
from keras_pretrain.tasks.classification.metrics import GLUE_TASKS
from keras_pretrain.tasks.classification.metrics import BinaryF1
from keras_pretrain.tasks.classification.metrics import MatthewsCorrelation
from keras_pretrain.tasks.classification.metrics import PearsonCorrelation
from keras_pretrain.tasks.classification.metrics import SpearmanCorrelation
from keras_pretrain.tasks.classification.metrics import accuracy
from keras_pretrain.tasks.classification.metrics import average_ranks
from keras_pretrain.tasks.classification.metrics import f1
from keras_pretrain.tasks.classification.metrics import glue_keras_metrics
from keras_pretrain.tasks.classification.metrics import glue_metrics
from keras_pretrain.tasks.classification.metrics import glue_task
from keras_pretrain.tasks.classification.metrics import matthews_corrcoef
from keras_pretrain.tasks.classification.metrics import pearson
from keras_pretrain.tasks.classification.metrics import spearman
from keras_pretrain.tasks.token_classification.metrics import ENTITY_PREFIXES
from keras_pretrain.tasks.token_classification.metrics import entities
from keras_pretrain.tasks.token_classification.metrics import entity_scores
from keras_pretrain.tasks.token_classification.metrics import split_tag

__all__ = [
    "GLUE_METRIC", "GLUE_TASKS", "BinaryF1", "MatthewsCorrelation", "PearsonCorrelation", "SpearmanCorrelation",
    "accuracy", "average_ranks", "f1", "glue_keras_metrics", "glue_metrics", "glue_task", "matthews_corrcoef",
    "pearson", "spearman", "ENTITY_PREFIXES", "entities", "entity_scores", "split_tag",
]
