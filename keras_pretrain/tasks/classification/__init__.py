"""Sequence classification (GLUE, regression, multi-label), one place: the head (`head.SequenceClassifier`), GLUE's
files (`glue`: the authors' processors), their features (`features`: the authors' records), the submission files
(`submission`), the metrics (`metrics`: GLUE's, NumPy and Keras) and the serving SavedModel (`serving`: strings in,
labels out; TensorFlow, imported when first used)."""

from keras_pretrain import lazy
from keras_pretrain.tasks.classification import features
from keras_pretrain.tasks.classification import glue
from keras_pretrain.tasks.classification import metrics
from keras_pretrain.tasks.classification import submission
from keras_pretrain.tasks.classification.glue import TASKS
from keras_pretrain.tasks.classification.glue import Example
from keras_pretrain.tasks.classification.glue import GlueTask
from keras_pretrain.tasks.classification.glue import get_task
from keras_pretrain.tasks.classification.glue import read_file
from keras_pretrain.tasks.classification.glue import read_split
from keras_pretrain.tasks.classification.features import convert_examples_to_features
from keras_pretrain.tasks.classification.features import feature_dataset
from keras_pretrain.tasks.classification.features import write_features
from keras_pretrain.tasks.classification.head import ENCODER_INPUTS
from keras_pretrain.tasks.classification.head import SequenceClassifier
from keras_pretrain.tasks.classification.head import character_mask
from keras_pretrain.tasks.classification.head import task_inputs
from keras_pretrain.tasks.classification.metrics import GLUE_METRIC
from keras_pretrain.tasks.classification.metrics import GLUE_TASKS
from keras_pretrain.tasks.classification.metrics import BinaryF1
from keras_pretrain.tasks.classification.metrics import MatthewsCorrelation
from keras_pretrain.tasks.classification.metrics import PearsonCorrelation
from keras_pretrain.tasks.classification.metrics import SpearmanCorrelation
from keras_pretrain.tasks.classification.metrics import accuracy
from keras_pretrain.tasks.classification.metrics import f1
from keras_pretrain.tasks.classification.metrics import glue_keras_metrics
from keras_pretrain.tasks.classification.metrics import glue_metrics
from keras_pretrain.tasks.classification.metrics import glue_task
from keras_pretrain.tasks.classification.metrics import matthews_corrcoef
from keras_pretrain.tasks.classification.metrics import pearson
from keras_pretrain.tasks.classification.metrics import spearman
from keras_pretrain.tasks.classification.submission import read_submission
from keras_pretrain.tasks.classification.submission import write_submission

# The serving graph (TensorFlow when it runs; it imports keras_pretrain.export), imported when first used.
_SERVING = ("serving", "export_serving", "head_outputs", "num_classes_of", "outputs_of", "text_inputs")


__getattr__ = lazy.attributes(__name__, lazy.from_module("keras_pretrain.tasks.classification.serving", _SERVING))
