import numpy as np

from keras_pretrain.models.elmo.elmo_layers import LSTMP
from keras_pretrain.models.elmo.elmo_layers import ElmoCharacterEncoder
from keras_pretrain.models.elmo.elmo_layers import ScalarMix
from keras_pretrain.models.elmo.elmo_layers import reverse_padded
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module
from tests.testing import to_numpy


def _torch_gates_to_ours(w):
    # torch rows: i, f, g, o; TF LSTMCell (ours) columns: i, j(=g), f, o.
    i, f, g, o = np.split(w, 4, axis=0)
    return np.concatenate([i, g, f, o], axis=0)


def _load_torch_direction(layer, lstm, suffix, forget_bias):
    p = {k: v.detach().numpy() for k, v in lstm.named_parameters()}
    bias = _torch_gates_to_ours(p[f"bias_ih_l0{suffix}"] + p[f"bias_hh_l0{suffix}"])
    units = bias.shape[0] // 4
    bias[2 * units : 3 * units] -= forget_bias
    layer.kernel.assign(_torch_gates_to_ours(p[f"weight_ih_l0{suffix}"]).T)
    layer.recurrent_kernel.assign(_torch_gates_to_ours(p[f"weight_hh_l0{suffix}"]).T)
    layer.bias.assign(bias)
    layer.projection.assign(p[f"weight_hr_l0{suffix}"].T)


def test_lstmp_equals_torch_lstm_with_projection():
    import torch

    batch, width, input_dim, units, proj = 3, 7, 5, 12, 4
    lstm = torch.nn.LSTM(input_dim, units, proj_size=proj, batch_first=True, bidirectional=True)
    randomize_torch_module(lstm, seed=1, scale=0.5)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch, width, input_dim)).astype("float32")
    lengths = np.array([7, 4, 1])
    mask = np.arange(width)[None, :] < lengths[:, None]
    x = x * mask[:, :, None]
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        torch.from_numpy(x), torch.from_numpy(lengths), batch_first=True, enforce_sorted=False
    )
    with torch.no_grad():
        out, _ = lstm(packed)
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=width)
    expected = out.numpy()  # (B, W, 2 * proj): [forward; backward], 0 at padding
    for direction, go_backwards, suffix in ((0, False, ""), (1, True, "_reverse")):
        layer = LSTMP(units, proj, go_backwards=go_backwards, forget_bias=1.0)
        layer(x, mask=mask)
        _load_torch_direction(layer, lstm, suffix, 1.0)
        got = to_numpy(layer(x, mask=mask))
        want = expected[:, :, direction * proj : (direction + 1) * proj]
        assert max_abs_diff(got, want) <= TOLERANCE, (go_backwards, max_abs_diff(got, want))
    # Clipping bounds the outputs (and changes them).
    clipped = LSTMP(units, proj, cell_clip=0.1, proj_clip=0.05)
    clipped(x, mask=mask)
    _load_torch_direction(clipped, lstm, "", 1.0)
    y = to_numpy(clipped(x, mask=mask))
    assert np.max(np.abs(y)) <= 0.05 + 1e-7
    assert max_abs_diff(y, expected[:, :, :proj]) > 1e-3


