"""Token classification (NER, tagging), one place: the heads (`head.TokenClassifier`; ELMo's `elmo_tagger.ElmoTagger`
and its `crf`), CoNLL files (`conll`), the sub-word features of words and their labels (`features`, the word
alignment in `alignment`), the entity-level metrics (`metrics`) and the serving SavedModel (`serving`: text in,
entities out; TensorFlow, imported when first used)."""

from keras_pretrain import lazy
from keras_pretrain.tasks.token_classification import alignment
from keras_pretrain.tasks.token_classification import conll
from keras_pretrain.tasks.token_classification import features
from keras_pretrain.tasks.token_classification import metrics
from keras_pretrain.tasks.token_classification.conll import Sentence
from keras_pretrain.tasks.token_classification.conll import as_iob2
from keras_pretrain.tasks.token_classification.conll import read_conll
from keras_pretrain.tasks.token_classification.conll import read_predictions
from keras_pretrain.tasks.token_classification.conll import to_iob2
from keras_pretrain.tasks.token_classification.conll import write_predictions
from keras_pretrain.tasks.token_classification.crf import ConditionalRandomField
from keras_pretrain.tasks.token_classification.crf import crf_loss
from keras_pretrain.tasks.token_classification.crf import crf_mask
from keras_pretrain.tasks.token_classification.elmo_tagger import ElmoTagger
from keras_pretrain.tasks.token_classification.features import TaggingFeature
from keras_pretrain.tasks.token_classification.features import convert_sentences_to_features
from keras_pretrain.tasks.token_classification.features import text_words
from keras_pretrain.tasks.token_classification.features import word_entities
from keras_pretrain.tasks.token_classification.features import word_predictions
from keras_pretrain.tasks.token_classification.head import IGNORE
from keras_pretrain.tasks.token_classification.head import TokenAccuracy
from keras_pretrain.tasks.token_classification.head import TokenClassifier
from keras_pretrain.tasks.token_classification.head import TokenLoss
from keras_pretrain.tasks.token_classification.metrics import entities
from keras_pretrain.tasks.token_classification.metrics import entity_scores
from keras_pretrain.tasks.token_classification.metrics import split_tag

# The serving graph (TensorFlow when it runs; it imports keras_pretrain.export), imported when first used.
_SERVING = ("serving", "export_tagging_serving")


__getattr__ = lazy.attributes(__name__, lazy.from_module("keras_pretrain.tasks.token_classification.serving", _SERVING))
