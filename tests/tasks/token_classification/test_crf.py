"""The linear-chain CRF (issue 42, item 1) against brute force: on small random problems its forward-algorithm
log Z equals the log-sum-exp over all C^n tag sequences (enumerated with itertools.product, NumPy float64), its
log-likelihood equals that enumeration's score minus log Z, and Viterbi's path and score are the enumeration's
arg-max; masks with padding after, before and inside the real positions skip those positions."""

import itertools

import keras
import numpy as np
import pytest

from keras_pretrain.tasks.token_classification.crf import ConditionalRandomField
from keras_pretrain.tasks.token_classification.crf import crf_loss
from keras_pretrain.tasks.token_classification.crf import crf_mask
from tests.testing import to_numpy

TOLERANCE = 1e-4
MAX_DIFF = {}  # the largest difference to brute force, per quantity (printed by the last test)


def problem(seed, batch, steps, tags, start_end=True):
    """A CRF with random weights, emissions [B, T, C] and its mask: row 0 has all T positions, row 1 one, the
    others a random length, and (T > 2) the last two padding before and inside the real positions."""
    rng = np.random.default_rng(seed)
    crf = ConditionalRandomField(tags, include_start_end_transitions=start_end)
    crf.build()
    for variable in crf.weights:
        variable.assign(rng.normal(size=variable.shape).astype("float32"))
    emissions = rng.normal(size=(batch, steps, tags)).astype("float32") * 2
    lengths = np.concatenate([[steps, 1], rng.integers(1, steps + 1, size=batch - 2)])
    mask = np.arange(steps)[None] < lengths[:, None]
    if steps > 2:
        mask[-2:] = rng.random((2, steps)) < 0.6
        mask[-2:, 0], mask[-2:, 1] = False, True
    return crf, emissions, mask


def parameters(crf):
    """(transitions, start, end) in float64 (zeros without start / end transitions)."""
    if not crf.include_start_end_transitions:
        return to_numpy(crf.transitions).astype("float64"), np.zeros(crf.num_tags), np.zeros(crf.num_tags)
    return tuple(to_numpy(v).astype("float64") for v in (crf.transitions, crf.start_transitions, crf.end_transitions))


def brute_force(crf, emissions, mask):
    """Per row: (log Z, best path over the kept positions, its score, {path: score}) by enumeration."""
    transitions, start, end = parameters(crf)
    rows = []
    for scores, kept in zip(emissions.astype("float64"), mask):
        scores = scores[kept]
        table = {}
        for path in itertools.product(range(crf.num_tags), repeat=len(scores)):
            if not path:
                table[path] = 0.0
                continue
            total = start[path[0]] + end[path[-1]] + sum(scores[t, y] for t, y in enumerate(path))
            total += sum(transitions[a, b] for a, b in zip(path, path[1:]))
            table[path] = total
        best = max(table, key=table.get)
        values = np.array(list(table.values()))
        log_z = values.max() + np.log(np.exp(values - values.max()).sum())
        rows.append((log_z, best, table[best], table))
    return rows


def record(name, diff):
    MAX_DIFF[name] = max(MAX_DIFF.get(name, 0.0), float(diff))
    assert diff <= TOLERANCE, (name, diff)


# (seed, rows, T, C, start / end transitions): each one compiled Probe (a few seconds of XLA under JAX)
CASES = [(0, 10, 5, 4, True), (1, 10, 4, 3, False), (2, 8, 3, 2, True), (3, 4, 1, 3, True)]


class Probe(keras.Model):
    """Every quantity of the CRF in one compiled `predict_on_batch` (XLA under JAX, a graph under TensorFlow)."""

    def __init__(self, crf):
        super().__init__()
        self.crf = crf

    def call(self, inputs):
        emissions, tags, mask = inputs
        paths, scores = self.crf.viterbi_decode(emissions, mask)
        return {"log_z": self.crf.log_partition(emissions, mask),
                "score": self.crf.sequence_score(emissions, tags, mask), "paths": paths, "viterbi": scores}


