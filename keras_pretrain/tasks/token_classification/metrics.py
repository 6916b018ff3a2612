"""Entity-level NER metrics (CoNLL): the tags of a sequence, its entities (conlleval's chunking, or strict IOB2), and
their precision, recall and F1, overall and per type, as seqeval's (a test-only dependency)."""

ENTITY_PREFIXES = ("B", "I", "E", "S")


def split_tag(tag):
    """`(prefix, type)` of a tag: `("O", None)` for "O", `("B", "PER")` for "B-PER", `("I", "MISC-X")`
    for "I-MISC-X" (the type is all that follows the first "-").

    Valid tags are "O" and B-, I-, E-, S- followed by a type that is not empty and neither begins nor ends
    with "-" (seqeval's two modes read such a type differently). Raises `ValueError` otherwise.
    """
    if tag == "O":
        return "O", None
    if (isinstance(tag, str) and len(tag) > 2 and tag[0] in ENTITY_PREFIXES and tag[1] == "-"
            and not tag[2:].startswith("-") and not tag.endswith("-")):
        return tag[0], tag[2:]
    raise ValueError(f"{tag!r} is not an IOB tag (expected O, or B-, I-, E- or S- and a type, e.g. B-PER)")


def entities(tags, strict=False):
    """The entities of one tag sequence, as `(type, start, end)` (end exclusive), in order.

    Default (`strict=False`): conlleval's chunking, equal to seqeval's `get_entities` (its default
    mode). A tag continues the entity of the previous tag when the previous is B-X or I-X and it is
    I-X or E-X of the same type X; E-X and S-X end their entity; every other tag but O starts a new
    entity. So an I-X after O (or at the start) begins an entity, a change of type inside an entity
    ("B-PER I-LOC") ends it and begins another, and "B-X B-X" are two entities.

    `strict=True`: well-formed IOB2 entities only, equal to seqeval's `mode="strict", scheme=IOB2`:
    a B-X and the I-X that follow it; an I- tag that does not continue such an entity is no entity.
    E- and S- tags are refused (`ValueError`, as seqeval's IOB2 scheme refuses them):
    convert IOBES to IOB2 first (`keras_pretrain.tasks.token_classification.conll.to_iob2`).

    Example:
    ```python
    entities(["I-PER", "I-PER", "B-PER", "I-LOC", "O"])  # [("PER", 0, 2), ("PER", 2, 3), ("LOC", 3, 4)]
    entities(["I-PER", "I-PER", "B-PER", "I-LOC", "O"], strict=True)  # [("PER", 2, 3)]
    ```
    """
    found = []
    start, kind = None, None  # the entity the previous tag belongs to, while it can go on
    for i, tag in enumerate(tags):
        prefix, tag_type = split_tag(tag)
        if strict and prefix in ("E", "S"):
            raise ValueError(f"{tag!r} (position {i}): strict IOB2 has no E- or S- tags; convert IOBES "
                             "to IOB2 first")
        continues = start is not None and tag_type == kind and prefix in (("I",) if strict else ("I", "E"))
        if not continues:
            if start is not None:
                found.append((kind, start, i))
            start = i if prefix == "B" or (not strict and prefix != "O") else None
            kind = tag_type
        if prefix in ("E", "S"):
            found.append((kind, start, i + 1))
            start = None
    if start is not None:
        found.append((kind, start, len(tags)))
    return found


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def _scores(correct, predicted, gold):
    """precision, recall, F1 of counts; 0 where undefined (seqeval's and scikit-learn's default)."""
    precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(gold_sequences, predicted_sequences, strict=False):
    """Entity-level precision, recall and F1 of tag sequences (CoNLL NER), overall and per type.

    An entity counts as correct when the gold sequence has one of the same type, start and end.
    Overall values are micro-averaged (all types' counts summed): seqeval's `precision_score`,
    `recall_score` and `f1_score`. `per_type[type]` holds the row of seqeval's
    `classification_report(output_dict=True)` (its "f1-score" named "f1"; "support": the number of
    gold entities of that type), for every type that is in the gold or the predicted entities. All are
    fractions in [0, 1]; a precision (recall) with no predicted (gold) entity is 0, and so is its F1,
    as seqeval's default (which also warns). The entities are those of `entities(tags, strict)`:
    the default mode equals seqeval's default (conlleval-compatible) mode, `strict=True` seqeval's
    `mode="strict", scheme=IOB2`.

    Args:
        gold_sequences: list of tag sequences (one per sentence).
        predicted_sequences: as many tag sequences, each as long as its gold one.
        strict: bool, count well-formed IOB2 entities only.

    Returns:
        `{"precision", "recall", "f1", "per_type": {type: {"precision", "recall", "f1", "support"}}}`.

    Example:
    ```python
    entity_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "O", "B-ORG"]])
    # {"precision": 0.5, "recall": 0.5, "f1": 0.5, "per_type": {"LOC": {... "support": 1},
    #  "ORG": {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0}, "PER": {... 1.0 ..., "support": 1}}}
    ```
    """
    gold_sequences, predicted_sequences = list(gold_sequences), list(predicted_sequences)
    if len(gold_sequences) != len(predicted_sequences):
        raise ValueError(f"{len(gold_sequences)} gold sequences but {len(predicted_sequences)} predicted ones")
    gold, predicted = set(), set()
    for index, (gold_tags, predicted_tags) in enumerate(zip(gold_sequences, predicted_sequences)):
        if len(gold_tags) != len(predicted_tags):
            raise ValueError(f"sequence {index}: {len(gold_tags)} gold tags but {len(predicted_tags)} predicted")
        gold.update((index, *entity) for entity in entities(gold_tags, strict))
        predicted.update((index, *entity) for entity in entities(predicted_tags, strict))
    correct = gold & predicted
    per_type = {}
    for kind in sorted({entity[1] for entity in gold | predicted}):
        counts = [sum(entity[1] == kind for entity in group) for group in (correct, predicted, gold)]
        per_type[kind] = {**_scores(*counts), "support": counts[2]}
    return {**_scores(len(correct), len(predicted), len(gold)), "per_type": per_type}
