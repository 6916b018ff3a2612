"""Downstream tasks written once for every family (the family's `summary` / `token_states` decide how each
reads its backbone; see `keras_pretrain.families`)."""

from keras_pretrain.tasks.classification import SequenceClassifier
from keras_pretrain.tasks.multiple_choice import MultipleChoice
from keras_pretrain.tasks.question_answering import BeamQuestionAnswering
from keras_pretrain.tasks.question_answering import SpanQuestionAnswering
from keras_pretrain.tasks.token_classification import ElmoTagger
from keras_pretrain.tasks.token_classification import TokenClassifier