@pytest.mark.parametrize("seed,batch,steps,tags,start_end", CASES)
def test_forward_algorithm_and_viterbi_equal_brute_force(seed, batch, steps, tags, start_end):
    crf, emissions, mask = problem(seed, batch, steps, tags, start_end)
    reference = brute_force(crf, emissions, mask)
    rng = np.random.default_rng(seed + 1000)
    labels = rng.integers(0, tags, size=(batch, steps)).astype("int32")
    labels[~mask] = -100  # masked positions may hold anything
    out = {k: to_numpy(v) for k, v in Probe(crf).predict_on_batch((emissions, labels, mask.astype("int32"))).items()}

    log_z = np.array([r[0] for r in reference])
    record("log Z", np.max(np.abs(out["log_z"] - log_z)))
    gold = np.array([r[3][tuple(row[kept])] for r, row, kept in zip(reference, labels, mask)])
    record("score", np.max(np.abs(out["score"] - gold)))
    paths = out["paths"]
    assert paths.shape == (batch, steps) and paths.dtype == np.int32
    for row, (_, best, _, _) in enumerate(reference):
        assert tuple(paths[row][mask[row]]) == best, (row, paths[row], best)
        assert np.all(paths[row][~mask[row]] == 0)
    record("Viterbi score", np.max(np.abs(out["viterbi"] - [r[2] for r in reference])))


def test_zero_transitions_decode_like_per_token_argmax():
    crf, emissions, mask = problem(7, 6, 5, 4)
    for variable in crf.weights:
        variable.assign(np.zeros(variable.shape, "float32"))
    paths, scores = crf.viterbi_decode(emissions, mask)
    expected = np.where(mask, emissions.argmax(-1), 0)
    assert np.array_equal(to_numpy(paths), expected)
    assert np.allclose(to_numpy(scores), (emissions.max(-1) * mask).sum(-1), atol=1e-5)
    assert np.array_equal(to_numpy(crf(emissions, mask)), expected)  # calling the layer decodes


class Tagger(keras.Model):
    """The CRF alone on given emissions, its loss reading the mask from the labels (-100)."""

    def __init__(self, crf):
        super().__init__()
        self.crf = crf

    def call(self, emissions):
        return self.crf(emissions)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        return crf_loss(self.crf, y, x)


def test_the_loss_is_the_mean_negative_log_likelihood_and_trains_in_fit():
    """`crf_loss` (the mask from the labels: -100 out, one row with nothing kept) equals the brute-force mean of
    log Z - score over the rows, in a compiled `evaluate`; `fit` lowers it (every backend)."""
    crf, emissions, mask = problem(4, 5, 4, 3)
    mask[1] = False
    labels = np.where(mask, np.random.default_rng(4).integers(0, 3, mask.shape), -100).astype("int32")
    reference = brute_force(crf, emissions, mask)
    nll = [r[0] - r[3][tuple(row[kept])] for r, row, kept in zip(reference, labels, mask)]
    assert nll[1] == 0.0
    likelihood = to_numpy(crf.log_likelihood(emissions, *crf_mask(labels, 3)))
    record("log-likelihood", np.max(np.abs(likelihood + nll)))

    model = Tagger(crf)
    model.compile(optimizer=keras.optimizers.Adam(0.1))
    before = model.evaluate(emissions, labels, batch_size=5, verbose=0)
    record("loss", abs(before - np.mean(nll)))
    model.fit(emissions, labels, epochs=10, batch_size=5, verbose=0)
    after = model.evaluate(emissions, labels, batch_size=5, verbose=0)
    assert np.isfinite(after) and after < before - 0.1, (before, after)


def test_zz_report_largest_differences():
    print("CRF vs brute force, largest |difference|:", {k: f"{v:.1e}" for k, v in MAX_DIFF.items()})
