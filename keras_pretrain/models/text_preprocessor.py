"""A family's text preprocessor (`Family.preprocessor`): its tokenizer and its packing, the one object every
text path uses (formerly `keras_pretrain.tasks.preprocessing`, which still re-exports it).

`recipes.finetune` (NumPy inputs for `fit`), the serving SavedModels (`keras_pretrain.export.serving`: the
same packing in-graph) and the TF-Hub preprocessor SavedModels (`keras_pretrain.export.preprocessor_savedmodel`: special
ids, word boundaries) all ask the family's preprocessor (`Family.preprocessor_class(family, tokenizer)`):

- `TextPreprocessor`: in-graph tokenizers (WordPiece, SentencePiece, byte-level BPE) with an in-graph packing
  (`keras_pretrain.data.packing`: BERT, RoBERTa, XLNet and any family registered with one of them);
- `GPTTextPreprocessor` (`keras_pretrain/models/gpt/gpt_text.py`): GPT-1's Python BPE and its input
  transformations (start / delimiter / extract tokens added to the vocabulary); its serving model takes token ids;
- `ElmoTextPreprocessor` (`keras_pretrain/models/elmo/elmo_text.py`): words as characters (`A ||| B` for a pair),
  no tokenizer.
"""

from keras_pretrain import lazy
from keras_pretrain.errors import ConfigError
from keras_pretrain.models import pieces
from keras_pretrain.models.pieces import BPE_SPACES  # noqa: F401 (re-exported)
from keras_pretrain.models.pieces import SENTENCEPIECE_SPACE  # noqa: F401 (re-exported)

# `run_squad.py`'s `is_whitespace` (BERT, ALBERT): the separators of a paragraph's words.
SQUAD_WHITESPACE = frozenset(" \t\r\n\u202f")


def special_id(tokenizer, *names):
    """The id of the first of the tokenizer's `<name>_token_id` / `<name>_token` that exists (ConfigError
    naming the token otherwise)."""
    for name in names:
        value = getattr(tokenizer, f"{name}_token_id", None)
        if value is not None:
            return int(value)
        token = getattr(tokenizer, f"{name}_token", None)
        if token is not None and token in tokenizer.get_vocabulary():
            return int(tokenizer.token_to_id(token))
    raise ConfigError(
        f"{type(tokenizer).__name__}: no {names[0]} token id; the preprocessor needs cls, sep and pad tokens."
    )


def word_starts(tokenizer):
    """Per vocabulary id: whether the piece begins a word (`keras_pretrain.models.pieces`).

    WordPiece: a piece without the `##` prefix; SentencePiece: a piece starting with `▁`; byte-level BPE: a
    piece starting with a whitespace byte. (Each row's first piece also starts a word.)
    """
    import numpy as np

    convention = pieces.of(tokenizer)
    suffix = getattr(tokenizer, "suffix_indicator", None)
    return np.asarray([convention.starts_word(piece, suffix) for piece in tokenizer.get_vocabulary()], bool)


def choice_count(contexts, endings):
    """The number of endings per context (the same for every one; ConfigError otherwise)."""
    if len(contexts) != len(endings):
        raise ConfigError(f"encode_choices: {len(contexts)} contexts but {len(endings)} lists of endings.")
    counts = sorted({len(row) for row in endings})
    if len(counts) > 1 or (counts and counts[0] == 0):
        raise ConfigError(f"encode_choices: every context needs the same number of endings (at least one); "
                          f"found {counts}.")
    return counts[0] if counts else 0


def token_ids(tokenizer, texts):
    """Lists of token ids (no special tokens), from a keras-hub or Python tokenizer."""
    if hasattr(tokenizer, "tokenize_to_pieces"):  # GPTTokenizer (Python)
        return [tokenizer.tokenize(t) for t in texts]
    ids = tokenizer(list(texts))
    return ids.to_list() if hasattr(ids, "to_list") else [list(map(int, row)) for row in ids]


