"""The GLUE regression / multiple-choice step benchmark's fixed batches (`benchmarks.bench_glue.glue_batch`) and its
report: numpy only, no framework."""

import numpy as np
import pytest

from benchmarks.bench_glue import CHOICES
from benchmarks.bench_glue import STSB_MAX
from benchmarks.bench_glue import glue_batch
from benchmarks.bench_glue import glue_step
from benchmarks.bench_glue import report
from tests.benchmarks.step_results import step_result


def _check_pairs(x, rows, seq):
    ids, segments = x["token_ids"].reshape(rows, seq), x["segment_ids"].reshape(rows, seq)
    assert (ids[:, 0] == 2).all() and (ids[:, -1] == 3).all() and (x["padding_mask"] == 1).all()
    for row in range(rows):  # [CLS] a [SEP] b [SEP]: segment 1 starts right after the middle [SEP]
        middle = int(np.argmax(segments[row])) - 1
        assert ids[row, middle] == 3
        assert (segments[row, :middle + 1] == 0).all() and (segments[row, middle + 1:] == 1).all()


def test_regression_batch_is_pairs_with_stsb_scores():
    x, labels = glue_batch("regression", 8, 128, vocab=30522)
    assert x["token_ids"].shape == (8, 128) and labels.shape == (8,) and labels.dtype == np.float32
    assert 0 <= labels.min() and labels.max() <= STSB_MAX and len(set(labels.tolist())) == 8
    _check_pairs(x, 8, 128)


def test_multiple_choice_batch_is_four_pairs_per_example():
    x, labels = glue_batch("multiple_choice", 2, 64, vocab=1000)
    assert x["token_ids"].shape == (2, CHOICES, 64) and labels.shape == (2,) and labels.dtype == np.int32
    assert 0 <= labels.min() and labels.max() < CHOICES
    _check_pairs(x, 2 * CHOICES, 64)
    # The choices of an example differ (each its own ending).
    assert len({x["token_ids"][0, c].tobytes() for c in range(CHOICES)}) == CHOICES
    again, _ = glue_batch("multiple_choice", 2, 64, vocab=1000)
    assert np.array_equal(again["token_ids"], x["token_ids"])


def test_an_unknown_task_is_refused():
    with pytest.raises(ValueError, match="task must be one of"):
        glue_step(task="ner")


def _result(backend, step_s, ratios):
    return step_result(backend, step_s, ratios, threads=2, params=(109_483_009, 109_483_009))


def test_report_judges_each_task_on_its_best_backend():
    by = {("glue", "regression tensorflow"): _result("tensorflow", 2.0, [1.3, 1.4, 1.5]),
          ("glue", "regression jax"): _result("jax", 3.0, [0.9, 1.0, 1.1]),
          ("glue", "multiple_choice tensorflow"): _result("tensorflow", 2.0, [1.0, 1.1, 1.19]),
          ("tagging", "ner tensorflow"): {"error": "not this group"}}
    sections, targets = report(by, quick=False)
    assert len(sections) == 2 and "not this group" not in "".join(sections)
    assert sections[0].startswith("### GLUE regression") and sections[1].startswith("### Multiple-choice")
    [(regression, measured, ok), (choice, measured_choice, ok_choice)] = targets
    assert "regression" in regression and measured.startswith("1.40x (tensorflow)") and ok
    assert "Multiple-choice" in choice and measured_choice.startswith("1.10x (tensorflow)") and not ok_choice
