"""Pretrainers run the backbone's last block only at the masked positions: same outputs, same training.

`BertPretrainer.call` (inherited by the ALBERT, RoBERTa, DistilBERT and ERNIE pretrainers) computes the
last block at `masked_lm_positions` (+ position 0 for the sentence head) through
`Backbone.sequence_output_at`; `last_block_at_predictions = False` runs the whole functional graph, which
the transformers parity tests check independently. Each test checks the short path really ran.
"""

import keras
import numpy as np
import pytest

from keras_pretrain.models.albert import AlbertBackbone
from keras_pretrain.models.albert import AlbertPretrainer
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertPretrainer
from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertPretrainer
from keras_pretrain.models.ernie import ErnieBackbone
from keras_pretrain.models.ernie import ErniePretrainer
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaPretrainer
from tests.testing import assert_all_close

DIMS = dict(vocabulary_size=40, num_layers=3, num_heads=2, hidden_dim=16, intermediate_dim=32, dropout=0.0)
B, T = 3, 10

FAMILIES = {
    "bert": lambda: BertPretrainer(BertBackbone(**DIMS)),
    "bert_mlm_only": lambda: BertPretrainer(BertBackbone(**DIMS), sentence_head=False),
    "albert": lambda: AlbertPretrainer(AlbertBackbone(embedding_dim=8, num_groups=2, **DIMS)),
    "roberta": lambda: RobertaPretrainer(RobertaBackbone(**DIMS)),
    "distil_bert": lambda: DistilBertPretrainer(DistilBertBackbone(**DIMS)),
    "ernie_task_ids": lambda: ErniePretrainer(ErnieBackbone(use_task_id=True, **DIMS)),
}


def batch(model, seed=0):
    rng = np.random.default_rng(seed)
    padding = np.ones((B, T), "int32")
    padding[1, 7:] = 0
    x = {
        "token_ids": rng.integers(5, 40, (B, T)).astype("int32") * padding + (1 - padding),
        "segment_ids": (np.arange(T) >= 5).astype("int32")[None].repeat(B, 0),
        "padding_mask": padding,
        "task_type_ids": np.ones((B, T), "int32"),
        # Sorted, repeated and padding (0) positions, as the data pipelines write them.
        "masked_lm_positions": np.array([[1, 4, 6, 0], [2, 3, 3, 6], [5, 8, 9, 0]], "int32"),
    }
    x = {k: v for k, v in x.items() if k in model.input}
    y = {"mlm": rng.integers(5, 40, (B, 4)).astype("int32")}
    if model.sentence_head is not None:
        y[model.sentence_output] = np.array([0, 1, 1], "int32")
    return x, y


def count_short_path(model):
    """Counts calls of the last block with `query_positions`."""
    last = model.backbone._encoder_blocks()[-1]
    calls = {"short": 0, "full": 0}
    call = last.call

    def spy(*args, **kwargs):
        calls["short" if kwargs.get("query_positions") is not None else "full"] += 1
        return call(*args, **kwargs)

    last.call = spy
    return calls


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_outputs_as_the_full_graph(family):
    model = FAMILIES[family]()
    assert model.backbone.supports_sequence_output_at
    x, _ = batch(model)
    calls = count_short_path(model)
    short = model.predict_on_batch(x)
    assert calls["short"] >= 1
    model.last_block_at_predictions = False
    full = model.predict_on_batch(x)
    assert set(short) == set(full) and short["mlm"].shape == (B, 4, 40)
    for name in full:
        assert_all_close(short[name], full[name], atol=1e-5, what=f"{family} {name}")
    assert np.abs(full["mlm"][1, 1] - full["mlm"][1, 0]).max() > 1e-4  # positions differ


@pytest.mark.parametrize("family", ["bert", "albert", "roberta"])
def test_same_training_step_as_the_full_graph(family):
    """One SGD step from the same weights lands on the same weights either way."""
    x, y = batch(FAMILIES[family]())
    trained, initial = [], None
    for short_path in (True, False):
        keras.utils.set_random_seed(1)
        model = FAMILIES[family]()
        model.last_block_at_predictions = short_path
        if initial is None:
            initial = [keras.ops.convert_to_numpy(w) for w in model.weights]
        for w, value in zip(model.weights, initial):
            w.assign(value)
        calls = count_short_path(model)
        model.compile(optimizer=keras.optimizers.SGD(0.5))  # the default losses and metrics
        model.train_on_batch(x, y)
        assert (calls["short"] >= 1) == short_path
        trained.append([keras.ops.convert_to_numpy(w) for w in model.weights])
    moved = max(np.abs(a - b).max() for a, b in zip(trained[0], initial))
    assert moved > 1e-3
    for w, short_w, full_w in zip(model.weights, *trained):
        assert_all_close(short_w, full_w, atol=1e-5, what=f"{family} {w.path} after one step")


def test_graph_and_saving_are_unchanged(tmp_path):
    """The functional graph (summary, `.keras` files) still holds the whole backbone."""
    model = FAMILIES["bert"]()
    x, _ = batch(model)
    expected = model.predict_on_batch(x)
    assert model.get_layer(model.backbone.name) is model.backbone
    path = str(tmp_path / "pretrainer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert restored.last_block_at_predictions
    for name in expected:
        assert_all_close(restored.predict_on_batch(x)[name], expected[name], atol=1e-6, what=name)