class TextPreprocessor:
    """Tokenizer + the family's packing (see the module docstring).

    Args:
        family: the `keras_pretrain.families.Family`.
        tokenizer: the family's tokenizer (an in-graph keras-hub tokenizer here).
        packing: another packing than the family's (a tokenizer of no family: `family=None`).
    """

    takes_strings = True  # the serving model's inputs are strings

    def __init__(self, family, tokenizer, packing=None):
        self.family = family
        self.packing = packing or family.packing
        self.tokenizer = tokenizer
        self.name = family.name if family is not None else type(tokenizer).__name__

    # --- special tokens and words ---------------------------------------------------------------

    def special_ids(self, with_mask=False):
        """`cls`, `sep`, `pad` (and `mask`, -1 where the vocabulary has none) ids of the tokenizer."""
        names = self.packing.special_names
        if self.tokenizer is None or not hasattr(self.tokenizer, "get_vocabulary"):
            raise ConfigError(f"{self.name}: serving strings needs the model's in-graph tokenizer; "
                              f"got {self.tokenizer!r}.")
        ids = {key: special_id(self.tokenizer, *names[key]) for key in ("cls", "sep", "pad")}
        if with_mask:
            try:
                ids["mask"] = special_id(self.tokenizer, *names["mask"])
            except ConfigError:
                ids["mask"] = -1
        return ids

    def word_starts(self):
        """Per vocabulary id: whether the piece begins a word (`word_starts`)."""
        return word_starts(self.tokenizer)

    def words(self, text):
        """The words of `text` with their character offsets: `[(word, start, end)]`, `text[start:end] == word`.

        Words are separated by whitespace as the authors' `run_squad.py` reads a paragraph (`is_whitespace`:
        space, tab, CR, LF and U+202F), the word level the span QA and tagging tasks align labels to.
        """
        result, start = [], None
        for i, char in enumerate(text):
            if char in SQUAD_WHITESPACE:
                if start is not None:
                    result.append((text[start:i], start, i))
                start = None
            elif start is None:
                start = i
        if start is not None:
            result.append((text[start:], start, len(text)))
        return result

    def word_piece_ids(self, words):
        """Per word, its token ids (the tokenizer on the word alone, as `run_squad.py`'s `all_doc_tokens`;
        a byte-level BPE word after the first gets its leading space, as in running text)."""
        space = pieces.of(self.tokenizer).byte_level
        texts = [(" " + w if i and space else w) for i, w in enumerate(words)]
        return token_ids(self.tokenizer, texts) if texts else []

    # --- fine-tuning (NumPy) -------------------------------------------------------------------------

    def build_classifier(self, backbone, num_classes, pair, seed, problem_type="single_label_classification"):
        """`(classifier, special)`: the family's classifier on `backbone` (`problem_type` as
        `SequenceClassifier`'s), and the ids `encode` packs with."""
        classifier = self.family.classifier_class(backbone, num_classes=num_classes, problem_type=problem_type)
        ids = self.special_ids()
        return classifier, (ids["cls"], ids["sep"])

    def encode(self, columns, seq_length, special):
        """Model inputs (NumPy arrays) for the text columns (one, or two for pairs), packed as the family
        packs (segments trimmed round-robin, as the serving SavedModel does)."""
        ids = [token_ids(self.tokenizer, column) for column in columns]
        pad = self.tokenizer.token_to_id(self.tokenizer.pad_token)
        rows = [self.packing.pack_lists(list(segments), *special, seq_length=seq_length) for segments in zip(*ids)]
        return self.packing.pad_rows(rows, seq_length, pad)

    # --- multiple choice (NumPy) ---------------------------------------------------------------------

    def build_multiple_choice(self, backbone, seed):
        """The family's multiple-choice task on `backbone` (`keras_pretrain.tasks.multiple_choice.for_backbone`:
        `Family.multiple_choice` with its options; ConfigError for a family that declares none)."""
        from keras_pretrain import families

        family = families.family_of(backbone)
        if family.multiple_choice is None:
            raise ConfigError(f"{family.name}: the family declares no multiple-choice task (Family.multiple_choice).")
        return family.multiple_choice_class(backbone, **family.multiple_choice_options)

    def encode_choices(self, contexts, endings, seq_length, special=None):
        """`[B, C, seq_length]` NumPy inputs of a multiple-choice task: choice `c` of example `b` is the family's
        pair `(contexts[b], endings[b][c])`, packed as `encode` packs a pair (`special`: None for the
        tokenizer's cls / sep ids)."""
        count = choice_count(contexts, endings)
        if special is None:
            ids = self.special_ids()
            special = (ids["cls"], ids["sep"])
        firsts = [context for context, row in zip(contexts, endings) for _ in row]
        seconds = [ending for row in endings for ending in row]
        x = self.encode([firsts, seconds], seq_length, special)
        return {name: value.reshape((len(contexts), count) + value.shape[1:]) for name, value in x.items()}

    # --- serving (in-graph) ------------------------------------------------------------------------

    def serving_inputs(self, pair):
        """Names of the serving signature's inputs."""
        return ("text_a", "text_b") if pair else ("text",)

    def serving_specs(self, tf, classifier, pair):
        return [tf.TensorSpec([None], tf.string, name=n) for n in self.serving_inputs(pair)]

    def serving_encoder(self, tf, backbone, seq_length):
        """A function of the signature's string tensors -> the encoder inputs (in-graph)."""
        ids = self.special_ids()
        tokenizer, packing = self.tokenizer, self.packing

        def tokenize(texts):
            result = tokenizer(texts)
            if not isinstance(result, tf.RaggedTensor):
                result = tf.RaggedTensor.from_tensor(result)
            return tf.cast(result, tf.int32)

        def encode(*texts):  # as `encode` packs for training
            return packing.pack_ragged(tf, [tokenize(t) for t in texts], seq_length, ids)

        return encode

    def tracked_resources(self):
        """What the serving SavedModel must track (the tokenizer's vocabulary tables, SentencePiece model)."""
        return self.tokenizer


# The GPT-1 and ELMo text preprocessors live in their family folders (`Family.preprocessor` names them); their
# old names here still resolve.
_MOVED = {
    "GPTTextPreprocessor": "keras_pretrain.models.gpt.gpt_text",
    "ElmoTextPreprocessor": "keras_pretrain.models.elmo.elmo_text",
    "elmo_words": "keras_pretrain.models.elmo.elmo_text",
}


__getattr__ = lazy.attributes(__name__, _MOVED)
