import collections
import math
import random

import pytest

from keras_pretrain.data.masking import (
    KnowledgeMasking,
    NgramMasking,
    TokenMasking,
    WholeWordMasking,
    get_masking,
    word_units,
)
from keras_pretrain.errors import ConfigError

pytestmark = pytest.mark.tf_only  # pure Python: once, in the TensorFlow run, is enough

VOCAB = [f"v{i}" for i in range(50)] + ["[CLS]", "[SEP]", "[PAD]", "[MASK]"]


def _within(count, n, p, sigmas=4.5):
    return abs(count / n - p) <= sigmas * math.sqrt(p * (1 - p) / n)


def _sequence(length):
    # [CLS] w0 ... [SEP] w.. [SEP]: words never in VOCAB, so a random replacement is recognisable.
    body = [f"w{i}" for i in range(length - 3)]
    half = len(body) // 2
    return ["[CLS]"] + body[:half] + ["[SEP]"] + body[half:] + ["[SEP]"]


def test_random_replacements_come_from_the_whole_vocabulary_unless_told():
    tokens = _sequence(100)
    drawn = {}
    for random_from_all in (True, False):
        masking = TokenMasking(vocabulary=VOCAB, max_predictions=100, mask_token_rate=0.0,
                               random_token_rate=1.0, random_from_all=random_from_all)
        rng = random.Random(0)
        outs = [masking(tokens, rng) for _ in range(300)]
        drawn[random_from_all] = {out.tokens[i] for out in outs for i in out.masked_lm_positions}
    specials = {"[CLS]", "[SEP]", "[PAD]"}
    assert specials <= drawn[True] <= set(VOCAB)
    assert drawn[False] and not drawn[False] & specials


def test_token_masking_count_uniform_selection_and_80_10_10():
    masking = TokenMasking(vocabulary=VOCAB, max_predictions=100)
    tokens = _sequence(100)
    rng = random.Random(0)
    per_position = collections.Counter()
    kinds = collections.Counter()
    draws = 2000
    for _ in range(draws):
        out = masking(tokens, rng)
        assert len(out.masked_lm_positions) == 15  # round(0.15 * 100), as the original
        assert out.masked_lm_positions == sorted(out.masked_lm_positions)
        per_position.update(out.masked_lm_positions)
        for pos, label in zip(out.masked_lm_positions, out.masked_lm_labels):
            assert label == tokens[pos]
            new = out.tokens[pos]
            kinds["mask" if new == "[MASK]" else "keep" if new == tokens[pos] else "random"] += 1
            if new not in ("[MASK]", tokens[pos]):
                assert new in VOCAB  # the whole vocabulary, specials included, as the original
        unmasked = set(range(len(tokens))) - set(out.masked_lm_positions)
        assert all(out.tokens[i] == tokens[i] for i in unmasked)
    specials = {i for i, t in enumerate(tokens) if t in ("[CLS]", "[SEP]")}
    assert not specials & set(per_position)
    # Every non-special position is chosen with probability 15/97.
    p = 15 / 97
    assert all(_within(per_position[i], draws, p) for i in range(len(tokens)) if i not in specials)
    n = sum(kinds.values())
    assert _within(kinds["mask"], n, 0.8) and _within(kinds["random"], n, 0.1)
    assert _within(kinds["keep"], n, 0.1)


def test_max_predictions_and_configurable_rates():
    masking = TokenMasking(vocabulary=VOCAB, max_predictions=5, rate=0.5, mask_token_rate=1.0,
                           random_token_rate=0.0)
    out = masking(_sequence(60), random.Random(1))
    assert len(out.masked_lm_positions) == 5
    assert all(out.tokens[p] == "[MASK]" for p in out.masked_lm_positions)
    short = masking(["[CLS]", "a", "[SEP]"], random.Random(1))
    assert short.masked_lm_positions == [1]  # at least one prediction
    only_special = masking(["[CLS]", "[SEP]", "[PAD]"], random.Random(1))
    assert only_special.masked_lm_positions == []
    with pytest.raises(ConfigError):
        TokenMasking(random_token_rate=0.1, vocabulary=None)
    with pytest.raises(ConfigError):
        TokenMasking(vocabulary=VOCAB, mask_token_rate=0.95, random_token_rate=0.1)
    with pytest.raises(ConfigError):
        get_masking("span")


def _wordpiece_sequence(num_words, rng):
    tokens = ["[CLS]"]
    for w in range(num_words):
        tokens.append(f"w{w}")
        tokens.extend(f"##p{w}_{k}" for k in range(rng.randint(0, 3)))
        if w == num_words // 2:
            tokens.append("[SEP]")
    return tokens + ["[SEP]"]


def _words(tokens):
    return word_units(tokens, [t not in ("[CLS]", "[SEP]") for t in tokens])


