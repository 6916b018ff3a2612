"""ELMo's text preprocessor (`Family.preprocessor`): words (`split_words`; in-graph the same RE2 rule) as
characters, a pair as `A ||| B`, no tokenizer."""

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.elmo.elmo_tokenizer import ElmoCharacterMapper
from keras_pretrain.models.text_preprocessor import TextPreprocessor
from keras_pretrain.text import character_ids
from keras_pretrain.text import split_words


class ElmoTextPreprocessor(TextPreprocessor):
    """ELMo: words (`split_words`; in-graph the same RE2 rule) as characters, a pair as `A ||| B`."""

    def word_piece_ids(self, words):
        raise ConfigError(f"{self.name} reads characters: a word is its own unit (no token ids).")

    def build_classifier(self, backbone, num_classes, pair, seed, problem_type="single_label_classification"):
        return self.family.classifier_class(backbone, num_classes=num_classes, problem_type=problem_type), None

    def encode(self, columns, seq_length, special=None):
        separator = [self.packing.separator]
        words = [sum((separator * (i > 0) + split_words(t) for i, t in enumerate(row)), [])
                 for row in zip(*columns)]
        return {"char_ids": character_ids(words, sequence_length=seq_length)}

    def serving_encoder(self, tf, backbone, seq_length):
        mapper = ElmoCharacterMapper(max_characters=backbone.max_characters, sequence_length=seq_length)
        separator_token = self.packing.separator

        def encode(*texts):
            words = [elmo_words(tf, t) for t in texts]
            if len(words) == 2:
                rows = words[0].nrows()
                separator = tf.RaggedTensor.from_tensor(tf.fill(tf.stack([rows, 1]), separator_token))
                words = [tf.concat([words[0], separator, words[1]], axis=1)]
            return {"char_ids": mapper(words[0])}

        return encode

    def tracked_resources(self):
        return None


# `keras_pretrain.models.elmo.split_words` in RE2: each CJK ideograph and each punctuation mark is a word; runs
# of letters, digits and "_" are words.
_CJK = r"\x{3400}-\x{9fff}\x{f900}-\x{faff}"
_ELMO_KEEP = rf"[{_CJK}]|[^\p{{L}}\p{{N}}_\s]"
_ELMO_DELIMITERS = rf"\s+|{_ELMO_KEEP}"


def elmo_words(tf, texts):
    """Ragged words of each string, as `split_words` (in-graph)."""
    import tensorflow_text as tf_text

    return tf_text.regex_split(texts, _ELMO_DELIMITERS, _ELMO_KEEP)
