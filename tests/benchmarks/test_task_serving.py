"""The task-serving benchmark's Python post-processing (the transformers side of
`benchmarks.bench_task_serving`: each word's tag from its first piece, conlleval's entities with their offsets)
and its report. No model, no timing."""

import numpy as np
import pytest

from benchmarks.bench_task_serving import CHOICES
from benchmarks.bench_task_serving import LABELS
from benchmarks.bench_task_serving import examples
from benchmarks.bench_task_serving import report
from benchmarks.bench_task_serving import task_serving
from benchmarks.bench_task_serving import word_entities
from benchmarks.bench_task_serving import word_tags


def test_each_word_takes_its_first_piece():
    labels = LABELS["ner"]
    # [CLS] New York er ##s live [SEP] [PAD]: word ids None 0 1 2 2 3 None None
    word_ids = [None, 0, 1, 2, 2, 3, None, None]
    logits = np.full((8, len(labels)), -5.0, "float32")
    for position, tag in ((1, "B-LOC"), (2, "I-LOC"), (3, "O"), (4, "B-PER"), (5, "O")):
        logits[position, labels.index(tag)] = 5.0
    tags = word_tags(logits, word_ids, labels)
    assert [tag for tag, _ in tags] == ["B-LOC", "I-LOC", "O", "O"]  # "ers": its first piece says O, not ##s
    expected = np.exp(5.0) / (np.exp(5.0) + (len(labels) - 1) * np.exp(-5.0))
    assert all(p == pytest.approx(expected) for _, p in tags)


def test_entities_carry_their_text_offsets_and_mean_probability():
    text = "Fly  to New York, said Ann"
    words = text.split()
    tags = [("O", 0.9), ("O", 0.9), ("B-LOC", 0.8), ("I-LOC", 0.6), ("O", 0.9), ("B-PER", 0.7)]
    assert word_entities(text, words, tags) == [("New York,", "LOC", 8, 17, pytest.approx(0.7)),
                                                ("Ann", "PER", 23, 26, pytest.approx(0.7))]
    # An I- tag after O begins an entity (conlleval's chunking, as the SavedModel's).
    assert [e[1] for e in word_entities("a b", ["a", "b"], [("O", 1.0), ("I-ORG", 1.0)])] == ["ORG"]


def _words(text, add_special_tokens=True):  # a tokenizer whose pieces are the words
    assert not add_special_tokens
    return {"input_ids": text.split()}


def test_pairs_and_choices_fit_one_window_with_their_specials():
    seq = 24
    pairs = examples("regression", 6, _words, seq, seed=1)
    assert len(pairs) == 6 and len(set(pairs)) == 6
    assert all(len(a.split()) + len(b.split()) <= seq - 3 for a, b in pairs)  # [CLS] a [SEP] b [SEP]
    assert max(len(a.split()) + len(b.split()) for a, b in pairs) >= seq // 3  # not trivially short
    choices = examples("choice", 4, _words, seq, seed=1)
    assert [len(endings) for _, endings in choices] == [CHOICES] * 4
    assert all(len(context.split()) + len(ending.split()) <= seq - 3
               for context, endings in choices for ending in endings)
    sentences = examples("ner", 5, _words, seq)
    assert all(isinstance(x, str) and len(x.split()) <= seq - 2 for x in sentences)


def test_an_unknown_task_is_refused():
    with pytest.raises(ValueError, match="task must be one of"):
        task_serving(task="qa")


def _result(task, throughput):
    return {"task": task, "shape": "base", "params": 109_483_778, "batch": 32, "threads": {"threads": 2},
            "agreement": "32/32 labels", "notes": ["a note"],
            "ours": {"b1_ms": 20.0, "sentences_per_s": 100.0},
            "transformers": {"b1_ms": 25.0, "sentences_per_s": 90.0},
            "vs_transformers": {"latency": {"median": 1.25, "min": 1.1, "max": 1.3},
                                "throughput": {"median": throughput, "min": throughput, "max": throughput}}}


def test_report_judges_each_task_at_base_size():
    by = {("serving", "task classify"): _result("classify", 1.1), ("serving", "task ner"): _result("ner", 0.9),
          ("serving", "task choice"): _result("choice", 1.0),
          ("serving", "saved_model bert"): {"error": "another case"}}
    [section], targets = report(by, quick=False)
    assert section.startswith("### Task serving") and "another case" not in section and "- a note" in section
    assert [(name.split()[0], ok) for name, _, ok in targets] == [("classify", True), ("ner", False), ("choice", True)]
