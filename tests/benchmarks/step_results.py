"""A fine-tuning step case's result as `benchmarks.harness.time_steps` writes it, for the report tests."""

import numpy as np


def step_result(backend, step_s, ratios, threads, params):
    """The base-size result of `backend`: ours `step_s`, transformers twice that, `ratios` the per-round
    transformers / ours ratios; `params` the trainable counts (ours, transformers); one note, "a note"."""
    ours_params, transformers_params = params
    return {"backend": backend, "shape": "base", "batch": 8, "seq": 128, "threads": {"threads": threads},
            "ours": {"step_s": step_s, "params": ours_params, "loss_first": 2.2, "loss_last": 0.5},
            "transformers": {"step_s": 2 * step_s, "params": transformers_params, "loss_first": 2.2,
                             "loss_last": 0.5},
            "vs_transformers": {"median": float(np.median(ratios)), "min": min(ratios), "max": max(ratios),
                                "per_round": ratios}, "notes": ["a note"]}
