"""train_on_batch / test_on_batch with dict targets (keras-hub's convert the whole `y` at once)."""

import numpy as np
import pytest

from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from tests.models.bert.test_bert_tasks import TINY
from tests.models.bert.test_bert_tasks import pretraining_features


@pytest.fixture(scope="module")
def pretrainer():
    return BertPretrainer(BertBackbone(**TINY, dropout=0.0))


def split(features):
    x = {"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
         "padding_mask": features["input_mask"], "masked_lm_positions": features["masked_lm_positions"]}
    y = {"mlm": features["masked_lm_ids"], "nsp": features["next_sentence_labels"]}
    sw = {"mlm": features["masked_lm_weights"], "nsp": np.ones((len(features["input_ids"]), 1), "float32")}
    return x, y, sw


def test_dict_targets(pretrainer):
    features = pretraining_features(n=4)
    x, y, sw = split(features)
    before = pretrainer.test_on_batch(x, y, sample_weight=sw, return_dict=True)
    # The same numbers from the original feature dict (targets adapted inside).
    from_features = pretrainer.test_on_batch(features, return_dict=True)
    for key in ("loss", "mlm_loss", "nsp_loss", "mlm_accuracy"):
        np.testing.assert_allclose(from_features[key], before[key], rtol=1e-5)
    logs = [pretrainer.train_on_batch(x, y, sample_weight=sw, return_dict=True) for _ in range(3)]
    assert all(np.isfinite(log["loss"]) for log in logs)
    pretrainer.train_on_batch(features)
    after = pretrainer.test_on_batch(x, y, sample_weight=sw, return_dict=True)
    assert after["loss"] < before["loss"]


def test_sample_weights_are_applied(pretrainer):
    """Weight 0 on every prediction but one: the MLM loss is that prediction's loss."""
    features = pretraining_features(n=4, seed=1)
    x, y, sw = split(features)
    only = np.zeros_like(sw["mlm"])
    only[0, 0] = 1.0
    logits = np.asarray(pretrainer.predict_on_batch(x)["mlm"], "float64")[0, 0]
    logp = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
    expected = -logp[features["masked_lm_ids"][0, 0]]
    result = pretrainer.test_on_batch(x, y, sample_weight={"mlm": only, "nsp": sw["nsp"]}, return_dict=True)
    np.testing.assert_allclose(result["mlm_loss"], expected, rtol=1e-4)
