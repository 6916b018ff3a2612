"""ELMo's tokenizer: strings to character ids in the TensorFlow graph (`ElmoCharacterMapper`).

The character scheme itself (bilm-tf / AllenNLP ids, the NumPy reference
`character_ids`, the in-graph `graph_character_ids`), the word splitter and
the word vocabulary's special tokens are in `keras_pretrain.text`, which the
data pipeline uses too (the names the tests and benchmarks import from here
are re-exported).
"""

import keras

from keras_pretrain.models.preset_preprocessor import PreprocessingLayer
from keras_pretrain.models.preset_preprocessor import preprocessing_function
from keras_pretrain.text import BOS_CHAR  # noqa: F401 - re-exported
from keras_pretrain.text import BOW_CHAR  # noqa: F401 - re-exported
from keras_pretrain.text import EOS_CHAR  # noqa: F401 - re-exported
from keras_pretrain.text import EOW_CHAR  # noqa: F401 - re-exported
from keras_pretrain.text import MAX_CHARACTERS
from keras_pretrain.text import PAD_CHAR  # noqa: F401 - re-exported
from keras_pretrain.text import PY_WHITESPACE
from keras_pretrain.text import character_ids  # noqa: F401 - re-exported
from keras_pretrain.text import graph_character_ids
from keras_pretrain.text import split_words  # noqa: F401 - re-exported


def split_sentences(sentences):
    """Ragged words of a 1-D string tensor, split as Python's `str.split()` splits, in-graph.

    Every Python whitespace character (`str.isspace()`: U+3000, U+00A0,
    U+2028, U+0085, U+001C..U+001F, ...) separates words; no word is empty;
    a NUL is an ordinary character inside a word, as in Python. (Not
    tensorflow-text's `regex_split`: it ends each string at its first NUL.)
    """
    import tensorflow as tf

    spaced = tf.strings.regex_replace(sentences, PY_WHITESPACE, " ")
    return tf.strings.split(spaced)  # ASCII whitespace runs: all of it is " " now


@keras.saving.register_keras_serializable(package="keras_pretrain")
class ElmoCharacterMapper(PreprocessingLayer):
    """Strings to ELMo character ids, in the TensorFlow graph.

    Computes exactly `character_ids` (NumPy) with `tf.strings` / `tf.io` ops
    (`keras_pretrain.text.graph_character_ids`), so it runs inside `tf.data`
    pipelines and exported SavedModels. A keras-hub
    `PreprocessingLayer`: TensorFlow code whatever the Keras backend (use it in
    `tf.data`, feed its output to the model); called eagerly it returns backend
    tensors.

    Args:
        max_characters: int. Characters per token (50).
        add_sentence_boundaries: bool. Add the `<S>` / `</S>` tokens.
        sequence_length: int or None. Fixed number of tokens of the output
            (words truncated, boundaries kept); default: the longest row.

    Inputs: a `tf.RaggedTensor` of words (B, None); a dense string tensor
    (B, T) whose trailing empty strings are padding (an empty string before a
    real token is an empty token, see `keras_pretrain.text`); or a 1-D tensor
    of sentences, split as Python's `str.split()` splits (`split_sentences`:
    bilm-tf reads `sentence.split()`; pre-tokenized text).
    Output: int32 (B, W, max_characters).

    Special tokens: ELMo has no special-token ids (a word is its characters'
    ids), so there is no `special_tokens_in_strings` option as the other
    families' tokenizers have. `[MASK]`, `<mask>`, `<pad>`, ... in the text
    are words like any other; only the words `<S>` and `</S>` get the
    sentence-boundary patterns, as in bilm-tf and AllenNLP (see
    `keras_pretrain.text`).

    Example:
    ```python
    mapper = ElmoCharacterMapper(sequence_length=16)
    ids = mapper(tf.ragged.constant([["Gold", ",", "surely"]]))  # (1, 16, 50)
    ```
    """

    def __init__(
        self,
        max_characters=MAX_CHARACTERS,
        add_sentence_boundaries=True,
        sequence_length=None,
        **kwargs,
    ):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self.max_characters = max_characters
        self.add_sentence_boundaries = add_sentence_boundaries
        self.sequence_length = sequence_length

    @preprocessing_function
    def call(self, inputs):
        import tensorflow as tf

        if not isinstance(inputs, tf.RaggedTensor):
            inputs = tf.convert_to_tensor(inputs)
            if inputs.shape.rank == 1:
                inputs = split_sentences(inputs)
        return graph_character_ids(
            inputs, self.max_characters, self.add_sentence_boundaries, self.sequence_length
        )

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.sequence_length, self.max_characters)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_characters": self.max_characters,
                "add_sentence_boundaries": self.add_sentence_boundaries,
                "sequence_length": self.sequence_length,
            }
        )
        return config
