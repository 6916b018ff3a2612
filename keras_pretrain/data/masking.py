"""Masked-LM masking strategies sharing one selection-and-replacement core (static, Python side).

`TokenMasking` (BERT), `WholeWordMasking` (BERT-wwm, English WordPiece and Chinese with a segmenter),
`NgramMasking` (ALBERT) and `KnowledgeMasking` (ERNIE 1.0) differ only in their *candidate units*: groups of
token positions masked together. The core (`MaskingStrategy.__call__`) is the original BERT procedure:
shuffle the candidates, take whole units until `num_to_predict = min(max_predictions,
max(1, round(len(tokens) * rate)))` positions are chosen (a unit that would overflow or overlap is
skipped), then replace each chosen position with [MASK] (80%), a random token (10%) or itself (10%).
Special tokens are never candidates.
"""

import dataclasses
import itertools
import operator
import random as random_lib

from keras_pretrain.data.instances import TrainingInstance
from keras_pretrain.errors import ConfigError

DEFAULT_SPECIAL_TOKENS = (
    "[CLS]", "[SEP]", "[PAD]", "[MASK]", "<s>", "</s>", "<pad>", "<mask>", "<cls>", "<sep>",
)


@dataclasses.dataclass
class MaskedLmOutput:
    """Result of masking one token sequence.

    Args:
        tokens: list of str, the tokens after replacement.
        masked_lm_positions: list of int, ascending.
        masked_lm_labels: list of str, the original tokens at those positions.
    """

    tokens: list
    masked_lm_positions: list
    masked_lm_labels: list


def _is_cjk_char(token):
    return len(token) == 1 and (
        "\u3400" <= token <= "\u4dbf" or "\u4e00" <= token <= "\u9fff" or "\uf900" <= token <= "\ufaff"
    )


def word_units(tokens, candidates, segmenter=None, continuation="##"):
    """Group candidate positions into whole words.

    A WordPiece starting with `continuation` joins the word before it. With a `segmenter` (a callable
    str -> list of words, e.g. `jieba.lcut`), each run of single CJK-character tokens is joined into a
    string and segmented; the characters of one word form one unit (Chinese BERT-wwm). If the segmenter's
    words do not concatenate back to the run, that run falls back to one unit per character.

    Args:
        tokens: list of str.
        candidates: list of bool, which positions may be masked (special tokens are not).
        segmenter: optional callable str -> list of str.
        continuation: str, the WordPiece continuation prefix.

    Returns:
        A list of units (lists of positions), in order.
    """
    units = []
    i = 0
    n = len(tokens)
    while i < n:
        if not candidates[i]:
            i += 1
            continue
        if segmenter is not None and _is_cjk_char(tokens[i]):
            j = i
            while j < n and candidates[j] and _is_cjk_char(tokens[j]):
                j += 1
            units.extend(_segment_run(tokens, i, j, segmenter))
            i = j
            continue
        if continuation and tokens[i].startswith(continuation) and units and units[-1][-1] == i - 1:
            units[-1].append(i)
        else:
            units.append([i])
        i += 1
    return units


def _segment_run(tokens, start, end, segmenter):
    text = "".join(tokens[start:end])
    words = [w for w in segmenter(text) if w]
    if "".join(words) != text:
        return [[k] for k in range(start, end)]
    units = []
    k = start
    for word in words:
        units.append(list(range(k, k + len(word))))
        k += len(word)
    return units


def shuffle(rng, x):
    """`rng.shuffle(x)` with the same draws and result, about twice as fast (`_randbelow` inlined, the
    bit count computed once per power of two)."""
    getrandbits = rng.getrandbits
    i = len(x) - 1
    while i > 0:
        k = (i + 1).bit_length()
        low = 1 << (k - 1)  # i + 1 keeps this bit count down to low
        for i in range(i, low - 2, -1):
            j = getrandbits(k)
            while j > i:
                j = getrandbits(k)
            x[i], x[j] = x[j], x[i]
        i = low - 2


