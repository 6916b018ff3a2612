"""Every family: pretrain (tiny), fine-tune, export the classifier, and check the export."""

import os

import numpy as np
import pytest

from recipes import finetune
from recipes import pretrain
from tests.export.serving_check import serve
from tests.recipes.test_pretrain_recipe import CORPUS

pytestmark = pytest.mark.tf_only  # end-to-end recipes: one backend is enough

FAMILY_FILES = {
    "albert": ["vocab.txt", "preset/config.json"],
    "bert": ["vocab.txt", "preset/config.json"],
    "roberta": ["vocab.txt", "preset/config.json"],
    "distil_bert": ["vocab.txt", "preset/config.json"],
    "ernie": ["vocab.txt", "preset/config.json"],
    "gpt": ["vocab.json", "merges.txt", "preset/config.json", "preset/merges.txt"],
    "xlnet": ["vocab.txt", "preset/config.json"],
    "elmo": ["words.txt", "preset/config.json", "preset/words.txt"],
}
FROM_MODULE = ("albert", "roberta", "xlnet", "gpt")
ROWS = [("1", "call me ishmael", "some years ago"), ("0", "hello world", "床前明月光")] * 8
LONG = "call me ishmael some years ago never mind how long precisely, having little or no money in my purse"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(CORPUS * 4, encoding="utf-8")
    return str(path)


def write_table(path, header, rows):
    path.write_text("\n".join(["\t".join(header)] + ["\t".join(r) for r in rows]) + "\n", encoding="utf-8")
    return str(path)


# BERT (WordPiece in the serving graph) in every run; the other families
# (35-55 s each on 2 cores) under `make test-large` (GPT's serving export is
# also checked by tests/tasks/classification/test_serving.py on every backend).
@pytest.mark.parametrize("model", [m if m == "bert" else pytest.param(m, marks=pytest.mark.large)
                                   for m in FAMILY_FILES])
def test_pretrain_then_finetune(corpus, tmp_path, model):
    out = str(tmp_path / model)
    summary = pretrain.main([
        "--model", model, "--corpus", corpus, "--out", out, "--steps", "2", "--steps-per-epoch", "2",
        "--batch-size", "4", "--seq-length", "16", "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0",
    ])
    assert summary["steps"] == 2
    for name in ["pretrainer.keras", "loss.png", "summary.json", "module/metadata.json",
                 "module/encoder/saved_model.pb"] + FAMILY_FILES[model]:
        assert os.path.exists(os.path.join(out, name)), name
    # Half of the families fine-tune from the exported module, the others from the run folder.
    source = os.path.join(out, "module") if model in FROM_MODULE else out

    pairs = write_table(tmp_path / "p.tsv", ["label", "text_a", "text_b"], ROWS)
    ft_out = tmp_path / "ft"
    summary = finetune.main(["--from", source, "--task", "pair", "--data", pairs, "--epochs", "1", "--batch-size", "4",
                             "--seq-length", "16", "--out", str(ft_out), "--verbose", "0"])
    assert summary["family"] == model and summary["rows"] == 16
    assert 0.0 <= summary["accuracy_after"] <= 1.0

    # The serving SavedModel, run in a process that imports only tensorflow and
    # tensorflow_text, computes from raw strings what the Keras classifier
    # computes from the recipe's (Python) encoding of the same strings.
    import keras

    classifier = keras.models.load_model(str(ft_out / "classifier.keras"), compile=False)
    _, backbone, tokenizer = finetune.load_pretrained(None, source)
    special = None
    if model == "gpt":
        special = tokenizer.add_special_tokens(finetune.GPT_SPECIAL_TOKENS)
    elif model != "elmo":
        special = (tokenizer.token_to_id(tokenizer.cls_token), tokenizer.token_to_id(tokenizer.sep_token))
    text_a, text_b = [r[1] for r in ROWS[:2]] + [LONG], [r[2] for r in ROWS[:2]] + ["hello world"]
    x = finetune.encode(model, tokenizer, [text_a, text_b], 16, special)
    x = {name: x[name] for name in classifier.input}
    expected = classifier.predict(x, verbose=0)
    expected = expected["logits"] if isinstance(expected, dict) else expected
    assert summary["serving"]["labels"] == ["0", "1"]
    inputs = ({k: v.tolist() for k, v in x.items()} if model == "gpt" else {"text_a": text_a, "text_b": text_b})
    assert sorted(inputs) == sorted(summary["serving"]["inputs"])
    served, imported = serve(ft_out / "classifier" / "1", inputs)
    assert imported == []
    assert set(served) == {"logits", "probabilities", "label_ids", "labels"}
    assert np.abs(served["logits"] - expected).max() < 1e-4, (served["logits"], expected)
    assert np.abs(served["probabilities"].sum(-1) - 1).max() < 1e-5
    assert served["label_ids"].tolist() == expected.argmax(-1).tolist()
    assert served["labels"].tolist() == [str(i) for i in expected.argmax(-1)]


@pytest.mark.parametrize(
    "family, segments, ids, types",
    [
        ("bert", [[5, 6], [7]], [2, 5, 6, 3, 7, 3], [0, 0, 0, 0, 1, 1]),
        ("roberta", [[5, 6], [7]], [2, 5, 6, 3, 3, 7, 3], [0, 0, 0, 0, 1, 1, 1]),
        ("xlnet", [[5, 6], [7]], [5, 6, 3, 7, 3, 2], [0, 0, 0, 1, 1, 2]),
        ("bert", [[5, 6, 8, 9, 10], [7]], [2, 5, 6, 8, 3, 7, 3], [0, 0, 0, 0, 0, 1, 1]),  # truncated to 7
    ],
)
def test_pack_formats(family, segments, ids, types):
    packed = finetune.pack(family, segments, (2, 3), 7)
    assert packed == (ids, types)


def test_truncate_is_tensorflow_texts_round_robin():
    """The recipe's Python trimming keeps what the serving graph's `RoundRobinTrimmer` keeps."""
    import tensorflow as tf
    import tensorflow_text as tf_text

    rng = np.random.default_rng(0)
    for _ in range(40):
        segments = [list(range(int(rng.integers(0, 9)))) for _ in range(int(rng.integers(1, 3)))]
        budget = int(rng.integers(0, 12))
        expected = tf_text.RoundRobinTrimmer(budget).trim([tf.ragged.constant([s], tf.int32) for s in segments])
        assert finetune.truncate(segments, budget) == [e.to_list()[0] for e in expected], (segments, budget)