def test_lstmp_gradients_equal_torch_lstm_with_projection():
    """One SGD(1.0) step on a padded batch moves every weight by torch's gradient (each direction; on JAX the
    recurrence's own backward pass runs)."""
    import keras
    import torch

    batch, width, input_dim, units, proj = 3, 7, 5, 12, 4
    lstm = torch.nn.LSTM(input_dim, units, proj_size=proj, batch_first=True, bidirectional=True)
    randomize_torch_module(lstm, seed=2, scale=0.5)
    rng = np.random.default_rng(1)
    lengths = np.array([7, 4, 1])
    mask = np.arange(width)[None, :] < lengths[:, None]
    x = (rng.normal(size=(batch, width, input_dim)) * mask[:, :, None]).astype("float32")
    target = (rng.normal(size=(batch, width, proj)) * mask[:, :, None]).astype("float32")
    packed = torch.nn.utils.rnn.pack_padded_sequence(
        torch.from_numpy(x), torch.from_numpy(lengths), batch_first=True, enforce_sorted=False
    )
    out, _ = torch.nn.utils.rnn.pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=width)
    for direction, go_backwards, suffix in ((0, False, ""), (1, True, "_reverse")):
        lstm.zero_grad()
        mse = ((out[:, :, direction * proj : (direction + 1) * proj] - torch.from_numpy(target)) ** 2).mean()
        mse.backward(retain_graph=True)
        grads = {k: v.grad.numpy() for k, v in lstm.named_parameters() if k.endswith(f"l0{suffix}")}
        layer = LSTMP(units, proj, go_backwards=go_backwards, forget_bias=1.0)
        features, real = keras.Input((width, input_dim)), keras.Input((width,), dtype="bool")
        model = keras.Model([features, real], layer(features, mask=real))
        _load_torch_direction(layer, lstm, suffix, 1.0)
        model.compile(optimizer=keras.optimizers.SGD(1.0), loss="mse")
        before = [to_numpy(w) for w in layer._lstm_weights()]
        model.train_on_batch([x, mask], target)
        moved = [b - to_numpy(w) for b, w in zip(before, layer._lstm_weights())]
        expected = [
            _torch_gates_to_ours(grads[f"weight_ih_l0{suffix}"]).T,
            _torch_gates_to_ours(grads[f"weight_hh_l0{suffix}"]).T,
            _torch_gates_to_ours(grads[f"bias_ih_l0{suffix}"]),
            grads[f"weight_hr_l0{suffix}"].T,
        ]
        for name, got, want in zip(("kernel", "recurrent_kernel", "bias", "projection"), moved, expected):
            assert np.abs(want).max() > 1e-3, name
            assert max_abs_diff(got, want) <= 1e-5, (go_backwards, name, max_abs_diff(got, want))


def test_reverse_padded():
    x = np.arange(2 * 4).reshape(2, 4, 1).astype("float32")
    got = to_numpy(reverse_padded(x, np.array([4, 2])))[..., 0]
    np.testing.assert_array_equal(got, [[3, 2, 1, 0], [5, 4, 6, 7]])


def test_char_encoder_equals_numpy():
    filters = [[1, 3], [2, 4], [3, 2]]
    layer = ElmoCharacterEncoder(num_characters=20, embedding_dim=4, filters=filters, num_highway=2, projection_dim=5)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (2, 3, 6)).astype("int32")
    ids[1, 2] = 0  # a padding token
    layer(ids)
    for w in layer.weights:  # random biases too, so they can be wrong
        w.assign(rng.normal(size=w.shape).astype("float32") * 0.5)
    got = to_numpy(layer(ids))

    emb = to_numpy(layer.char_embedding.embeddings)[ids.reshape(-1, 6)]  # (N, C, d)
    pooled = []
    for (width, _), conv in zip(filters, layer.convolutions):
        k, b = to_numpy(conv.kernel), to_numpy(conv.bias)  # (w, d, n), (n,)
        steps = [sum(emb[:, t + j] @ k[j] for j in range(width)) + b for t in range(6 - width + 1)]
        pooled.append(np.maximum(np.max(np.stack(steps, 1), axis=1), 0.0))
    x = np.concatenate(pooled, -1)
    for carry, transform in layer.highways:
        g = 1 / (1 + np.exp(-(x @ to_numpy(carry.kernel) + to_numpy(carry.bias))))
        t = np.maximum(x @ to_numpy(transform.kernel) + to_numpy(transform.bias), 0)
        x = g * t + (1 - g) * x
    x = x @ to_numpy(layer.projection.kernel) + to_numpy(layer.projection.bias)
    assert max_abs_diff(got, x.reshape(2, 3, 5)) <= TOLERANCE


def test_scalar_mix():
    rng = np.random.default_rng(0)
    layers = [rng.normal(size=(2, 4, 6)).astype("float32") for _ in range(3)]
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], "int32")
    for j in range(3):
        weights = [-1e4] * 3
        weights[j] = 0.0
        mix = ScalarMix(3, initial_weights=weights, initial_gamma=0.7)
        got = to_numpy(mix(layers, mask=mask))
        np.testing.assert_allclose(got, 0.7 * layers[j] * mask[:, :, None], atol=1e-6)
    # Even mix with masked layer normalisation (bilm-tf's _do_ln: one mean and
    # variance over all real tokens and features).
    mix = ScalarMix(3, layer_norm=True, initial_gamma=1.3)
    got = to_numpy(mix(layers, mask=mask))
    m = mask[:, :, None].astype(bool)
    expected = 0.0
    for layer in layers:
        real = layer[np.broadcast_to(m, layer.shape)]
        expected = expected + (layer - real.mean()) / np.sqrt(real.var() + 1e-12) / 3
    np.testing.assert_allclose(got, 1.3 * expected * m, atol=1e-5)
    restored = ScalarMix.from_config(mix.get_config())
    assert restored.layer_norm and restored.num_layers == 3
