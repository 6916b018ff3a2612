"""On TensorFlow, a task's train and test steps are traced once: its optimizer, compiled loss trackers and
metrics are built before the first trace (`TaskMixin._maybe_symbolic_build`), not inside it (which makes
`tf.function` trace the step again)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaClassifier
from tests.models.bert.test_bert_tasks import TINY
from tests.models.bert.test_bert_tasks import pretraining_features
from tests.models.roberta.test_roberta import TINY as ROBERTA_TINY
from tests.models.roberta.test_roberta import encoder_inputs

pytestmark = pytest.mark.tf_only  # the double trace is Keras' TensorFlow trainer's


def _count_traces(model, name):
    """Counts the calls of `model.<name>` (once per trace of the compiled step) and the variables created
    inside a traced function."""
    counts = {"traces": 0, "created_in_trace": []}
    step = getattr(model, name)

    def counted(data):
        counts["traces"] += 1
        return step(data)

    setattr(model, name, counted)
    return counts


def _creator(counts):
    def creator(next_creator, **kwargs):
        if tf.inside_function():
            counts["created_in_trace"].append(kwargs.get("name"))
        return next_creator(**kwargs)

    return creator


def test_pretrainer_fit_traces_its_step_once():
    """MLM + NSP: two outputs, so Keras adds a loss tracker per output, and the default metrics."""
    keras.utils.set_random_seed(0)
    model = BertPretrainer(BertBackbone(**TINY))
    counts = _count_traces(model, "train_step")
    data = tf.data.Dataset.from_tensor_slices(pretraining_features(n=16)).batch(8)
    with tf.variable_creator_scope(_creator(counts)):
        history = model.fit(data, epochs=2, verbose=0).history
    assert counts == {"traces": 1, "created_in_trace": []}
    assert model.optimizer.built and np.isfinite(history["loss"]).all()
    assert {"mlm_loss", "nsp_loss"} <= set(history)
    # Built: later calls neither pull a batch nor build again.
    pulled = []
    model._symbolic_build = lambda **kwargs: pulled.append(kwargs)
    model.fit(data, verbose=0)
    model.evaluate(data, verbose=0)
    assert pulled == [] and counts["traces"] == 1


def test_classifier_train_and_test_on_batch_trace_once():
    keras.utils.set_random_seed(0)
    model = RobertaClassifier(RobertaBackbone(**ROBERTA_TINY), num_classes=3)
    x, y = encoder_inputs(4, 10), np.arange(4) % 3
    train, test = _count_traces(model, "train_step"), _count_traces(model, "test_step")
    with tf.variable_creator_scope(_creator(train)):
        losses = [model.train_on_batch(x, y) for _ in range(2)]
    with tf.variable_creator_scope(_creator(test)):
        model.test_on_batch(x, y)
    assert train == {"traces": 1, "created_in_trace": []}
    assert test == {"traces": 1, "created_in_trace": []}
    assert np.isfinite(losses).all()


def _orders_seen_by_fit(model, x):
    """The orders in which `model.fit` (2 epochs) gets a seeded shuffle of `x`, read inside the pipeline."""
    seen = []

    def log(ids):
        seen.append(ids.numpy()[:, 1].tolist())
        return ids

    data = tf.data.Dataset.from_tensor_slices((x, np.arange(8) % 3)).shuffle(8, seed=0).batch(8)
    data = data.map(lambda a, b: ({**a, "token_ids": tf.ensure_shape(
        tf.py_function(log, [a["token_ids"]], tf.int32), [None, 10])}, b))
    model.fit(data, epochs=2, verbose=0)
    return seen


def test_fit_pulls_no_batch_for_the_build():
    """The build reads the dataset's element_spec: a seeded shuffle reaches the task in the orders it reaches a
    plain Keras model in (a batch pulled for the build and the iterator reset, as Keras' strategy path does,
    would run the pipeline once more and shift every epoch by one permutation)."""
    x = encoder_inputs(8, 10)
    x["token_ids"][:, 1] = np.arange(8) + 10
    inputs = {name: keras.Input((10,), dtype="int32", name=name) for name in x}
    pooled = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(60, 4)(inputs["token_ids"]))
    plain = keras.Model(inputs, keras.layers.Dense(3)(pooled))
    plain.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model = RobertaClassifier(RobertaBackbone(**ROBERTA_TINY), num_classes=3)
    counts = _count_traces(model, "train_step")
    keras.utils.set_random_seed(0)
    expected = _orders_seen_by_fit(plain, x)
    keras.utils.set_random_seed(0)
    seen = _orders_seen_by_fit(model, x)
    assert len(expected) == 2 and expected[0] != expected[1]
    assert seen == expected
    assert counts["traces"] == 1


def test_an_empty_dataset_still_gets_keras_warning():
    """With no batch, fit ends as Keras' does without the build: a warning that the input ran out of data, and
    an empty history."""
    model = RobertaClassifier(RobertaBackbone(**ROBERTA_TINY), num_classes=3)
    x = encoder_inputs(4, 10)
    empty = tf.data.Dataset.from_tensor_slices((x, np.arange(4) % 3)).batch(2).take(0)
    with pytest.warns(UserWarning, match="ran out of data"):
        history = model.fit(empty, verbose=0).history
    assert history == {}
