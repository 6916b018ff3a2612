"""The NER step benchmark's fixed batch (`benchmarks.bench_tagging.ner_batch`) and its report: numpy only, no
framework."""

import math

import numpy as np

from benchmarks.bench_tagging import CONLL_LABELS
from benchmarks.bench_tagging import IGNORE
from benchmarks.bench_tagging import SUBWORD_SHARE
from benchmarks.bench_tagging import ner_batch
from benchmarks.bench_tagging import report
from tests.benchmarks.step_results import step_result


def test_labels_ignore_the_specials_and_about_the_subword_share():
    batch, seq = 64, 128
    x, labels = ner_batch(batch, seq, vocab=30522)
    assert labels.shape == (batch, seq) and labels.dtype == np.int32
    assert (labels[:, 0] == IGNORE).all() and (labels[:, -1] == IGNORE).all()
    inner = labels[:, 1:-1]
    kept = inner[inner != IGNORE]
    assert kept.min() >= 0 and kept.max() < len(CONLL_LABELS) == 9
    assert set(np.unique(kept)) == set(range(9))  # every tag drawn
    n = inner.size
    share = float((inner == IGNORE).mean())
    assert abs(share - SUBWORD_SHARE) < 5 * math.sqrt(SUBWORD_SHARE * (1 - SUBWORD_SHARE) / n)  # binomial s.e.
    # The inputs: [CLS] ... [SEP], every position real, one segment, ids inside the vocabulary.
    assert (x["token_ids"][:, 0] == 2).all() and (x["token_ids"][:, -1] == 3).all()
    assert x["token_ids"].max() < 30522 and (x["padding_mask"] == 1).all() and (x["segment_ids"] == 0).all()


def test_the_batch_is_fixed_by_its_seed():
    a, b, c = ner_batch(4, 16, 100), ner_batch(4, 16, 100), ner_batch(4, 16, 100, seed=1)
    assert np.array_equal(a[1], b[1]) and np.array_equal(a[0]["token_ids"], b[0]["token_ids"])
    assert not np.array_equal(a[1], c[1])


def _result(backend, step_s, ratios):
    return step_result(backend, step_s, ratios, threads=1, params=(109_080_585, 108_489_993))


def test_report_takes_the_best_backend_for_the_target():
    by = {("tagging", "ner jax"): _result("jax", 5.0, [0.9, 1.0, 1.1]),
          ("tagging", "ner torch"): _result("torch", 3.0, [1.2, 1.3, 1.5]),
          ("tagging", "ner tensorflow"): {"error": "boom"},
          ("qa", "step jax"): {"error": "not this group"}}
    sections, targets = report(by, quick=False)
    assert len(sections) == 1 and "1.30x (1.20-1.50)" in sections[0] and "error: boom" in sections[0]
    assert "not this group" not in sections[0] and "- a note" in sections[0]
    [(name, measured, ok)] = targets
    assert measured.startswith("1.30x (torch)") and "jax 1.000x" in measured and ok
    by[("tagging", "ner torch")] = _result("torch", 3.0, [1.0, 1.1, 1.19])
    assert not report(by, quick=False)[1][0][2]
