"""Shared test helpers: every family's tests call these."""

import os

import keras
import numpy as np
from keras import ops

TOLERANCE = 1e-4  # max abs difference for parity with an independent port


def to_numpy(x):
    def convert(t):
        if hasattr(t, "detach"):  # a torch tensor (torch backend or reference)
            t = t.detach().cpu()
        return np.asarray(ops.convert_to_numpy(t))

    return keras.tree.map_structure(convert, x)


def assert_all_close(actual, expected, atol=TOLERANCE, what="outputs"):
    actual, expected = to_numpy(actual), to_numpy(expected)
    flat_a = keras.tree.flatten(actual)
    flat_e = keras.tree.flatten(expected)
    assert len(flat_a) == len(flat_e), f"{what}: structures differ"
    worst = 0.0
    for a, e in zip(flat_a, flat_e):
        assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
        worst = max(worst, float(np.max(np.abs(a - e))) if a.size else 0.0)
    assert worst <= atol, f"{what}: max abs diff {worst:.3g} > {atol}"
    return worst


def max_abs_diff(a, b):
    a, b = to_numpy(a), to_numpy(b)
    return float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))


def random_encoder_inputs(batch, length, vocabulary_size, pad_from=None, seed=0, num_segments=2):
    """token_ids / segment_ids / padding_mask with padding at the end of row 0."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(1, vocabulary_size, (batch, length)).astype("int32")
    segment_ids = np.zeros((batch, length), "int32")
    if num_segments > 1:
        segment_ids[:, length // 2 :] = 1
    padding_mask = np.ones((batch, length), "int32")
    if pad_from is not None:
        padding_mask[0, pad_from:] = 0
        token_ids[0, pad_from:] = 0
        segment_ids[0, pad_from:] = 0
    return {
        "token_ids": token_ids,
        "segment_ids": segment_ids,
        "padding_mask": padding_mask,
    }


def first_output(outputs):
    if isinstance(outputs, dict):
        return outputs.get("sequence_output", next(iter(outputs.values())))
    return outputs


def run_backbone_test(cls, init_kwargs, input_data, tmp_path, expected_output_shape=None, variable_length_data=None):
    """Eager call, compiled predict, variable length, .keras round trip, fit."""
    backbone = cls(**init_kwargs)
    # Eager call.
    eager = backbone(input_data)
    if expected_output_shape is not None:
        for key, shape in expected_output_shape.items():
            assert tuple(ops.shape(eager[key])) == tuple(shape), key
    # Compiled predict equals the eager call.
    compiled = backbone.predict(input_data, verbose=0)
    assert_all_close(compiled, eager, atol=1e-5, what="predict vs eager")
    # Variable sequence length.
    if variable_length_data is None:
        variable_length_data = keras.tree.map_structure(
            lambda x: x[:, : max(2, x.shape[1] - 3)], input_data
        )
    short = backbone(variable_length_data)
    length = keras.tree.flatten(variable_length_data)[0].shape[1]
    assert ops.shape(first_output(short))[1] == length
    # Config round trip.
    clone = cls.from_config(backbone.get_config())
    assert clone.count_params() == backbone.count_params()
    # .keras round trip with equal outputs.
    path = os.path.join(tmp_path, "backbone.keras")
    backbone.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is cls
    assert_all_close(restored(input_data), eager, atol=1e-5, what="reloaded")
    # One fit step of a small head leaves every weight finite.
    out = first_output(backbone.output)
    model = keras.Model(backbone.input, keras.layers.Dense(1)(out))
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    target = np.zeros(tuple(ops.shape(first_output(eager)))[:-1] + (1,), "float32")
    history = model.fit(input_data, target, epochs=1, batch_size=len(target), verbose=0)
    assert np.isfinite(history.history["loss"][0])
    for w in backbone.weights:
        assert np.all(np.isfinite(ops.convert_to_numpy(w))), w.path
    return backbone


def run_encoder_backbone_test(cls, init_kwargs, input_data, tmp_path, expected_output_shape):
    """`run_backbone_test`, then: one `encoder_outputs` entry per layer (`init_kwargs["num_layers"]`), the last
    equal to `sequence_output`. Returns the backbone."""
    backbone = run_backbone_test(cls, init_kwargs, input_data, tmp_path, expected_output_shape=expected_output_shape)
    outputs = to_numpy(backbone(input_data))
    assert len(outputs["encoder_outputs"]) == init_kwargs["num_layers"]
    np.testing.assert_allclose(outputs["encoder_outputs"][-1], outputs["sequence_output"])
    return backbone


def run_task_test(task, train_data, tmp_path, predict_data=None, steps=1):
    """fit() on `train_data` (dataset or feature dict), .keras round trip."""
    history = task.fit(train_data, epochs=steps, verbose=0)
    for key, values in history.history.items():
        assert np.all(np.isfinite(values)), key
    predict_data = predict_data if predict_data is not None else train_data
    outputs = task.predict(predict_data, verbose=0)
    path = os.path.join(tmp_path, "task.keras")
    task.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is type(task)
    assert_all_close(restored.predict(predict_data, verbose=0), outputs, atol=1e-5, what="reloaded task")
    return history


def write_tf1_checkpoint(arrays, prefix):
    """Writes a TF1 name-based checkpoint holding `arrays` (name -> ndarray)."""
    import tensorflow as tf

    os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with tf.Graph().as_default():
        variables = [
            tf.compat.v1.get_variable(name, initializer=np.asarray(value))
            for name, value in arrays.items()
        ]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    return prefix


def randomize_torch_module(module, seed=0, scale=0.2):
    """Random weights everywhere (LayerNorm too) so parity tests can fail."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, param in module.named_parameters():
            param.copy_(torch.randn(param.shape, generator=generator) * scale)
    module.eval()
    return module


