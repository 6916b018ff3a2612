"""GPT-1's keras-hub preprocessor: strings (one or two segments) -> `token_ids`, `padding_mask`.

GPT-1's BPE (`GPTTokenizer`) is pure Python: `transformers`' `OpenAIGPTTokenizer` pipeline (BERT's
normaliser, lower-cased, accents stripped, CJK split; BERT's pre-tokenizer; BPE over characters with the
`</w>` end-of-word suffix). keras-hub's in-graph `BytePairTokenizer` is GPT-2's byte-level BPE (bytes
mapped to printable characters, GPT-2's regex pre-split, a `Ġ` space marker, no end-of-word suffix), so it
cannot give GPT-1's pieces. This layer therefore runs the Python tokenizer and GPT-1's input
transformation (`transform_inputs`) through one `tf.numpy_function`: it works eagerly, inside
`tf.function` and inside `tf.data` (so `GPTClassifier.fit(strings)` works on every backend, keras-hub mapping
the preprocessor over a `tf.data` pipeline), but the step runs Python under the GIL (no parallel map
speed-up) and a SavedModel holding it cannot be served without this Python process.
"""

import keras
import keras_hub
import numpy as np

# private API: keras-hub's preset file access (`from_preset` reads `vocab.json` / `merges.txt` with it).
from keras_hub.src.utils.preset_utils import get_file

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt.gpt_backbone import GPTBackbone
from keras_pretrain.models.gpt.gpt_inputs import transform_inputs
from keras_pretrain.models.gpt.gpt_tokenizer import GPTTokenizer
from keras_pretrain.models.preset_preprocessor import check_file_exists
from keras_pretrain.models.preset_preprocessor import preprocessing_function

try:
    import tensorflow as tf
except ImportError:  # pragma: no cover - TF is a hard dependency
    tf = None

# GPT-1's input-transformation tokens (`keras_pretrain.data.packing.GPT.special_tokens`), in this order.
SPECIAL_TOKENS = ("_start_", "_delimiter_", "_classify_")


