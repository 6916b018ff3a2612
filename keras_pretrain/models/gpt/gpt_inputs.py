"""GPT-1's input transformations (paper, section 3.3): token ids to padded model inputs, per task."""

from keras_pretrain.errors import ConfigError

TASKS = ("classification", "entailment", "similarity", "multiple_choice")


def _fit(segments, budget):
    """Trims the longest segment (from its end) until they fit in `budget`."""
    segments = [list(s) for s in segments]
    while sum(len(s) for s in segments) > budget:
        longest = max(range(len(segments)), key=lambda i: len(segments[i]))
        segments[longest].pop()
    return segments


def pack_sequence(segments, start_id, delimiter_id, extract_id, sequence_length):
    """`start seg_1 delim seg_2 ... extract`, truncated to `sequence_length`.

    The longest segment loses tokens from its end first; the special tokens
    are always kept, so the extract token is the last real token.
    """
    budget = sequence_length - len(segments) - 1
    if budget < 0:
        raise ConfigError(
            f"sequence_length {sequence_length} cannot hold the special tokens "
            f"of {len(segments)} segment(s)."
        )
    ids = [start_id]
    for i, segment in enumerate(_fit(segments, budget)):
        if i:
            ids.append(delimiter_id)
        ids.extend(int(t) for t in segment)
    ids.append(extract_id)
    return ids


def transform_inputs(task, examples, start_id, delimiter_id, extract_id, sequence_length, pad_id=0):
    """GPT-1's input transformations, from token ids to padded model inputs.

    Args:
        task: "classification" (each example: a list of ids), "entailment"
            (each example: `(premise, hypothesis)`), "similarity" (`(a, b)`;
            both orders are built), "multiple_choice" (`(context, answers)`,
            `answers` a list of id lists, the same number for every example).
        examples: list of examples as above (token ids, no special tokens).
        start_id, delimiter_id, extract_id: ids of the special tokens.
        sequence_length: int, padded length of every sequence.
        pad_id: int, id written at padded positions.

    Returns:
        dict `token_ids`, `padding_mask` (int32 arrays [B, T], or [B, 2, T]
        for similarity, [B, C, T] for multiple choice).
    """
    import numpy as np

    special = (start_id, delimiter_id, extract_id, sequence_length)
    rows = []
    for example in examples:
        if task == "classification":
            rows.append([pack_sequence([example], *special)])
        elif task == "entailment":
            premise, hypothesis = example
            rows.append([pack_sequence([premise, hypothesis], *special)])
        elif task == "similarity":
            a, b = example
            rows.append([pack_sequence([a, b], *special), pack_sequence([b, a], *special)])
        elif task == "multiple_choice":
            context, answers = example
            rows.append([pack_sequence([context, answer], *special) for answer in answers])
        else:
            raise ConfigError(f"Unknown GPT task {task!r}; expected one of {TASKS}.")
    counts = {len(r) for r in rows}
    if len(counts) > 1:
        raise ConfigError(f"Every example needs the same number of choices; found {sorted(counts)}.")
    n = counts.pop() if counts else 1
    token_ids = np.full((len(rows), n, sequence_length), pad_id, "int32")
    padding_mask = np.zeros((len(rows), n, sequence_length), "int32")
    for i, row in enumerate(rows):
        for j, ids in enumerate(row):
            token_ids[i, j, : len(ids)] = ids
            padding_mask[i, j, : len(ids)] = 1
    if task in ("classification", "entailment"):
        token_ids, padding_mask = token_ids[:, 0], padding_mask[:, 0]
    return {"token_ids": token_ids, "padding_mask": padding_mask}
