"""GPTCausalLM: next-token loss, perplexity, cached generation, samplers."""

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_pretrain.errors import ConfigError
from keras_pretrain.models.gpt import GPTBackbone
from keras_pretrain.models.gpt import GPTCausalLM
from keras_pretrain.models.gpt import make_sampler
from tests.testing import run_task_test
from tests.testing import to_numpy

VOCAB = 40
TINY = dict(vocabulary_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=24)


@pytest.fixture(scope="module")
def lm():
    keras.utils.set_random_seed(1)
    return GPTCausalLM(GPTBackbone(**TINY, dropout=0.0))


def blocks(batch=4, length=10, seed=0, pad_from=6):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, VOCAB, (batch, length)).astype("int32")
    padding_mask = np.ones_like(token_ids)
    padding_mask[0, pad_from:] = 0
    token_ids[0, pad_from:] = 0
    return {"token_ids": token_ids, "padding_mask": padding_mask}


def reference_lm_loss(logits, data):
    """Mean -log p(token t+1 | ..t) over real targets, in NumPy."""
    logits = np.asarray(logits, "float64")[:, :-1]
    targets = data["token_ids"][:, 1:]
    weights = data["padding_mask"][:, 1:].astype("float64")
    log_probs = logits - np.log(np.sum(np.exp(logits - logits.max(-1, keepdims=True)), -1, keepdims=True)) - logits.max(-1, keepdims=True)
    nll = -np.take_along_axis(log_probs, targets[..., None], -1)[..., 0]
    return float(np.sum(nll * weights) / np.sum(weights))


def test_loss_and_perplexity_match_the_definition(lm):
    data = blocks()
    logits = to_numpy(lm(data))
    expected = reference_lm_loss(logits, data)
    results = lm.evaluate(data, batch_size=4, verbose=0, return_dict=True)
    assert abs(results["loss"] - expected) < 1e-5
    assert abs(results["perplexity"] - np.exp(expected)) < 1e-3 * np.exp(expected)
    # The same with the original feature names and no mask (all tokens real).
    full = blocks(pad_from=10)
    results = lm.evaluate({"input_ids": full["token_ids"]}, batch_size=4, verbose=0, return_dict=True)
    assert abs(results["loss"] - reference_lm_loss(to_numpy(lm(full)), full)) < 1e-5


def test_fit_dataset_and_round_trip(tmp_path):
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    lm = GPTCausalLM(GPTBackbone(**TINY))
    lm.compile(optimizer=keras.optimizers.Adam(3e-3))
    data = blocks(batch=8, length=12, pad_from=12)
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(4)
    before = lm.evaluate(dataset, verbose=0, return_dict=True)["loss"]
    history = run_task_test(lm, dataset, tmp_path, predict_data=data, steps=15)
    assert "perplexity" in history.history
    assert lm.evaluate(dataset, verbose=0, return_dict=True)["loss"] < before - 0.1


def uncached_greedy(lm, prompts, max_length):
    """Greedy decoding by re-running the whole sequence for every new token."""
    rows = [list(p) for p in prompts]
    x = np.zeros((len(rows), max_length), "int32")
    while any(len(r) < max_length for r in rows):
        for i, r in enumerate(rows):
            x[i, : len(r)] = r
        # Right padding never changes earlier positions (causal attention).
        logits = to_numpy(lm({"token_ids": x, "padding_mask": np.ones_like(x)}))
        for i, r in enumerate(rows):
            if len(r) < max_length:
                r.append(int(np.argmax(logits[i, len(r) - 1])))
    return rows


def test_cached_generation_equals_uncached(lm):
    lm.compile(sampler="greedy")
    prompts = [[3, 9, 27], [5], [7, 7, 1, 30, 2]]
    cached = lm.generate_ids(prompts, max_length=12)
    assert cached == uncached_greedy(lm, prompts, 12)
    for prompt, ours in zip(prompts, cached):
        assert ours[: len(prompt)] == prompt and len(ours) == 12