class MaskingStrategy:
    """Base class: the shared selection-and-replacement core.

    Subclasses override `candidate_units` (and `choose_span` for spans of several units).

    Args:
        rate: float, fraction of the sequence length to predict (0.15).
        max_predictions: int, at most this many predicted positions per sequence.
        mask_token_rate: float, of the chosen positions, replaced with `mask_token` (0.8).
        random_token_rate: float, of the chosen positions, replaced with a random token (0.1); the rest
            keep their token.
        vocabulary: list of str, drawn from for random replacement. Required when
            `random_token_rate > 0`.
        random_from_all: bool, draw random replacements from the whole vocabulary, special and unknown
            tokens included, as Google's scripts (`vocab_words`) and transformers' collator do (default);
            False leaves those out.
        mask_token: str.
        special_tokens: iterable of str never chosen.
        per_unit_replacement: bool, decide [MASK]/random/keep once per unit (ERNIE) instead of once per
            position (original BERT, also for whole words).
    """

    def __init__(
        self,
        rate=0.15,
        max_predictions=20,
        mask_token_rate=0.8,
        random_token_rate=0.1,
        vocabulary=None,
        mask_token="[MASK]",
        special_tokens=DEFAULT_SPECIAL_TOKENS,
        per_unit_replacement=False,
        random_from_all=True,
    ):
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"Masking rate must be in [0, 1], got {rate}.")
        if max_predictions < 1:
            raise ConfigError(f"max_predictions must be >= 1, got {max_predictions}.")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ConfigError(
                "mask_token_rate and random_token_rate must be >= 0 and sum to at most 1, got "
                f"{mask_token_rate} and {random_token_rate}."
            )
        self.rate = rate
        self.max_predictions = max_predictions
        self.mask_token_rate = mask_token_rate
        self.random_token_rate = random_token_rate
        self.mask_token = mask_token
        self.special_tokens = frozenset(special_tokens) | {mask_token}
        self.per_unit_replacement = per_unit_replacement
        # Of the positions not replaced with the mask token, the share kept (0.5 for 80/10/10, as the
        # original `rng.random() < 0.5`).
        rest = 1.0 - mask_token_rate
        self._keep_rate = round((rest - random_token_rate) / rest, 12) if rest > 0 else 1.0
        self.vocabulary = None
        if vocabulary is not None:
            excluded = set() if random_from_all else self.special_tokens | {"[UNK]", "<unk>"}
            self.vocabulary = [t for t in vocabulary if t not in excluded]
        if random_token_rate > 0 and not self.vocabulary:
            raise ConfigError("A `vocabulary` (list of tokens) is needed when random_token_rate > 0.")

    # --- what subclasses change ---
    def candidate_units(self, tokens, candidates):
        """Group candidate positions into units masked together. Token masking: one unit per token."""
        return [[i] for i, ok in enumerate(candidates) if ok]

    def choose_span(self, units, start, rng):
        """The positions to try when the shuffled candidate `units[start]` comes up (all its spans).

        Returns a list of alternatives, longest first preference order as the strategy wants; the core
        takes the first that fits within `num_to_predict`.
        """
        return [units[start]]

    # --- the shared core ---
    def num_to_predict(self, num_tokens):
        return min(self.max_predictions, max(1, int(round(num_tokens * self.rate))))

    def __call__(self, tokens, rng):
        """Mask one sequence.

        Args:
            tokens: list of str (with special tokens).
            rng: `random.Random`.

        Returns:
            `MaskedLmOutput`.
        """
        candidates = [t not in self.special_tokens for t in tokens]
        units = self.candidate_units(tokens, candidates)
        order = list(range(len(units)))
        shuffle(rng, order)
        num_to_predict = self.num_to_predict(len(tokens))
        chosen = []
        covered = set()
        for start in order:
            if len(covered) >= num_to_predict:
                break
            for span in self.choose_span(units, start, rng):
                if len(covered) + len(span) <= num_to_predict:
                    break
            else:
                continue
            if any(i in covered for i in span):
                continue
            covered.update(span)
            chosen.append(span)
        output = list(tokens)
        for span in chosen:
            replacement = self._replacement_kind(rng) if self.per_unit_replacement else None
            for index in span:
                output[index] = self._replace(tokens[index], replacement or self._replacement_kind(rng), rng)
        positions = sorted(covered)
        return MaskedLmOutput(output, positions, [tokens[i] for i in positions])

    def _replacement_kind(self, rng):
        # The original scripts' draws: one for [MASK], a second one (only when it is not [MASK]) for
        # keeping the token or drawing a random one.
        if rng.random() < self.mask_token_rate:
            return "mask"
        return "keep" if rng.random() < self._keep_rate else "random"

    def _replace(self, token, replacement, rng):
        if replacement == "mask":
            return self.mask_token
        if replacement == "random":
            return self.vocabulary[rng.randint(0, len(self.vocabulary) - 1)]
        return token

    def mask_instance(self, instance, rng):
        """Return a copy of a `TrainingInstance` with its tokens masked and the masked-LM fields set."""
        out = self(instance.tokens, rng)
        if type(instance) is TrainingInstance:  # the common case, without dataclasses.replace's cost
            return TrainingInstance(out.tokens, instance.segment_ids, instance.is_random_next,
                                    out.masked_lm_positions, out.masked_lm_labels)
        return dataclasses.replace(
            instance,
            tokens=out.tokens,
            masked_lm_positions=out.masked_lm_positions,
            masked_lm_labels=out.masked_lm_labels,
        )


