"""Entity-level NER metrics (`metrics.entities`, `entity_scores`) equal seqeval's, in its default
(conlleval-compatible) mode and in `mode="strict", scheme=IOB2`: on fuzzed tag sequences that mix well-formed
and broken IOB (I- without B-, type changes inside entities, adjacent entities of one type, B-X I-Y, E-/S-
tags), on hand-written cases named for each chunking rule, and through `python -m recipes.evaluate conll`."""

import ast
import json
import os
import random
import warnings

import pytest

from keras_pretrain.tasks.token_classification import metrics
from keras_pretrain.tasks.token_classification.conll import write_predictions
from recipes import evaluate

seqeval_metrics = pytest.importorskip("seqeval.metrics")
from seqeval.metrics.sequence_labeling import get_entities  # noqa: E402
from seqeval.scheme import IOB2, Tokens  # noqa: E402

pytestmark = pytest.mark.one_backend

EXACT = 1e-12
SEEDS = (0, 1, 2, 3, 4)
SEQUENCES_PER_SEED = 500  # x 5 seeds = 2,500 gold/predicted pairs per mode
TYPES = ("PER", "LOC", "ORG", "NORP-X")  # a type with a "-": the type is all after the first "-"
AVERAGES = ("micro avg", "macro avg", "weighted avg")


# === seqeval ===


def quiet(function, *args, **kwargs):
    """`function(...)` without seqeval's warnings (undefined precision or recall: it gives 0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*args, **kwargs)


def reference_entities(tags, strict):
    """seqeval's entities of one sequence as `(type, start, end)`, end exclusive."""
    if strict:
        return [(e.tag, e.start, e.end) for e in quiet(lambda: Tokens(list(tags), IOB2).entities)]
    return [(kind, start, end + 1) for kind, start, end in quiet(get_entities, list(tags))]


def reference_scores(gold, predicted, strict):
    """seqeval's micro precision / recall / F1 and its classification report, in `entity_scores`'s layout."""
    gold, predicted = [list(tags) for tags in gold], [list(tags) for tags in predicted]
    mode = dict(mode="strict", scheme=IOB2) if strict else {}
    result = {name: float(quiet(getattr(seqeval_metrics, f"{name}_score"), gold, predicted, **mode))
              for name in ("precision", "recall", "f1")}
    report = quiet(seqeval_metrics.classification_report, gold, predicted, output_dict=True, **mode)
    result["per_type"] = {kind: {"precision": row["precision"], "recall": row["recall"], "f1": row["f1-score"],
                                 "support": row["support"]}
                          for kind, row in report.items() if kind not in AVERAGES}
    return result


def assert_scores_equal(ours, reference):
    assert set(ours) == {"precision", "recall", "f1", "per_type"}
    for name in ("precision", "recall", "f1"):
        assert abs(ours[name] - reference[name]) <= EXACT, (name, ours, reference)
    assert list(ours["per_type"]) == list(reference["per_type"])  # the same types, sorted
    for kind, row in ours["per_type"].items():
        expected = reference["per_type"][kind]
        assert row["support"] == expected["support"] and isinstance(row["support"], int), (kind, row, expected)
        for name in ("precision", "recall", "f1"):
            assert abs(row[name] - expected[name]) <= EXACT, (kind, name, row, expected)


# === Fuzzed sequences ===


def spans(rng, length):
    """Random non-overlapping `(type, start, end)` entities in `length` tokens, some of them adjacent."""
    found, position = [], rng.randint(0, 2)
    while position < length:
        end = min(length, position + rng.choice((1, 1, 2, 3)))
        found.append((rng.choice(TYPES), position, end))
        position = end + rng.choice((0, 0, 1, 2))  # 0: the next entity is adjacent
    return found


def encode(entities, length, scheme):
    """The tags of well-formed entities in IOB1, IOB2 or IOBES."""
    tags = ["O"] * length
    previous_end, previous_type = None, None
    for kind, start, end in entities:
        for i in range(start, end):
            tags[i] = "I-" + kind
        if scheme == "IOB2" or (scheme == "IOB1" and previous_end == start and previous_type == kind):
            tags[start] = "B-" + kind
        if scheme == "IOBES":
            tags[start] = ("S-" if end - start == 1 else "B-") + kind
            if end - start > 1:
                tags[end - 1] = "E-" + kind
        previous_end, previous_type = end, kind
    return tags


def random_tag(rng, prefixes):
    return "O" if rng.random() < 0.35 else f"{rng.choice(prefixes)}-{rng.choice(TYPES)}"


def fuzzed_pair(rng, strict):
    """A gold and a predicted tag sequence of one length: well-formed or broken IOB; the prediction a noisy
    copy of the gold (boundaries, types and prefixes changed), or random."""
    prefixes = "BI" if strict else "BIES"
    length = rng.choice((0, 1, 2, 3, rng.randint(4, 16), rng.randint(4, 16)))
    kind = rng.choice(("IOB1", "IOB2", "IOB2", "IOBES", "random"))
    if kind == "random" or (strict and kind == "IOBES"):
        gold = [random_tag(rng, prefixes) for _ in range(length)]
    else:
        gold = encode(spans(rng, length), length, kind)
    if rng.random() < 0.2:
        predicted = [random_tag(rng, prefixes) for _ in range(length)]
    else:
        noise = rng.choice((0.0, 0.1, 0.3))
        predicted = [random_tag(rng, prefixes) if rng.random() < noise else tag for tag in gold]
    return gold, predicted


