import keras
import numpy as np
import tensorflow as tf

from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertClassifier
from keras_pretrain.models.bert import BertPretrainer
from tests.testing import random_encoder_inputs
from tests.testing import run_task_test

TINY = dict(vocabulary_size=60, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=16)


def pretraining_features(n=8, length=12, predictions=4, seed=0):
    rng = np.random.default_rng(seed)
    data = random_encoder_inputs(n, length, 60, seed=seed)
    return {
        "input_ids": data["token_ids"],
        "input_mask": data["padding_mask"],
        "segment_ids": data["segment_ids"],
        "masked_lm_positions": rng.integers(1, length, (n, predictions)).astype("int32"),
        "masked_lm_ids": rng.integers(5, 60, (n, predictions)).astype("int32"),
        "masked_lm_weights": np.tile(np.array([1, 1, 1, 0], "float32"), (n, 1)),
        "next_sentence_labels": rng.integers(0, 2, (n, 1)).astype("int32"),
    }


def test_pretrainer_fits_original_features(tmp_path):
    features = pretraining_features()
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(4)
    pretrainer = BertPretrainer(BertBackbone(**TINY))
    history = run_task_test(pretrainer, dataset, tmp_path)
    for key in ("mlm_loss", "nsp_loss", "mlm_accuracy", "nsp_accuracy"):
        assert key in history.history


def test_mlm_loss_ignores_padding_predictions():
    """The loss is the mean over real predictions (weights 1), as the original."""
    features = pretraining_features(n=4)
    pretrainer = BertPretrainer(BertBackbone(**TINY, dropout=0.0))
    metrics = pretrainer.evaluate(tf.data.Dataset.from_tensor_slices(features).batch(4), return_dict=True, verbose=0)
    x = {"token_ids": features["input_ids"], "segment_ids": features["segment_ids"],
         "padding_mask": features["input_mask"], "masked_lm_positions": features["masked_lm_positions"]}
    logits = np.asarray(pretrainer.predict(x, verbose=0)["mlm"], "float64")
    logp = logits - np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1, keepdims=True)) - logits.max(-1, keepdims=True)
    nll = -np.take_along_axis(logp, features["masked_lm_ids"][..., None], -1)[..., 0]
    w = features["masked_lm_weights"]
    expected = (nll * w).sum() / w.sum()
    np.testing.assert_allclose(metrics["mlm_loss"], expected, rtol=1e-4)


def test_pretraining_lowers_loss():
    features = pretraining_features(n=16)
    dataset = tf.data.Dataset.from_tensor_slices(features).batch(8).cache()
    pretrainer = BertPretrainer(BertBackbone(**TINY))
    pretrainer.compile(optimizer=keras.optimizers.Adam(3e-3))
    before = pretrainer.evaluate(dataset, verbose=0, return_dict=True)["mlm_loss"]
    pretrainer.fit(dataset, epochs=20, verbose=0)
    after = pretrainer.evaluate(dataset, verbose=0, return_dict=True)["mlm_loss"]
    assert after < before - 0.5


def test_classifier_single_and_pair(tmp_path):
    data = random_encoder_inputs(8, 10, 60)
    labels = np.arange(8) % 3
    classifier = BertClassifier(BertBackbone(**TINY), num_classes=3)
    run_task_test(classifier, tf.data.Dataset.from_tensor_slices((data, labels)).batch(4), tmp_path,
                  predict_data=data)
    assert classifier.predict(data, verbose=0).shape == (8, 3)
    # Feature dicts with a `label` entry work too.
    features = {"input_ids": data["token_ids"], "segment_ids": data["segment_ids"],
                "input_mask": data["padding_mask"], "label": labels}
    classifier.fit(tf.data.Dataset.from_tensor_slices(features).batch(4), verbose=0)