class TokenMasking(MaskingStrategy):
    """BERT token masking: each non-special token is a candidate on its own.

    Args: see `MaskingStrategy`.

    Example:
    >>> masking = TokenMasking(vocabulary=["a", "b", "c"], max_predictions=2)
    >>> out = masking(["[CLS]", "a", "b", "c", "[SEP]"], random.Random(0))
    """

    def __call__(self, tokens, rng):
        # The shared core for one-position units, with the same draws: the first `num_to_predict`
        # shuffled candidates are taken (none can overlap or overflow).
        is_special = map(self.special_tokens.__contains__, tokens)
        order = list(itertools.compress(range(len(tokens)), map(operator.not_, is_special)))
        shuffle(rng, order)
        chosen = order[:self.num_to_predict(len(tokens))]
        output = list(tokens)
        random, mask_rate, keep_rate = rng.random, self.mask_token_rate, self._keep_rate
        for index in chosen:
            if random() < mask_rate:
                output[index] = self.mask_token
            elif random() >= keep_rate:
                output[index] = self.vocabulary[rng.randint(0, len(self.vocabulary) - 1)]
        chosen.sort()
        return MaskedLmOutput(output, chosen, [tokens[i] for i in chosen])


class WholeWordMasking(MaskingStrategy):
    """Whole-word masking (BERT-wwm): all WordPieces of a chosen word are masked together.

    Args:
        segmenter: optional callable str -> list of words (e.g. `jieba.lcut`) deciding Chinese word
            boundaries over runs of single-character CJK tokens.
        continuation: str, WordPiece continuation prefix.
        **kwargs: see `MaskingStrategy`.
    """

    def __init__(self, segmenter=None, continuation="##", **kwargs):
        super().__init__(**kwargs)
        self.segmenter = segmenter
        self.continuation = continuation

    def candidate_units(self, tokens, candidates):
        return word_units(tokens, candidates, self.segmenter, self.continuation)


class NgramMasking(WholeWordMasking):
    """ALBERT n-gram masking: spans of n = 1..max_n consecutive whole words, p(n) proportional to 1/n.

    When a start word comes up, n is drawn (6/11, 3/11, 2/11 for max_n=3, renormalized where fewer
    words remain); if the span would exceed `num_to_predict`, shorter spans are tried (as ALBERT).

    Args:
        max_n: int, the longest span in words.
        **kwargs: see `WholeWordMasking`.
    """

    def __init__(self, max_n=3, **kwargs):
        super().__init__(**kwargs)
        if max_n < 1:
            raise ConfigError(f"max_n must be >= 1, got {max_n}.")
        self.max_n = max_n

    def sample_n(self, rng, limit=None):
        """Draw a span length n in 1..min(max_n, limit) with p(n) proportional to 1/n."""
        top = self.max_n if limit is None else min(self.max_n, limit)
        weights = [1.0 / n for n in range(1, top + 1)]
        r = rng.random() * sum(weights)
        for n, w in enumerate(weights, start=1):
            r -= w
            if r < 0:
                return n
        return top

    def choose_span(self, units, start, rng):
        # Spans never jump over a special token: count the adjacent words from `start`.
        limit = 1
        while (
            limit < self.max_n
            and start + limit < len(units)
            and units[start + limit][0] == units[start + limit - 1][-1] + 1
        ):
            limit += 1
        n = self.sample_n(rng, limit)
        # The span of n words, then shorter ones (ALBERT retries shorter n-grams when too long).
        return [[i for unit in units[start:start + k] for i in unit] for k in range(n, 0, -1)]


KNOWLEDGE_LEVELS = ("basic", "phrase", "entity")


