"""Every family: pretrain (tiny), fine-tune, export the classifier, and check the export."""

import os

import numpy as np
import pytest

from recipes import finetune
from recipes import pretrain
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


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    path.write_text(CORPUS * 4, encoding="utf-8")
    return str(path)


def write_table(path, header, rows):
    path.write_text("\n".join(["\t".join(header)] + ["\t".join(r) for r in rows]) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("model", list(FAMILY_FILES))
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

    # The exported SavedModel computes what the Keras classifier computes.
    import keras
    import tensorflow as tf

    classifier = keras.models.load_model(str(ft_out / "classifier.keras"), compile=False)
    _, backbone, tokenizer = finetune.load_pretrained(None, source)
    special = None
    if model == "gpt":
        special = tokenizer.add_special_tokens(finetune.GPT_SPECIAL_TOKENS)
    elif model != "elmo":
        special = (tokenizer.token_to_id(tokenizer.cls_token), tokenizer.token_to_id(tokenizer.sep_token))
    x = finetune.encode(model, tokenizer, [[r[1] for r in ROWS[:2]], [r[2] for r in ROWS[:2]]], 16, special)
    x = {name: x[name] for name in classifier.input}
    expected = classifier.predict(x, verbose=0)
    expected = expected["logits"] if isinstance(expected, dict) else expected
    loaded = tf.saved_model.load(str(ft_out / "savedmodel"))
    served = loaded.serve(x)
    served = served["logits"] if isinstance(served, dict) else served
    assert np.abs(np.asarray(served) - np.asarray(expected)).max() < 1e-5


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