def test_one_cached_step_equals_the_full_pass(lm):
    data = blocks(batch=2, length=9, pad_from=9)
    full = to_numpy(lm(data))
    b = lm.backbone
    cache = ops.zeros((2, b.num_layers, 2, 9, b.num_heads, b.hidden_dim // b.num_heads))
    _, _, cache = lm.call_with_cache(data["token_ids"][:, :6], cache, 0)
    for t in range(6, 9):
        logits, _, cache = lm.call_with_cache(data["token_ids"][:, t : t + 1], cache, t)
        np.testing.assert_allclose(to_numpy(logits)[:, 0], full[:, t], atol=1e-5)


def test_stop_tokens_and_bad_lengths(lm):
    lm.compile(sampler="greedy")
    first = lm.generate_ids([[3, 9]], max_length=10)[0]
    stop = first[2]
    out = lm.generate_ids([[3, 9]], max_length=10, stop_token_ids=[stop])[0]
    assert out == first[:3]
    with pytest.raises(ConfigError):
        lm.generate_ids([[3]], max_length=25)
    with pytest.raises(ConfigError):
        lm.generate_ids([[1] * 6], max_length=5)


def test_top_k_generation_stays_in_the_top_k(lm):
    lm.compile(sampler=make_sampler("top_k", k=3, seed=1, temperature=2.0))
    prompts = [[i % (VOCAB - 1) + 1, 4] for i in range(64)]
    out = np.array(lm.generate_ids(prompts, max_length=3))
    x = np.array(prompts, "int32")
    logits = to_numpy(lm({"token_ids": x, "padding_mask": np.ones_like(x)}))[:, -1]
    top3 = np.argsort(-logits, axis=-1)[:, :3]
    assert all(token in row for token, row in zip(out[:, 2], top3))
    assert len(set(out[:, 2].tolist())) > 1  # really sampled, not greedy


# --- Sampler statistics (many draws, binomial standard error) ---------------

LOGITS = np.log(np.array([0.4, 0.25, 0.15, 0.1, 0.06, 0.04], "float32"))
DRAWS = 4000


def draw(sampler, logits=LOGITS, draws=DRAWS):
    """`draws` independent next tokens for fixed logits (one row each)."""
    rows = ops.convert_to_tensor(np.tile(logits, (draws, 1)))

    def next(prompt, cache, index):
        return rows, None, cache

    prompt = ops.zeros((draws, 1), "int32")
    return to_numpy(sampler(next=next, prompt=prompt, index=0))[:, 0]


def check_frequencies(samples, expected):
    freq = np.bincount(samples, minlength=len(expected)) / len(samples)
    se = np.sqrt(np.maximum(expected * (1 - expected), 1e-12) / len(samples))
    assert np.all(np.abs(freq - expected) <= 5 * se + 1e-12), (freq, expected)


def test_top_k_statistics():
    samples = draw(make_sampler("top_k", k=3, seed=0))
    assert set(samples.tolist()) <= {0, 1, 2}
    p = np.exp(LOGITS[:3]) / np.exp(LOGITS[:3]).sum()
    check_frequencies(samples, np.concatenate([p, np.zeros(3)]))


def test_top_p_statistics():
    # Nucleus for p=0.75: 0.4 + 0.25 = 0.65 < 0.75, + 0.15 = 0.8 >= 0.75 -> tokens {0, 1, 2}.
    samples = draw(make_sampler("top_p", p=0.75, seed=0))
    assert set(samples.tolist()) <= {0, 1, 2}
    p = np.array([0.4, 0.25, 0.15]) / 0.8
    check_frequencies(samples, np.concatenate([p, np.zeros(3)]))


def test_temperature_statistics():
    temperature = 2.0
    samples = draw(make_sampler("random", temperature=temperature, seed=0))
    p = np.exp(LOGITS / temperature)
    check_frequencies(samples, p / p.sum())


def test_greedy_sampler_and_bad_options():
    assert set(draw(make_sampler("greedy"), draws=10).tolist()) == {0}
    assert isinstance(make_sampler("top_p", p=0.5), keras_hub.samplers.TopPSampler)
    for kwargs in ({"name": "top_k", "k": 0}, {"name": "top_p", "p": 1.5}, {"name": "beam"},
                   {"name": "greedy", "temperature": 0}):
        with pytest.raises(ConfigError):
            make_sampler(**kwargs)