class KnowledgeMasking(WholeWordMasking):
    """ERNIE 1.0 knowledge masking: basic, phrase and entity units, with a staged schedule.

    Units, by level (each level keeps the units of the levels below where no larger unit covers them):
    "basic": whole words (WordPiece groups; single Chinese characters); "phrase": phrases from the
    `phrases` lexicon and words of the `segmenter`; "entity": also entities of the `entities` lexicon.
    Lexicon matches are greedy, longest first, and never split a WordPiece word.

    Args:
        phrases: iterable of phrases; each a str (tokenized with `tokenize`) or a sequence of tokens.
        entities: iterable of named entities, same forms as `phrases`.
        segmenter: optional callable str -> list of words (e.g. `jieba.lcut`) giving Chinese phrases.
        tokenize: callable str -> list of tokens for lexicon strings. Default: whitespace split, CJK
            characters one token each.
        level: str, the level when no schedule is given.
        schedule: optional list of (level, num_sequences) stages, e.g. `[("basic", 10000),
            ("phrase", 10000), ("entity", None)]`: the masking level follows the number of sequences
            masked so far (`None` = until the end). ERNIE trains basic -> phrase -> entity.
        per_unit_replacement: bool (default True as in ERNIE: one [MASK]/random/keep draw per unit).
        **kwargs: see `MaskingStrategy`.
    """

    def __init__(
        self,
        phrases=(),
        entities=(),
        segmenter=None,
        tokenize=None,
        level="entity",
        schedule=None,
        per_unit_replacement=True,
        **kwargs,
    ):
        super().__init__(segmenter=None, per_unit_replacement=per_unit_replacement, **kwargs)
        self.phrase_segmenter = segmenter
        self.tokenize = tokenize or _default_lexicon_tokens
        self.phrases = self._index(phrases)
        self.entities = self._index(entities)
        for stage_level, _ in schedule or ():
            _check_level(stage_level)
        _check_level(level)
        self.level = level
        self.schedule = list(schedule) if schedule else None
        self.num_masked = 0

    def _index(self, entries):
        index = {}
        for entry in entries:
            seq = tuple(self.tokenize(entry) if isinstance(entry, str) else entry)
            if seq:
                index.setdefault(seq[0], set()).add(seq)
        return {k: sorted(v, key=len, reverse=True) for k, v in index.items()}

    def current_level(self):
        """The level in force for the next sequence (follows `schedule` when given)."""
        if not self.schedule:
            return self.level
        seen = 0
        for level, count in self.schedule:
            if count is None or self.num_masked < seen + count:
                return level
            seen += count
        return self.schedule[-1][0]

    def __call__(self, tokens, rng):
        out = super().__call__(tokens, rng)
        self.num_masked += 1
        return out

    def candidate_units(self, tokens, candidates):
        level = self.current_level()
        basic = word_units(tokens, candidates, None, self.continuation)
        if level == "basic":
            return basic
        owner = [None] * len(tokens)  # position -> the larger unit covering it
        larger = []
        lexicons = [self.entities, self.phrases] if level == "entity" else [self.phrases]
        for lexicon in lexicons:
            for span in _lexicon_matches(tokens, candidates, lexicon, self.continuation):
                if all(owner[i] is None for i in span):
                    larger.append(span)
                    for i in span:
                        owner[i] = span
        if self.phrase_segmenter is not None:
            for span in word_units(tokens, candidates, self.phrase_segmenter, self.continuation):
                if len(span) > 1 and all(owner[i] is None for i in span):
                    larger.append(span)
                    for i in span:
                        owner[i] = span
        units = larger + [u for u in basic if all(owner[i] is None for i in u)]
        units.sort(key=lambda u: u[0])
        return units


def _check_level(level):
    if level not in KNOWLEDGE_LEVELS:
        raise ConfigError(f"Unknown knowledge masking level {level!r}; expected one of {KNOWLEDGE_LEVELS}.")


def _default_lexicon_tokens(text):
    tokens = []
    for word in text.split():
        buffer = ""
        for ch in word:
            if _is_cjk_char(ch):
                if buffer:
                    tokens.append(buffer)
                    buffer = ""
                tokens.append(ch)
            else:
                buffer += ch
        if buffer:
            tokens.append(buffer)
    return tokens


def _lexicon_matches(tokens, candidates, lexicon, continuation):
    """Greedy left-to-right, longest-first matches of lexicon entries on word boundaries."""
    spans = []
    i = 0
    n = len(tokens)
    while i < n:
        match = None
        if candidates[i] and not (continuation and tokens[i].startswith(continuation)):
            for seq in lexicon.get(tokens[i], ()):
                end = i + len(seq)
                if (
                    end <= n
                    and tuple(tokens[i:end]) == seq
                    and all(candidates[i:end])
                    and not (end < n and continuation and tokens[end].startswith(continuation))
                ):
                    match = list(range(i, end))
                    break
        if match:
            spans.append(match)
            i = match[-1] + 1
        else:
            i += 1
    return spans


MASKINGS = {
    "token": TokenMasking,
    "whole_word": WholeWordMasking,
    "ngram": NgramMasking,
    "knowledge": KnowledgeMasking,
}


def get_masking(name, **kwargs):
    """Build a masking strategy by name ("token", "whole_word", "ngram", "knowledge")."""
    if name not in MASKINGS:
        raise ConfigError(f"Unknown masking {name!r}; expected one of {tuple(MASKINGS)}.")
    return MASKINGS[name](**kwargs)


def seeded_rng(seed):
    """A `random.Random` for a seed (helper for callers passing ints)."""
    return seed if isinstance(seed, random_lib.Random) else random_lib.Random(seed)