def fuzzed_corpora(seed, strict):
    """`SEQUENCES_PER_SEED` pairs in corpora of 1 to 8 sentences: lists of `(gold, predicted)` lists."""
    rng = random.Random(f"{seed}-{strict}")
    corpora, left = [], SEQUENCES_PER_SEED
    while left:
        size = min(left, rng.randint(1, 8))
        corpora.append([fuzzed_pair(rng, strict) for _ in range(size)])
        left -= size
    return corpora


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_sequences_equal_seqeval(seed, strict):
    compared = 0
    for corpus in fuzzed_corpora(seed, strict):
        gold, predicted = [g for g, _ in corpus], [p for _, p in corpus]
        for tags in gold + predicted:
            assert metrics.entities(tags, strict=strict) == reference_entities(tags, strict), tags
        assert_scores_equal(metrics.entity_scores(gold, predicted, strict=strict),
                            reference_scores(gold, predicted, strict))
        compared += len(corpus)
    assert compared == SEQUENCES_PER_SEED


def test_the_fuzzer_makes_the_cases_that_tell_implementations_apart():
    """The fuzzed sequences hold every broken pattern often, and the two modes disagree on many of them."""
    counts = dict.fromkeys(("I after O", "type change", "adjacent B-X B-X", "E/S", "modes differ"), 0)
    for seed in SEEDS:
        for strict in (False, True):
            for corpus in fuzzed_corpora(seed, strict):
                for tags in (tags for pair in corpus for tags in pair):
                    pairs = list(zip(["O"] + tags, tags))
                    counts["I after O"] += any(a == "O" and b.startswith("I-") for a, b in pairs)
                    counts["type change"] += any(a[2:] != b[2:] and a != "O" and b[0] in "IE" for a, b in pairs)
                    counts["adjacent B-X B-X"] += any(a == b and a.startswith("B-") for a, b in pairs)
                    counts["E/S"] += any(tag[0] in "ES" for tag in tags)
                    if strict:
                        counts["modes differ"] += metrics.entities(tags) != metrics.entities(tags, strict=True)
    assert min(counts.values()) >= 200, counts


# === The rules, one case each ===

# name -> (tags, default entities, strict entities; None: strict refuses E-/S- tags)
RULES = {
    "b_i_is_one_entity": (["B-PER", "I-PER", "O"], [("PER", 0, 2)], [("PER", 0, 2)]),
    "i_at_the_start_begins_an_entity": (["I-PER", "I-PER"], [("PER", 0, 2)], []),
    "i_after_o_begins_an_entity": (["O", "I-LOC", "O"], [("LOC", 1, 2)], []),
    "type_change_inside_an_entity": (["B-PER", "I-LOC", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 3)], [("PER", 0, 1)]),
    "i_type_change": (["I-PER", "I-LOC"], [("PER", 0, 1), ("LOC", 1, 2)], []),
    "adjacent_entities_of_one_type": (["B-ORG", "B-ORG", "I-ORG"], [("ORG", 0, 1), ("ORG", 1, 3)],
                                      [("ORG", 0, 1), ("ORG", 1, 3)]),
    "iob1_b_between_entities_of_one_type": (["I-ORG", "B-ORG"], [("ORG", 0, 1), ("ORG", 1, 2)], [("ORG", 1, 2)]),
    "an_entity_at_the_end": (["O", "B-PER", "I-PER"], [("PER", 1, 3)], [("PER", 1, 3)]),
    "o_only": (["O", "O"], [], []),
    "empty": ([], [], []),
    "type_with_a_hyphen": (["B-NORP-X", "I-NORP-X"], [("NORP-X", 0, 2)], [("NORP-X", 0, 2)]),
    "iobes_b_i_e": (["B-PER", "I-PER", "E-PER", "O"], [("PER", 0, 3)], None),
    "e_ends_an_entity": (["B-PER", "E-PER", "I-PER"], [("PER", 0, 2), ("PER", 2, 3)], None),
    "e_alone_is_an_entity": (["O", "E-LOC"], [("LOC", 1, 2)], None),
    "s_after_b": (["B-PER", "S-PER"], [("PER", 0, 1), ("PER", 1, 2)], None),
    "i_after_s_begins_an_entity": (["S-PER", "I-PER"], [("PER", 0, 1), ("PER", 1, 2)], None),
    "b_then_e_of_another_type": (["B-PER", "E-LOC"], [("PER", 0, 1), ("LOC", 1, 2)], None),
}