def torch_inputs(data, segments=False):
    """transformers' inputs (torch int64) of our input dict: input_ids and attention_mask, and token_type_ids (our
    segment_ids) with `segments`."""
    import torch

    x = {"input_ids": torch.tensor(data["token_ids"], dtype=torch.long)}
    if segments:
        x["token_type_ids"] = torch.tensor(data["segment_ids"], dtype=torch.long)
    x["attention_mask"] = torch.tensor(data["padding_mask"], dtype=torch.long)
    return x


def torch_outputs(model, data, segments=False, **kwargs):
    """The transformers `model`'s outputs on our input dict `data` (`torch_inputs`), without gradients."""
    import torch

    with torch.no_grad():
        return model(**torch_inputs(data, segments), **kwargs)


def saved_random_torch_model(model, folder, vocabulary=None):
    """The transformers `model` with random weights (`randomize_torch_module`), saved to `folder`
    (`save_pretrained`), with the tokens `vocabulary` as its vocab.txt when given."""
    randomize_torch_module(model)
    model.save_pretrained(folder)
    if vocabulary is not None:
        with open(os.path.join(folder, "vocab.txt"), "w") as f:
            f.write("\n".join(vocabulary) + "\n")
    return model


def masked_lm_diffs(pretrainer, reference, data, positions):
    """Max abs differences of our masked-LM `pretrainer` from a transformers masked LM's outputs `reference` (run
    with `output_hidden_states`) on `data`: (the last hidden states at the real tokens, the logits at
    `positions`)."""
    real = data["padding_mask"].astype(bool)
    hidden = to_numpy(pretrainer.backbone(data)["sequence_output"])[real]
    logits = pretrainer({**data, "masked_lm_positions": positions})["mlm"]
    return (max_abs_diff(hidden, reference.hidden_states[-1].numpy()[real]),
            max_abs_diff(logits, np.take_along_axis(reference.logits.numpy(), positions[..., None], axis=1)))