@keras.saving.register_keras_serializable(package="keras_pretrain")
class GPTPreprocessor(keras_hub.models.TextClassifierPreprocessor):
    """Strings (one or two segments) -> `token_ids`, `padding_mask` of GPT-1's input transformations.

    One segment is `start A extract` ("classification"), a pair `start A delimiter B extract`
    ("entailment"), padded on the right with id 0; the longer segment loses tokens from its end until the
    row fits (`pack_sequence`), so the extract token is always the last real one, where `GPTClassifier` reads.
    These are the inputs of the family's text preprocessor (`keras_pretrain.models.text_preprocessor.
    GPTTextPreprocessor`). The three special tokens are appended to a copy of the vocabulary when missing
    (as `GPTTextPreprocessor.build_classifier` does); the backbone must have room for them
    (`expand_vocabulary`).

    The BPE runs in Python (see the module docstring): eagerly, in `tf.function` and in `tf.data`, through
    `tf.numpy_function`.

    Args:
        vocabulary: dict token -> id, a token list, or a `vocab.json` path.
        merges: list of "a b" / (a, b) merges, or a `merges.txt` path.
        sequence_length: int. Packed length.
        unk_token: the unknown token.
        special_tokens_in_strings: bool. False (the default): special tokens written in the text (`"<unk>"`,
            `"_start_"`, ...) are text, so a string cannot inject them; True: read as their ids (see
            `GPTTokenizer`).
        tokenizer: a `GPTTokenizer` instead of `vocabulary` and `merges` (it is copied, not changed; its
            `special_tokens_in_strings` is kept).

    Example:
    ```python
    preprocessor = GPTPreprocessor(tokenizer=GPTTokenizer("vocab.json", "merges.txt"), sequence_length=64)
    classifier = GPTClassifier(expand_vocabulary(backbone, 3), num_classes=2, preprocessor=preprocessor)
    classifier.fit(["a good film", "a bad film"], [1, 0])
    ```
    """

    backbone_cls = GPTBackbone
    tokenizer_cls = None

    def __init__(self, vocabulary=None, merges=None, sequence_length=512, unk_token="<unk>", tokenizer=None,
                 special_tokens_in_strings=False, **kwargs):
        kwargs.pop("truncate", None)
        if tokenizer is not None:
            vocabulary, merges, unk_token = tokenizer.vocabulary, tokenizer.merges, tokenizer.unk_token
            special_tokens_in_strings = tokenizer.special_tokens_in_strings
        super().__init__(tokenizer=None, sequence_length=sequence_length, **kwargs)
        self.gpt_tokenizer = self.special_ids = None
        self.special_tokens_in_strings = bool(special_tokens_in_strings)
        if vocabulary is not None:  # GPTTokenizer copies the vocabulary: the special tokens go into the copy
            self.gpt_tokenizer = GPTTokenizer(vocabulary, merges or [], unk_token=unk_token,
                                              special_tokens_in_strings=self.special_tokens_in_strings)
            self.special_ids = tuple(self.gpt_tokenizer.add_special_tokens(list(SPECIAL_TOKENS)))
        self.unk_token = unk_token

    @classmethod
    def _add_missing_kwargs(cls, loader, kwargs):
        """keras-hub's `from_preset` (no `preprocessor.json`): the preset's `vocab.json` + `merges.txt` when it
        has them (a preset without them gives a preprocessor without vocabulary, which passes id dicts
        through), and the backbone's `max_sequence_length`."""
        if "vocabulary" not in kwargs and "tokenizer" not in kwargs:
            if all(check_file_exists(loader.preset, f) for f in ("vocab.json", "merges.txt")):
                kwargs["vocabulary"] = get_file(loader.preset, "vocab.json")
                kwargs["merges"] = get_file(loader.preset, "merges.txt")
        length = (loader.config.get("config") or {}).get("max_sequence_length")
        if "sequence_length" not in kwargs and length:
            kwargs["sequence_length"] = int(length)
        return kwargs

    def build(self, input_shape):
        self.built = True

    def vocabulary_size(self):
        """The vocabulary size with the special tokens (the backbone's `vocabulary_size`)."""
        return self.gpt_tokenizer.vocabulary_size()

    def encode(self, *segments):
        """NumPy `token_ids`, `padding_mask` [B, sequence_length] of one or two lists of strings."""
        if self.gpt_tokenizer is None:
            raise ConfigError("GPTPreprocessor: no vocabulary (pass `vocabulary` and `merges`, or `tokenizer`).")
        ids = [self.gpt_tokenizer.tokenize(list(segment)) for segment in segments]
        task = "classification" if len(ids) == 1 else "entailment"
        examples = ids[0] if len(ids) == 1 else list(zip(*ids))
        x = transform_inputs(task, examples, *self.special_ids, self.sequence_length)
        return x["token_ids"], x["padding_mask"]

    def _encode_bytes(self, *segments):
        texts = [[t.decode("utf-8") if isinstance(t, bytes) else str(t) for t in np.reshape(s, [-1])]
                 for s in segments]
        return self.encode(*texts)

    @preprocessing_function
    def call(self, x, y=None, sample_weight=None):
        if isinstance(x, dict):  # already the model's inputs (token ids)
            return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)
        x = x if isinstance(x, tuple) else (x,)
        segments = [tf.convert_to_tensor(segment, tf.string) for segment in x]
        unbatched = segments[0].shape.rank == 0
        segments = [tf.reshape(segment, [-1]) for segment in segments]
        token_ids, padding_mask = tf.numpy_function(self._encode_bytes, segments, [tf.int32, tf.int32],
                                                    stateful=False)
        shape = [None, self.sequence_length]
        token_ids.set_shape(shape)
        padding_mask.set_shape(shape)
        if unbatched:
            token_ids, padding_mask = token_ids[0], padding_mask[0]
        x = {"token_ids": token_ids, "padding_mask": padding_mask}
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def get_config(self):
        config = super().get_config()
        config.pop("truncate", None)
        tokenizer = self.gpt_tokenizer
        config.update({
            "vocabulary": None if tokenizer is None else dict(tokenizer.vocabulary),  # special tokens included
            "merges": None if tokenizer is None else [" ".join(m) for m in tokenizer.merges],
            "unk_token": self.unk_token,
            "special_tokens_in_strings": self.special_tokens_in_strings,
        })
        return config
