"""XLNetBackbone behaviour: compiled / saved equality, two-stream and causal properties, memories."""

import os

import keras
import numpy as np
import pytest
from keras import ops

from keras_pretrain.data.permutation import PermutationLanguageModeling
from keras_pretrain.models.xlnet import XLNetBackbone
from keras_pretrain.models.xlnet import xlnet_parameter_count
from tests.testing import assert_all_close
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs
from tests.testing import to_numpy

VOCAB = 40
KWARGS = dict(vocabulary_size=VOCAB, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=24, dropout=0.0,
              mem_len=6)


@pytest.fixture(scope="module")
def backbone():
    keras.utils.set_random_seed(1)
    return XLNetBackbone(**KWARGS)


def plm_inputs(batch=2, length=8, seed=0):
    data = random_encoder_inputs(batch, length, VOCAB, pad_from=length - 2, seed=seed)
    sampler = PermutationLanguageModeling(length, num_predict=3, plm_probability=0.4, max_span_length=2)
    features = sampler(data["token_ids"], data["padding_mask"], rng=np.random.default_rng(seed), details=True)
    data.update(perm_mask=features["perm_mask"], target_mapping=features["target_mapping"])
    return data, features


def test_eager_compiled_saved_and_variable_length(backbone, tmp_path):
    data, _ = plm_inputs()
    first = backbone({k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    data["mems"] = [to_numpy(m) for m in first["mems"]]
    eager = backbone(data)
    assert tuple(eager["sequence_output"].shape) == (2, 8, 16)
    assert tuple(eager["query_output"].shape) == (2, 3, 16)
    assert [tuple(m.shape) for m in eager["mems"]] == [(2, 6, 16)] * 2
    compiled = backbone.predict(data, verbose=0)
    assert_all_close(compiled, eager, atol=1e-5, what="predict vs eager")
    # Variable length (no targets).
    short = backbone({k: data[k][:, :5] for k in ("token_ids", "segment_ids", "padding_mask")})
    assert tuple(short["sequence_output"].shape) == (2, 5, 16)
    # Config and .keras round trips.
    clone = XLNetBackbone.from_config(backbone.get_config())
    assert clone.count_params() == backbone.count_params() == xlnet_parameter_count(VOCAB, 2, 16, 24)
    path = os.path.join(tmp_path, "xlnet.keras")
    backbone.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is XLNetBackbone
    assert_all_close(restored(data), eager, atol=1e-5, what="reloaded")


def test_query_stream_does_not_see_its_own_or_later_tokens(backbone):
    data, features = plm_inputs(seed=4)
    base = to_numpy(backbone(data)["query_output"])
    order = features["factorization_order"]
    changed_any = False
    for b in range(2):
        positions = np.flatnonzero(features["target_mapping"][b].sum(0))
        for k, i in enumerate(np.argmax(features["target_mapping"][b], axis=1)[: len(positions)]):
            # Changing the token at i, and at every target after i in the order,
            # leaves the k-th prediction unchanged.
            later = [j for j in positions if order[b, j] >= order[b, i]]
            edited = {**data, "token_ids": data["token_ids"].copy()}
            edited["token_ids"][b, later] = (edited["token_ids"][b, later] + 7) % VOCAB
            out = to_numpy(backbone(edited)["query_output"])
            assert np.max(np.abs(out[b, k] - base[b, k])) < 1e-5
            # Changing a visible (non-target, real) token does change it.
            visible = [j for j in range(8) if features["perm_mask"][b, i, j] == 0 and data["padding_mask"][b, j]]
            edited["token_ids"][b, visible[0]] = (edited["token_ids"][b, visible[0]] + 3) % VOCAB
            out = to_numpy(backbone(edited)["query_output"])
            changed_any |= np.max(np.abs(out[b, k] - base[b, k])) > 1e-4
    assert changed_any


def test_identity_permutation_is_a_causal_relative_lm(backbone):
    data = random_encoder_inputs(2, 8, VOCAB, seed=5)
    causal = np.broadcast_to(np.triu(np.ones((8, 8), "float32"), 1), (2, 8, 8)).copy()
    out = to_numpy(backbone({**data, "perm_mask": causal})["sequence_output"])
    edited = {**data, "perm_mask": causal, "token_ids": data["token_ids"].copy()}
    edited["token_ids"][:, 5] = (edited["token_ids"][:, 5] + 1) % VOCAB
    changed = to_numpy(backbone(edited)["sequence_output"])
    assert np.max(np.abs(changed[:, :5] - out[:, :5])) < 1e-5  # earlier positions: unchanged
    assert np.max(np.abs(changed[:, 5:] - out[:, 5:])) > 1e-3  # later positions: changed
    # The same weights with attn_type="uni" (Transformer-XL) compute the same thing.
    uni = XLNetBackbone(**{**KWARGS, "attn_type": "uni"})
    uni.set_weights(backbone.get_weights())
    assert max_abs_diff(uni(data)["sequence_output"], out) < 1e-5


def _gradient(fn, x):
    backend = keras.config.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        g = tape.gradient(y, x)
        return np.zeros(x.shape) if g is None else g.numpy()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(fn)(x))
    import torch

    x = torch.tensor(x, requires_grad=True)
    y = fn(x)
    if not y.requires_grad:
        return np.zeros(x.shape)
    y.backward()
    return x.grad.numpy() if x.grad is not None else np.zeros(x.shape)


def test_no_gradient_flows_into_memories(backbone):
    data = random_encoder_inputs(2, 6, VOCAB, seed=6)
    mems = np.random.default_rng(0).normal(size=(2, 2, 4, 16)).astype("float32")  # (B, layers, M, H)

    def loss(m):
        out = backbone({**data, "mems": [m[:, 0], m[:, 1]]})
        return ops.sum(out["sequence_output"]) + sum(ops.sum(x) for x in out["mems"])

    assert float(ops.convert_to_numpy(loss(mems))) != 0.0
    assert np.all(_gradient(loss, mems) == 0)
    # ... while the memories do change the outputs.
    with_mems = backbone({**data, "mems": [mems[:, 0], mems[:, 1]]})["sequence_output"]
    assert max_abs_diff(with_mems, backbone(data)["sequence_output"]) > 1e-3


def test_memory_mask_hides_slots(backbone):
    data = random_encoder_inputs(2, 6, VOCAB, seed=7)
    mems = [np.random.default_rng(i).normal(size=(2, 4, 16)).astype("float32") for i in range(2)]
    hidden = backbone({**data, "mems": mems, "memory_mask": np.zeros((2, 4), "int32")})["sequence_output"]
    # Fully hidden memory = no memory (relative positions only count distances to visible keys).
    assert max_abs_diff(hidden, backbone(data)["sequence_output"]) < 1e-5


def test_tied_relative_biases():
    shared = XLNetBackbone(**{**KWARGS, "untie_r": False})
    assert shared.count_params() == xlnet_parameter_count(VOCAB, 2, 16, 24) - 3 * 16
    out = shared(random_encoder_inputs(2, 5, VOCAB))
    assert np.all(np.isfinite(to_numpy(out["sequence_output"])))


def test_query_stream_alone_equals_the_full_call(backbone):
    """`sequence_output=False` (what the pretrainer calls) skips the last layer's content stream only."""
    data, _ = plm_inputs(seed=3)
    first = backbone({k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")})
    data["mems"] = [to_numpy(m) for m in first["mems"]]
    full = backbone(data)
    alone = backbone(data, sequence_output=False)
    assert "sequence_output" not in alone
    assert max_abs_diff(alone["query_output"], full["query_output"]) == 0.0
    assert_all_close(alone["mems"], full["mems"], atol=0.0, what="memories")
    assert float(np.abs(to_numpy(full["query_output"])).max()) > 0.1
    layer = backbone.attention_layers[-1]
    with pytest.raises(ValueError, match="needs the query stream"):
        layer(ops.ones((2, 8, 16)), content_output=False, position_encoding=ops.ones((2, 16, 16)),
              segment_matrix=ops.ones((2, 8, 8, 2)))
    with pytest.raises(ValueError, match="needs a `target_mapping`"):
        backbone({k: data[k] for k in ("token_ids", "segment_ids", "padding_mask")}, sequence_output=False)


def test_query_stream_alone_trains_like_the_full_call():
    """One SGD step on a query-stream loss gives the same weights whether the last layer's content stream runs."""
    data, _ = plm_inputs(seed=4)
    target = np.random.default_rng(5).normal(size=(2, 3, 16)).astype("float32")
    trained = []
    for sequence_output in (True, False):
        keras.utils.set_random_seed(2)
        model = QueryStreamModel(XLNetBackbone(**KWARGS), sequence_output)
        initial = [to_numpy(w) for w in model.weights]
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
        model.train_on_batch(data, target)
        trained.append(model.weights)
    for full, alone in zip(*trained):
        assert_all_close(alone, full, atol=1e-5, what=full.path)
    moved = [np.abs(to_numpy(w) - w0).max() for w, w0 in zip(trained[0], initial) if "attention_layer_1" in w.path]
    assert min(moved) > 0


class QueryStreamModel(keras.Model):
    """The backbone's query stream as a model's only output."""

    def __init__(self, backbone, sequence_output, **kwargs):
        super().__init__(**kwargs)
        self.backbone = backbone
        self.sequence_output = sequence_output

    def call(self, inputs, training=None):
        return self.backbone(inputs, training=training, sequence_output=self.sequence_output)["query_output"]