@pytest.mark.parametrize("name", list(RULES))
def test_each_chunking_rule(name):
    tags, default, strict = RULES[name]
    assert metrics.entities(tags) == default == reference_entities(tags, strict=False)
    if strict is None:
        with pytest.raises(ValueError, match="strict IOB2 has no E- or S- tags"):
            metrics.entities(tags, strict=True)
        with pytest.raises(ValueError):
            reference_entities(tags, strict=True)  # seqeval's IOB2 refuses them too
    else:
        assert metrics.entities(tags, strict=True) == strict == reference_entities(tags, strict=True)


# name -> (gold, predicted, strict, expected overall (precision, recall, f1), expected per type)
SCORES = {
    "i_without_b_counts_by_default": (
        [["B-PER", "I-PER", "O"]], [["I-PER", "I-PER", "O"]], False, (1.0, 1.0, 1.0),
        {"PER": (1.0, 1.0, 1.0, 1)}),
    "i_without_b_is_no_entity_in_strict_mode": (
        [["B-PER", "I-PER", "O"]], [["I-PER", "I-PER", "O"]], True, (0.0, 0.0, 0.0),
        {"PER": (0.0, 0.0, 0.0, 1)}),
    "a_wrong_boundary_is_wrong": (
        [["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "O", "O", "B-LOC"]], False, (0.5, 0.5, 0.5),
        {"LOC": (1.0, 1.0, 1.0, 1), "PER": (0.0, 0.0, 0.0, 1)}),
    "a_type_only_predicted_has_support_0": (
        [["B-PER", "O"], ["O"]], [["B-PER", "O"], ["B-ORG"]], False, (0.5, 1.0, 2 / 3),
        {"ORG": (0.0, 0.0, 0.0, 0), "PER": (1.0, 1.0, 1.0, 1)}),
    "nothing_predicted": ([["B-PER", "I-PER"]], [["O", "O"]], False, (0.0, 0.0, 0.0), {"PER": (0.0, 0.0, 0.0, 1)}),
    "no_entity_at_all": ([["O"], []], [["O"], []], False, (0.0, 0.0, 0.0), {}),
    "adjacent_entities_merged_by_the_prediction": (
        [["B-ORG", "B-ORG"]], [["B-ORG", "I-ORG"]], False, (0.0, 0.0, 0.0), {"ORG": (0.0, 0.0, 0.0, 2)}),
    "entities_do_not_cross_sentences": (
        [["O", "B-PER"], ["I-PER"]], [["O", "B-PER"], ["I-PER"]], False, (1.0, 1.0, 1.0),
        {"PER": (1.0, 1.0, 1.0, 2)}),
}


@pytest.mark.parametrize("name", list(SCORES))
def test_scores_by_hand_and_as_seqeval(name):
    gold, predicted, strict, overall, per_type = SCORES[name]
    scores = metrics.entity_scores(gold, predicted, strict=strict)
    assert (scores["precision"], scores["recall"], scores["f1"]) == pytest.approx(overall, abs=EXACT)
    assert list(scores["per_type"]) == list(per_type)
    for kind, row in scores["per_type"].items():
        assert (row["precision"], row["recall"], row["f1"], row["support"]) == pytest.approx(per_type[kind], abs=EXACT)
    assert_scores_equal(scores, reference_scores(gold, predicted, strict))


def test_bad_sequences_are_refused():
    with pytest.raises(ValueError, match="2 gold sequences but 1 predicted"):
        metrics.entity_scores([["O"], ["O"]], [["O"]])
    with pytest.raises(ValueError, match="sequence 1: 2 gold tags but 1 predicted"):
        metrics.entity_scores([["O"], ["O", "O"]], [["O"], ["O"]])
    for tag in ("B", "B-", "X-PER", "b-PER", "BPER", "I--PER", "I-PER-", "", None):
        with pytest.raises(ValueError, match="is not an IOB tag"):
            metrics.entities(["O", tag])


# === The recipe ===


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_evaluate_conll_prints_seqeval_s_numbers(strict, tmp_path, capsys):
    pairs = [pair for corpus in fuzzed_corpora(0, strict) for pair in corpus]
    gold, predicted = [g for g, _ in pairs], [p for _, p in pairs]
    tokens = [[f"w{i}" for i in range(len(tags))] for tags in gold]
    path = str(tmp_path / "predictions.txt")
    write_predictions(path, tokens, gold, predicted)
    assert evaluate.main(["conll", "--predictions", path] + (["--strict"] if strict else [])) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    printed = json.loads(out[0])
    # the file drops the empty sentences, which hold no entity
    assert_scores_equal(printed, reference_scores(gold, predicted, strict))
    assert 0 < printed["f1"] < 1 and len(printed["per_type"]) == len(TYPES)


def test_the_runtime_never_imports_seqeval():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    for package in ("keras_pretrain", "recipes", "hub_modules"):
        for folder, _, files in os.walk(os.path.join(root, package)):
            for file in (f for f in files if f.endswith(".py")):
                with open(os.path.join(folder, file), encoding="utf-8") as f:
                    tree = ast.parse(f.read())
                for node in ast.walk(tree):
                    names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                        [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
                    assert not any(n.split(".")[0] == "seqeval" for n in names), os.path.join(folder, file)
