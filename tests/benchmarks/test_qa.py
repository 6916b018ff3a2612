"""The Python post-processing of the SQuAD serving benchmark's transformers side (`benchmarks.bench_qa.best_answers`)
and its paired ratios: numpy only, no framework."""

import numpy as np

from benchmarks.bench_qa import best_answers
from benchmarks.bench_qa import paired

# "a b c d e f": doc token t spans characters (2t, 2t + 1). Two windows of seq 8, doc_stride 2:
# [CLS] q [SEP] d d d d [SEP]; window 0 holds doc tokens 0-3, window 1 tokens 2-5.
CONTEXT = "a b c d e f"
SEQUENCE_IDS = [None, 0, None, 1, 1, 1, 1, None]


def window(example, k):
    offsets = [(0, 0), (0, 1), (0, 0)] + [(2 * t, 2 * t + 1) for t in range(2 * k, 2 * k + 4)] + [(0, 0)]
    return example, SEQUENCE_IDS, offsets


def logits(start_at, end_at, value=5.0):
    start, end = np.zeros(8, "float32"), np.zeros(8, "float32")
    start[start_at], end[end_at] = value, value
    return start, end


def test_the_best_valid_span_of_all_windows():
    s0, e0 = logits(4, 5)  # window 0: doc tokens 1..2 ("b c"), score 10
    s1, e1 = logits(5, 6, value=4.0)  # window 1: doc tokens 4..5 ("e f"), score 8
    answers = best_answers(np.stack([s0, s1]), np.stack([e0, e1]), [window(0, 0), window(0, 1)], [CONTEXT],
                           doc_stride=2, n_best_size=3, max_answer_length=4)
    assert answers == [("b c", 2, 5, 10.0)]


def test_starts_outside_their_max_context_window_and_invalid_spans_are_dropped():
    # Window 1's best start is doc token 2 (its position 3), whose max-context window is window 0: dropped, as
    # run_squad; the next start of window 1 (doc token 3, max context there) wins.
    s1, e1 = logits(3, 6, value=9.0)
    s1[4] = 8.0
    s0, e0 = np.zeros(8, "float32"), np.zeros(8, "float32")
    s0[0] = e0[0] = 50.0  # [CLS]: not a context token
    answers = best_answers(np.stack([s0, s1]), np.stack([e0, e1]), [window(0, 0), window(0, 1)], [CONTEXT],
                           doc_stride=2, n_best_size=2, max_answer_length=4)
    assert answers == [("d e f", 6, 11, 17.0)]
    # The same span longer than max_answer_length: nothing valid in window 1's n best; window 0's zeros remain.
    short = best_answers(np.stack([s0, s1]), np.stack([e0, e1]), [window(0, 0), window(0, 1)], [CONTEXT],
                         doc_stride=2, n_best_size=2, max_answer_length=2)
    assert short[0][0] != "d e f"


def test_no_valid_span():
    start, end = logits(6, 3)  # end before start
    answers = best_answers(start[None], end[None], [window(0, 0)], [CONTEXT], doc_stride=2, n_best_size=1)
    assert answers == [("", -1, -1, -np.inf)]


def test_paired_ratios():
    result = paired([2.0, 3.0, 4.0], [1.0, 2.0, 4.0])
    assert result["per_round"] == [2.0, 1.5, 1.0]
    assert (result["median"], result["min"], result["max"]) == (1.5, 1.0, 2.0)
