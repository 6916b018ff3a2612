"""`python -m recipes.fill_mask` on a module, in a fresh process (issue 23, item 2)."""

import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.tf_only  # the recipe runs the SavedModels (TensorFlow) whatever the backend

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXT = "the cat [MASK] on the mat ."


def test_fill_mask_fresh_process_matches_the_keras_model(hub_module):
    """A new process (it never imported tensorflow_text itself) prints the Keras pretrainer's top tokens."""
    module = hub_module("bert")
    env = dict(os.environ, PYTHONPATH=ROOT, KERAS_BACKEND="tensorflow")
    result = subprocess.run([sys.executable, "-m", "recipes.fill_mask", "--from", module.path, "--top-k", "3", TEXT],
                            env=env, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if "[MASK] 1:" in x][0]

    tokenizer, pretrainer = module.tokenizer, module.model
    ids = [2] + [int(i) for i in np.asarray(tokenizer("the cat"))] + [4] + \
        [int(i) for i in np.asarray(tokenizer("on the mat ."))] + [3]
    x = {"token_ids": np.array([ids], "int32"), "segment_ids": np.zeros((1, len(ids)), "int32"),
         "padding_mask": np.ones((1, len(ids)), "int32"), "masked_lm_positions": np.array([[3]], "int32")}
    logits = np.asarray(pretrainer.predict(x, verbose=0)["mlm"])[0, 0]
    probabilities = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    best = np.argsort(-probabilities)[:3]
    expected = ", ".join(f"{tokenizer.id_to_token(int(i))} ({probabilities[i]:.2f})" for i in best)
    assert line.split("[MASK] 1: ")[1] == expected


def test_fill_mask_refuses_a_module_without_masked_lm(hub_module, capsys):
    from recipes import fill_mask

    with pytest.raises(SystemExit) as info:
        fill_mask.main(["--from", hub_module("gpt").path, TEXT])
    assert info.value.code == 2
    assert "fill-mask needs a module with a masked-LM head" in capsys.readouterr().err
