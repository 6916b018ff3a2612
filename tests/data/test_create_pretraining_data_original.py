"""Our static data against Google's original `create_pretraining_data.py` (PyPI `bert-tensorflow`, test extra).

The original runs as it is (it imports `tensorflow.compat.v1`), in a subprocess for the whole script. Same
corpus, vocabulary, flags and seed must give the same instances, in the same order, record for record.
"""

import collections
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from keras_pretrain.data.masking import TokenMasking
from keras_pretrain.data.pipeline import create_training_instances
from keras_pretrain.data.tfrecords import read_tfrecords
from recipes import create_pretraining_data as recipe

pytestmark = pytest.mark.tf_only

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "corpus", "pretrain.txt")


def _corpus(tmp_path, lines=1500):
    with open(CORPUS, encoding="utf-8") as f:
        text = f.read().split("\n")[:lines]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return str(path), text


def _vocab(tmp_path, text, size=3000):
    # Specials, every character (and its ## form), then frequent words: every line tokenizes without [UNK]
    # in most words, and some words split into pieces.
    words = collections.Counter(w for line in text for w in re.findall(r"\w+", line.lower()))
    chars = sorted({c for line in text for c in line.lower() if not c.isspace()})
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars]
    vocab += [w for w, _ in words.most_common() if w not in set(vocab)][: max(0, size - len(vocab))]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    return str(path)


def test_instances_equal_the_original_builder_draw_for_draw(tmp_path):
    original = pytest.importorskip("bert.create_pretraining_data")
    from absl import flags

    from bert import tokenization

    if not flags.FLAGS.is_parsed():
        flags.FLAGS.mark_as_parsed()
    corpus, text = _corpus(tmp_path)
    tokenizer = tokenization.FullTokenizer(_vocab(tmp_path, text), do_lower_case=True)
    expected = original.create_training_instances(
        [corpus], tokenizer, 64, 3, 0.1, 0.15, 10, random.Random(7))
    documents = [[]]
    for line in text:
        if not line.strip():
            documents.append([])
        tokens = tokenizer.tokenize(line.strip())
        if tokens:
            documents[-1].append(tokens)
    masking = TokenMasking(rate=0.15, max_predictions=10, vocabulary=list(tokenizer.vocab))
    ours = create_training_instances(documents, "nsp", masking, 64, 3, 0.1, random.Random(7))
    assert len(ours) == len(expected) > 1000
    for a, b in zip(expected, ours):
        assert (a.tokens, a.segment_ids, a.is_random_next) == (b.tokens, b.segment_ids, b.is_random_next)
        assert (a.masked_lm_positions, a.masked_lm_labels) == (b.masked_lm_positions, b.masked_lm_labels)


def test_recipe_files_equal_the_original_script_record_for_record(tmp_path):
    pytest.importorskip("bert.create_pretraining_data")
    corpus, text = _corpus(tmp_path)
    vocab = _vocab(tmp_path, text)
    flags = dict(max_seq_length=64, max_predictions_per_seq=10, masked_lm_prob=0.15, random_seed=3,
                 dupe_factor=2, short_seq_prob=0.1)
    theirs = tmp_path / "original.tfrecord"
    subprocess.run(
        [sys.executable, "-m", "bert.create_pretraining_data", f"--input_file={corpus}",
         f"--output_file={theirs}", f"--vocab_file={vocab}", "--do_lower_case=True"]
        + [f"--{k}={v}" for k, v in flags.items()],
        check=True, capture_output=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=600,
    )
    ours = tmp_path / "ours.tfrecord"
    argv = ["--input_file", corpus, "--output_file", str(ours), "--vocab_file", vocab,
            "--num_examples_to_print", "0"] + [x for k, v in flags.items() for x in (f"--{k}", str(v))]
    assert recipe.main(argv) == 0
    a = list(read_tfrecords(str(theirs), 64, 10).as_numpy_iterator())
    b = list(read_tfrecords(str(ours), 64, 10).as_numpy_iterator())
    assert len(a) == len(b) > 1000
    for x, y in zip(a, b):
        for name in x:
            np.testing.assert_array_equal(x[name], y[name], err_msg=name)
