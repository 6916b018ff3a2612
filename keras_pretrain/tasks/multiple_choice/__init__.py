"""Multiple choice (SWAG, RACE, ARC, COPA), one place: the head (`head.MultipleChoice`, `for_backbone`: the
family's multiple-choice task), the SWAG and RACE files and their features (`data`) and the serving SavedModel
(`serving`: a context and its endings in, the choice out; TensorFlow, imported when first used)."""

from keras_pretrain import lazy
from keras_pretrain.tasks.multiple_choice import data
from keras_pretrain.tasks.multiple_choice.data import ChoiceExample
from keras_pretrain.tasks.multiple_choice.data import ChoiceFeatures
from keras_pretrain.tasks.multiple_choice.data import choice_feature_dataset
from keras_pretrain.tasks.multiple_choice.data import convert_choice_examples
from keras_pretrain.tasks.multiple_choice.data import read_race
from keras_pretrain.tasks.multiple_choice.data import read_swag
from keras_pretrain.tasks.multiple_choice.data import write_choice_features
from keras_pretrain.tasks.multiple_choice.head import MultipleChoice
from keras_pretrain.tasks.multiple_choice.head import for_backbone

# The serving graph (TensorFlow when it runs; it imports keras_pretrain.export), imported when first used.
_SERVING = ("serving", "CHOICE_OUTPUTS", "choice_inputs", "export_choice_serving", "is_multiple_choice")


__getattr__ = lazy.attributes(__name__, lazy.from_module("keras_pretrain.tasks.multiple_choice.serving", _SERVING))
