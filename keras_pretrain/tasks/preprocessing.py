"""A family's text preprocessor: its tokenizer and its packing, the one object every text path uses.

`recipes.finetune` (NumPy inputs for `fit`), the serving SavedModels (`keras_pretrain.export.serving`: the
same packing in-graph) and the TF-Hub preprocessor SavedModels (`keras_pretrain.export.preprocessors`: special
ids, word boundaries) all ask the family's preprocessor (`Family.preprocessor_class(family, tokenizer)`):

- `TextPreprocessor`: in-graph tokenizers (WordPiece, SentencePiece, byte-level BPE) with an in-graph packing
  (`keras_pretrain.data.packing`: BERT, RoBERTa, XLNet and any family registered with one of them);
- `GPTTextPreprocessor`: GPT-1's Python BPE and its input transformations (start / delimiter / extract tokens
  added to the vocabulary); its serving model takes token ids;
- `ElmoTextPreprocessor`: words as characters (`A ||| B` for a pair), no tokenizer.
"""

from keras_pretrain.errors import ConfigError

# Space markers of SentencePiece and of the byte-level BPE (GPT-2 / RoBERTa's byte-to-unicode map: space,
# tab, newline, carriage return, form feed, vertical tab).
SENTENCEPIECE_SPACE = "\u2581"
BPE_SPACES = tuple(chr(256 + b) for b in range(33) if chr(b).isspace()) + ("\u0120",)
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
    """Per vocabulary id: whether the piece begins a word.

    WordPiece: a piece without the `##` prefix; SentencePiece: a piece starting with `▁`; byte-level BPE: a
    piece starting with a whitespace byte. (Each row's first piece also starts a word.)
    """
    import keras_hub
    import numpy as np

    vocabulary = tokenizer.get_vocabulary()
    if isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        suffix = getattr(tokenizer, "suffix_indicator", "##")
        starts = [not piece.startswith(suffix) for piece in vocabulary]
    elif isinstance(tokenizer, keras_hub.tokenizers.SentencePieceTokenizer):
        starts = [piece.startswith(SENTENCEPIECE_SPACE) for piece in vocabulary]
    elif isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer):
        starts = [piece.startswith(BPE_SPACES) for piece in vocabulary]
    else:
        raise ConfigError(
            f"{type(tokenizer).__name__}: no words level known (WordPiece, SentencePiece or "
            "byte-level BPE tokenizers only)."
        )
    return np.asarray(starts, bool)


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
        import keras_hub

        space = isinstance(self.tokenizer, keras_hub.tokenizers.BytePairTokenizer)
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
        """The family's multiple-choice task on `backbone` (`keras_pretrain.tasks.multiple_choice.for_backbone`)."""
        from keras_pretrain.tasks.multiple_choice import for_backbone

        return for_backbone(backbone)

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


class GPTTextPreprocessor(TextPreprocessor):
    """GPT-1: the BPE runs in Python; the start / delimiter / extract tokens are added at fine-tuning."""

    takes_strings = False

    def build_classifier(self, backbone, num_classes, pair, seed, problem_type="single_label_classification"):
        from keras_pretrain.models.gpt import expand_vocabulary

        tokens = list(self.packing.special_tokens)
        special = self.tokenizer.add_special_tokens(tokens)
        backbone = expand_vocabulary(backbone, len(tokens), seed=seed)
        task = "entailment" if pair else "classification"
        return self.family.classifier_class(backbone, num_classes=num_classes, task=task,
                                            problem_type=problem_type), special

    def encode(self, columns, seq_length, special):
        from keras_pretrain.models.gpt import transform_inputs

        ids = [token_ids(self.tokenizer, column) for column in columns]
        task = "classification" if len(ids) == 1 else "entailment"
        examples = ids[0] if len(ids) == 1 else list(zip(*ids))
        return transform_inputs(task, examples, *special, seq_length)

    def build_multiple_choice(self, backbone, seed):
        """`GPTClassifier(task="multiple_choice")` on `backbone` with the special tokens added (to the tokenizer
        and, randomly initialised, to the embedding), as `build_classifier`."""
        from keras_pretrain.models.gpt import expand_vocabulary
        from keras_pretrain.tasks.multiple_choice import for_backbone

        tokens = list(self.packing.special_tokens)
        self.tokenizer.add_special_tokens(tokens)
        return for_backbone(expand_vocabulary(backbone, len(tokens), seed=seed))

    def encode_choices(self, contexts, endings, seq_length, special=None):
        """`start context delimiter ending_c extract` per choice (`transform_inputs`), `[B, C, seq_length]`;
        `special` None: the ids of the special tokens `build_multiple_choice` added."""
        from keras_pretrain.models.gpt import transform_inputs

        choice_count(contexts, endings)
        if special is None:
            missing = [t for t in self.packing.special_tokens if t not in self.tokenizer.vocabulary]
            if missing:
                raise ConfigError(f"{self.name}: the tokenizer has no {missing}; build_multiple_choice (or "
                                  "build_classifier) adds them.")
            special = [self.tokenizer.vocabulary[t] for t in self.packing.special_tokens]
        examples = [(context, token_ids(self.tokenizer, row))
                    for context, row in zip(token_ids(self.tokenizer, contexts), endings)]
        return transform_inputs("multiple_choice", examples, *special, seq_length)

    def serving_inputs(self, pair):
        return ("token_ids", "padding_mask")

    def serving_specs(self, tf, classifier, pair):
        return [tf.TensorSpec(classifier.input[n].shape, tf.int32, name=n) for n in self.serving_inputs(pair)]

    def serving_encoder(self, tf, backbone, seq_length):
        return lambda token_ids, padding_mask: {"token_ids": token_ids, "padding_mask": padding_mask}

    def tracked_resources(self):
        return None


class ElmoTextPreprocessor(TextPreprocessor):
    """ELMo: words (`split_words`; in-graph the same RE2 rule) as characters, a pair as `A ||| B`."""

    def word_piece_ids(self, words):
        raise ConfigError(f"{self.name} reads characters: a word is its own unit (no token ids).")

    def build_classifier(self, backbone, num_classes, pair, seed, problem_type="single_label_classification"):
        return self.family.classifier_class(backbone, num_classes=num_classes, problem_type=problem_type), None

    def encode(self, columns, seq_length, special=None):
        from keras_pretrain.models.elmo import character_ids
        from keras_pretrain.models.elmo import split_words

        separator = [self.packing.separator]
        words = [sum((separator * (i > 0) + split_words(t) for i, t in enumerate(row)), [])
                 for row in zip(*columns)]
        return {"char_ids": character_ids(words, sequence_length=seq_length)}

    def serving_encoder(self, tf, backbone, seq_length):
        from keras_pretrain.models.elmo import ElmoCharacterMapper

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
