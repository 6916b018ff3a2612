"""Old path of `keras_pretrain.tasks.token_classification.elmo_tagger` (ELMo's tagger), kept for its importers."""

from keras_pretrain.tasks.token_classification.elmo_tagger import ElmoTagger  # noqa: F401