def test_whole_word_masking_never_splits_a_word():
    rng = random.Random(2)
    masking = WholeWordMasking(vocabulary=VOCAB, max_predictions=20)
    for _ in range(300):
        tokens = _wordpiece_sequence(40, rng)
        out = masking(tokens, rng)
        chosen = set(out.masked_lm_positions)
        assert 1 <= len(chosen) <= 20
        for word in _words(tokens):
            assert set(word) <= chosen or not set(word) & chosen


def test_chinese_whole_word_masking_with_a_segmenter():
    lexicon = {"北京", "天安门", "我们"}

    def segmenter(text):  # a tiny max-match segmenter standing in for jieba.lcut
        words, i = [], 0
        while i < len(text):
            for n in (3, 2, 1):
                if n == 1 or text[i:i + n] in lexicon:
                    words.append(text[i:i + n])
                    i += n
                    break
        return words

    tokens = ["[CLS]"] + list("我们爱北京天安门") + ["[SEP]", "the", "##re", "[SEP]"]
    units = word_units(tokens, [t not in ("[CLS]", "[SEP]") for t in tokens], segmenter)
    assert units == [[1, 2], [3], [4, 5], [6, 7, 8], [10, 11]]
    masking = WholeWordMasking(segmenter=segmenter, vocabulary=VOCAB, rate=0.3)
    rng = random.Random(3)
    for _ in range(200):
        chosen = set(masking(tokens, rng).masked_lm_positions)
        assert all(set(u) <= chosen or not set(u) & chosen for u in units)


def test_ngram_length_distribution():
    masking = NgramMasking(vocabulary=VOCAB, max_n=3)
    rng = random.Random(4)
    draws = 20000
    counts = collections.Counter(masking.sample_n(rng) for _ in range(draws))
    for n, p in ((1, 6 / 11), (2, 3 / 11), (3, 2 / 11)):
        assert _within(counts[n], draws, p), (n, counts[n] / draws)
    assert set(counts) == {1, 2, 3}
    assert all(masking.sample_n(rng, limit=1) == 1 for _ in range(100))


def test_ngram_masking_spans_are_whole_words_and_within_budget():
    rng = random.Random(5)
    masking = NgramMasking(vocabulary=VOCAB, max_predictions=20)
    multi = 0
    for _ in range(300):
        tokens = _wordpiece_sequence(60, rng)
        out = masking(tokens, rng)
        chosen = set(out.masked_lm_positions)
        assert len(chosen) <= min(20, round(0.15 * len(tokens)))
        words = _words(tokens)
        assert all(set(w) <= chosen or not set(w) & chosen for w in words)
        # consecutive masked words exist (n-grams of n > 1)
        flags = [bool(set(w) & chosen) for w in words]
        multi += any(a and b for a, b in zip(flags, flags[1:]))
    assert multi > 100


def test_knowledge_masking_units_and_schedule():
    tokens = "[CLS] i live in new york city near the hud ##son river [SEP] 我 爱 北 京 [SEP]".split()
    masking = KnowledgeMasking(
        phrases=["near the", "york city"],
        entities=["new york city", "hud", ("北", "京")],
        segmenter=lambda text: [text[:1], text[1:2], text[2:]],  # 我 | 爱 | 北京 style
        vocabulary=VOCAB,
        rate=0.3,
        schedule=[("basic", 2), ("phrase", 2), ("entity", None)],
    )
    candidates = [t not in ("[CLS]", "[SEP]") for t in tokens]
    assert masking.current_level() == "basic"
    basic = masking.candidate_units(tokens, candidates)
    assert [9, 10] in basic and [4] in basic and [14] in basic
    masking.num_masked = 2
    phrase = masking.candidate_units(tokens, candidates)
    assert [5, 6] in phrase and [7, 8] in phrase and [15, 16] in phrase and [4] in phrase
    masking.num_masked = 4
    entity = masking.candidate_units(tokens, candidates)
    # "hud" is not an entity match: it would split the word "hud ##son"
    assert [4, 5, 6] in entity and [7, 8] in entity and [9, 10] in entity and [15, 16] in entity
    masking.num_masked = 0
    rng = random.Random(6)
    for step in range(60):
        level = masking.current_level()
        units = masking.candidate_units(tokens, candidates)
        out = masking(tokens, rng)
        chosen = set(out.masked_lm_positions)
        assert all(set(u) <= chosen or not set(u) & chosen for u in units), level
        # one replacement decision per unit (ERNIE)
        for u in units:
            if set(u) <= chosen:
                kinds = {out.tokens[i] == "[MASK]" for i in u}
                assert len(kinds) == 1
    assert masking.current_level() == "entity"


def test_same_seed_same_masks():
    for masking in (
        TokenMasking(vocabulary=VOCAB),
        WholeWordMasking(vocabulary=VOCAB),
        NgramMasking(vocabulary=VOCAB),
        KnowledgeMasking(phrases=["w1 w2"], vocabulary=VOCAB),
    ):
        tokens = _wordpiece_sequence(30, random.Random(0))
        assert masking(tokens, random.Random(9)) == masking(tokens, random.Random(9))
        assert masking(tokens, random.Random(9)) != masking(tokens, random.Random(10))
