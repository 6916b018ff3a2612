"""ELMo's NER tagger (issue 42, item 1): the biLM's scalar mix -> BiLSTM -> Dense -> CRF (or softmax). On a tiny
random ELMo its tags are the brute-force best sequences of its own emissions under its CRF, its loss is the CRF's
mean negative log-likelihood (brute force; -100 words out of the chain), `fit` lowers it on a synthetic word -> tag
rule, and it saves and loads; the softmax variant's loss is `TokenClassifier`'s. (Under JAX, tracing the ELMo
biLM dominates: every model here is compiled as few times as possible.)"""

import keras
import numpy as np
import pytest

from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks import ElmoTagger
from keras_pretrain.tasks.token_classification.head import TokenLoss
from tests.tasks.token_classification.test_crf import brute_force
from tests.testing import max_abs_diff
from tests.testing import to_numpy

NUM_TAGS = 3
WORDS = 6  # the vocabulary of the synthetic task: word k is always tagged k % NUM_TAGS


def tiny_elmo():
    family = families.get("elmo")
    return family.backbone_class(**family.demo_config)


def data(max_characters, batch=8, width=5, seed=0):
    """char_ids [B, W, max_characters] of sentences of 2..W words drawn from WORDS random spellings (all-zero
    rows after the length), their labels [B, W] (-100 on the padding) and the real words [B, W]."""
    rng = np.random.default_rng(seed)
    spellings = rng.integers(1, 262, size=(WORDS, max_characters)).astype("int32")
    words = rng.integers(0, WORDS, size=(batch, width))
    lengths = rng.integers(2, width + 1, size=batch)
    lengths[0] = width
    real = np.arange(width)[None] < lengths[:, None]
    char_ids = np.where(real[..., None], spellings[words], 0).astype("int32")
    labels = np.where(real, words % NUM_TAGS, -100).astype("int32")
    return {"char_ids": char_ids}, labels, real


def fit(model, x, labels):
    """10 Adam steps on the batch; one step an epoch, so each epoch's loss is that of the weights before its step
    (no dropout)."""
    model.compile(optimizer=keras.optimizers.Adam(0.03))
    return model.fit({**x, "labels": labels}, batch_size=len(labels), epochs=10, verbose=0).history


@pytest.fixture(scope="module")
def crf_run():
    """A CRF tagger, its outputs before `fit`, and the fit's history."""
    keras.utils.set_random_seed(1)
    model = ElmoTagger(tiny_elmo(), NUM_TAGS, lstm_units=8, lstm_layers=1, dropout=0.0)
    x, labels, real = data(model.backbone.max_characters)
    before = model.predict(x, verbose=0)
    reference = brute_force(model.crf, before["emissions"], real)  # per row: log Z, best path, its score, all
    return model, x, labels, real, before, reference, fit(model, x, labels)


def test_the_tags_are_the_viterbi_decode_of_the_emissions(crf_run):
    model, x, labels, real, before, reference, _ = crf_run
    assert sorted(model.input) == ["char_ids"] and model.get_config()["trainable_backbone"] is False
    assert not any(w.trainable for w in model.backbone.weights)  # the biLM frozen; its scalar mix trains
    emissions, tags = before["emissions"], before["tags"]
    assert emissions.shape == (8, 5, NUM_TAGS) and tags.shape == (8, 5)
    assert np.all((tags >= 0) & (tags < NUM_TAGS)) and np.all(tags[~real] == 0)
    for row, (_, best, _, _) in enumerate(reference):
        assert tuple(tags[row][real[row]]) == best, (row, tags[row], best)


def test_fit_lowers_the_crf_loss(crf_run):
    model, x, labels, real, before, reference, history = crf_run
    nll = [r[0] - r[3][tuple(row[kept])] for r, row, kept in zip(reference, labels, real)]
    loss, accuracy = history["loss"], history["token_accuracy"]
    print(f"ElmoTagger CRF loss {loss[0]:.3f} -> {loss[-1]:.3f}, brute force {np.mean(nll):.3f}; "
          f"word accuracy {accuracy[0]:.2f} -> {accuracy[-1]:.2f}")
    assert abs(loss[0] - np.mean(nll)) <= 1e-4, (loss[0], np.mean(nll))
    assert np.isfinite(loss[-1]) and loss[-1] < 0.85 * loss[0], loss
    assert accuracy[-1] > accuracy[0], accuracy


def test_saves_and_loads(crf_run, tmp_path):
    model = crf_run[0]
    x = crf_run[1]
    path = str(tmp_path / "elmo_crf_tagger.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is ElmoTagger and restored.get_config() == model.get_config()
    ours, again = model.predict(x, verbose=0), restored.predict(x, verbose=0)
    assert max_abs_diff(again["emissions"], ours["emissions"]) <= 1e-5 and np.array_equal(again["tags"], ours["tags"])


def test_the_softmax_tagger_has_token_classifiers_loss():
    model = ElmoTagger(tiny_elmo(), NUM_TAGS, lstm_units=8, lstm_layers=1, use_crf=False, dropout=0.0)
    assert model.crf is None
    x, labels, real = data(model.backbone.max_characters)
    before = model.predict(x, verbose=0)
    assert np.array_equal(before["tags"], np.where(real, before["emissions"].argmax(-1), 0))
    expected = float(to_numpy(TokenLoss()(labels, before["emissions"])))
    loss = fit(model, x, labels)["loss"]
    print(f"ElmoTagger softmax loss {loss[0]:.3f} -> {loss[-1]:.3f}")
    assert abs(loss[0] - expected) <= 1e-4, (loss[0], expected)
    assert np.isfinite(loss[-1]) and loss[-1] < 0.85 * loss[0], loss


@pytest.mark.one_backend
def test_the_defaults_are_the_papers_and_bad_arguments_are_config_errors():
    from keras_pretrain.models.bert import BertBackbone

    model = ElmoTagger(tiny_elmo(), NUM_TAGS)
    config = model.get_config()
    assert (config["lstm_units"], config["lstm_layers"], config["dropout"], config["use_crf"]) == (200, 2, 0.5, True)
    for kwargs, name in [({"num_classes": 0}, "num_classes"), ({"lstm_units": 0}, "lstm_units"),
                         ({"lstm_layers": 1.5}, "lstm_layers"), ({"dropout": 1.0}, "dropout"),
                         ({"use_crf": "yes"}, "use_crf")]:
        with pytest.raises(ConfigError, match=name):
            ElmoTagger(model.backbone, **{"num_classes": NUM_TAGS, **kwargs})
    bert = BertBackbone(vocabulary_size=10, num_layers=1, num_heads=1, hidden_dim=4, intermediate_dim=4,
                        max_sequence_length=8)
    with pytest.raises(ConfigError, match="characters"):
        ElmoTagger(bert, NUM_TAGS)
