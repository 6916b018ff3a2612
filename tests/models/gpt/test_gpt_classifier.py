"""GPTClassifier: input transformations, L3 = L2 + lambda * L1, fine-tuning."""

import keras
import numpy as np
import pytest

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt import GPTBackbone
from keras_pretrain.models.gpt import GPTClassifier
from keras_pretrain.models.gpt import transform_inputs
from tests.models.gpt.test_gpt_causal_lm import reference_lm_loss
from tests.testing import run_task_test
from tests.testing import to_numpy

VOCAB = 40
START, DELIM, EXTRACT = 37, 38, 39
SPECIAL = dict(start_id=START, delimiter_id=DELIM, extract_id=EXTRACT)
TINY = dict(vocabulary_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


def test_input_transformations():
    out = transform_inputs("classification", [[1, 2, 3], [4]], sequence_length=6, **SPECIAL)
    np.testing.assert_array_equal(out["token_ids"], [[START, 1, 2, 3, EXTRACT, 0], [START, 4, EXTRACT, 0, 0, 0]])
    np.testing.assert_array_equal(out["padding_mask"], [[1, 1, 1, 1, 1, 0], [1, 1, 1, 0, 0, 0]])
    out = transform_inputs("entailment", [([1, 2], [3])], sequence_length=7, **SPECIAL)
    np.testing.assert_array_equal(out["token_ids"], [[START, 1, 2, DELIM, 3, EXTRACT, 0]])
    out = transform_inputs("similarity", [([1, 2], [3])], sequence_length=6, **SPECIAL)
    assert out["token_ids"].shape == (1, 2, 6)
    np.testing.assert_array_equal(out["token_ids"][0], [[START, 1, 2, DELIM, 3, EXTRACT], [START, 3, DELIM, 1, 2, EXTRACT]])
    out = transform_inputs("multiple_choice", [([1], [[2], [3, 4], [5]])], sequence_length=6, **SPECIAL)
    assert out["token_ids"].shape == (1, 3, 6)
    np.testing.assert_array_equal(out["token_ids"][0, 1], [START, 1, DELIM, 3, 4, EXTRACT])
    # Truncation trims the longest segment and keeps the extract token last.
    out = transform_inputs("entailment", [([1, 2, 3, 4, 5, 6], [7, 8])], sequence_length=7, **SPECIAL)
    np.testing.assert_array_equal(out["token_ids"], [[START, 1, 2, DELIM, 7, 8, EXTRACT]])
    with pytest.raises(ConfigError):
        transform_inputs("multiple_choice", [([1], [[2]]), ([1], [[2], [3]])], sequence_length=6, **SPECIAL)
    with pytest.raises(ConfigError):
        transform_inputs("translation", [[1]], sequence_length=6, **SPECIAL)


def examples(task, n, seed=0):
    """A synthetic task: the label is whether the first segment starts with an even token."""
    rng = np.random.default_rng(seed)
    items, labels = [], []
    for _ in range(n):
        a = rng.integers(1, 30, rng.integers(2, 5)).tolist()
        b = rng.integers(1, 30, rng.integers(1, 4)).tolist()
        label = int(a[0] % 2 == 0)
        if task == "classification":
            items.append(a)
        elif task in ("entailment", "similarity"):
            items.append((a, b))
        else:  # multiple choice: the right answer repeats the context's first token
            answers = [[a[0] % 29 + 1], [a[0]]] if label else [[a[0]], [a[0] % 29 + 1]]
            items.append((a, answers))
            label = 1 - label
        labels.append(label)
    data = transform_inputs(task, items, sequence_length=12, **SPECIAL)
    return data, np.array(labels, "int32")


def expected_l3(outputs, data, labels, lm_weight):
    logits = np.asarray(outputs["logits"], "float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    l2 = -np.mean(log_probs[np.arange(len(labels)), labels])
    flat = {k: v.reshape(-1, v.shape[-1]) for k, v in data.items()}
    lm = np.asarray(outputs["lm"]).reshape(flat["token_ids"].shape + (-1,))
    l1 = reference_lm_loss(lm, flat)
    return l2 + lm_weight * l1, l2, l1


@pytest.mark.parametrize("task", ["entailment", "multiple_choice"])
def test_l3_is_l2_plus_lambda_l1(task):
    keras.utils.set_random_seed(0)
    lm_weight = 0.7
    model = GPTClassifier(GPTBackbone(**TINY, dropout=0.0), num_classes=2, task=task,
                          lm_weight=lm_weight, dropout=0.0)
    data, labels = examples(task, 6)
    outputs = to_numpy(model(data))
    assert outputs["logits"].shape == (6, 2)
    l3, l2, l1 = expected_l3(outputs, data, labels, lm_weight)
    assert l2 > 0.05 and l1 > 0.05
    result = model.evaluate(data, labels, batch_size=6, verbose=0, return_dict=True)
    assert abs(result["loss"] - l3) < 1e-5, (result, l3)
    # The same through fit (learning rate 0: the reported loss is L3 of these weights).
    model.compile(optimizer=keras.optimizers.SGD(0.0))
    history = model.fit({**data, "label": labels}, batch_size=6, epochs=1, verbose=0)
    assert abs(history.history["loss"][0] - l3) < 1e-5
    # Lambda is settable after construction.
    model.compile(loss_weights={"logits": 1.0, "lm": 0.0})
    result = model.evaluate(data, labels, batch_size=6, verbose=0, return_dict=True)
    assert abs(result["loss"] - l2) < 1e-5


def test_similarity_uses_both_orders(tmp_path):
    keras.utils.set_random_seed(0)
    model = GPTClassifier(GPTBackbone(**TINY, dropout=0.0), num_classes=3, task="similarity", dropout=0.0)
    data, labels = examples("similarity", 4)
    outputs = to_numpy(model(data))
    assert outputs["logits"].shape == (4, 3) and outputs["lm"].shape == (4, 2, 12, VOCAB)
    swapped = {k: v[:, ::-1] for k, v in data.items()}
    np.testing.assert_allclose(outputs["logits"], to_numpy(model(swapped))["logits"], atol=1e-5)
    l3, _, _ = expected_l3(outputs, data, labels, 0.5)
    assert abs(model.evaluate(data, labels, batch_size=4, verbose=0, return_dict=True)["loss"] - l3) < 1e-5
    path = str(tmp_path / "similarity.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    np.testing.assert_allclose(to_numpy(restored(data))["logits"], outputs["logits"], atol=1e-5)


@pytest.mark.parametrize("task", ["entailment"])
def test_fine_tuning_lowers_the_loss(task, tmp_path):
    keras.utils.set_random_seed(0)
    model = GPTClassifier(GPTBackbone(**TINY), num_classes=2, task=task, dropout=0.1)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    data, labels = examples(task, 64)
    before = model.evaluate(data, labels, batch_size=32, verbose=0, return_dict=True)["loss"]
    run_task_test(model, {**data, "label": labels}, tmp_path, predict_data=data, steps=12)
    after = model.evaluate(data, labels, batch_size=32, verbose=0, return_dict=True)["loss"]
    assert after < before - 0.2, (before, after)


def test_unknown_task():
    with pytest.raises(ConfigError, match="Unknown GPT task"):
        GPTClassifier(GPTBackbone(**TINY), task="translation")
