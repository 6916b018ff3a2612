"""keras_pretrain.training.checkpoints and .random_state: epoch checkpoints (weights, optimizer, random states)
written atomically, at most two kept, and a resume that trusts nothing it reads."""

import json
import os

import h5py
import numpy as np
import pytest

from keras_pretrain import training


def fitted_model(epochs=1):
    """A model with dropout (seeded: its masks come from its seed generator on every backend), trained `epochs`
    epochs of 2 steps."""
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dropout(0.5, seed=1), keras.layers.Dense(2)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(np.ones((4, 3)), np.ones((4, 2)), batch_size=2, epochs=epochs, verbose=0)
    return model


def arrays(variables):
    import keras

    return [keras.ops.convert_to_numpy(v).copy() for v in variables]


def set_state(run, **changes):
    path = os.path.join(run, training.CHECKPOINT_DIR, training.STATE_FILE)
    with open(path) as f:
        state = json.load(f)
    with open(path, "w") as f:
        json.dump({**state, **changes}, f)


def checkpoint_files_on_disk(folder, epoch):
    """The two files of checkpoint `epoch` (tiny, whole), as `write_checkpoint` names them."""
    os.makedirs(folder, exist_ok=True)
    weights, rng = training.checkpoint_files(epoch)
    with h5py.File(os.path.join(folder, weights), "w") as f:
        f.create_dataset("w", data=np.arange(4.0))
    with open(os.path.join(folder, rng), "wb") as f:
        np.savez(f, state_0=np.arange(2))


def test_a_checkpoint_restores_weights_optimizer_and_random_states(tmp_path):
    import keras

    model = fitted_model()
    keras.random.uniform((2,))  # Keras' global seed generator exists and has drawn
    out = str(tmp_path)
    training.write_checkpoint(model, out, 1)
    weights, optimizer = arrays(model.weights), arrays(model.optimizer.variables)
    saved = training.rng_state(model)
    assert "state_0" in saved and "global_seed_generator" in saved
    if keras.config.backend() == "torch":
        assert "torch_cpu" in saved
    with np.load(os.path.join(out, training.CHECKPOINT_DIR, "rng-00001.npz")) as written:
        assert sorted(written.files) == sorted(saved)
        for key in saved:
            np.testing.assert_array_equal(written[key], saved[key], err_msg=key)

    # Training on and drawing moves every state away from the checkpoint's.
    model.fit(np.ones((4, 3)), np.zeros((4, 2)), batch_size=2, epochs=1, verbose=0)
    keras.random.uniform((2,))
    if keras.config.backend() == "torch":
        import torch

        torch.rand(3)
    moved = training.rng_state(model)
    for key in saved:
        assert not np.array_equal(moved[key], saved[key]), key

    callback = training.restore_checkpoint(model, out, steps_per_epoch=2, epochs=3)
    for a, b in zip(arrays(model.weights), weights):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(arrays(model.optimizer.variables), optimizer):
        np.testing.assert_array_equal(a, b)
    assert int(keras.ops.convert_to_numpy(model.optimizer.iterations)) == 2
    for key, value in training.rng_state(model).items():
        np.testing.assert_array_equal(value, saved[key], err_msg=key)
    # Keras' first symbolic call draws again (torch): the callback sets the states once more, at the first step.
    keras.random.uniform((2,))
    callback.set_model(model)
    callback.on_train_batch_begin(0)
    np.testing.assert_array_equal(training.rng_state(model)["global_seed_generator"], saved["global_seed_generator"])
    keras.random.uniform((2,))
    callback.on_train_batch_begin(1)  # once only
    assert not np.array_equal(training.rng_state(model)["global_seed_generator"], saved["global_seed_generator"])


def test_at_most_two_checkpoints_are_kept(tmp_path):
    model = fitted_model()
    out = str(tmp_path)
    for epoch in (1, 2, 3):
        training.write_checkpoint(model, out, epoch)
    assert sorted(os.listdir(os.path.join(out, training.CHECKPOINT_DIR))) == [
        "model-00002.weights.h5", "model-00003.weights.h5", "rng-00002.npz", "rng-00003.npz", "state.json"]
    assert training.checkpoint_epoch(out) == 3
    assert training.complete_checkpoints(out) == [2, 3]
    assert training.read_state(out) == {"epoch": 3, "weights": "model-00003.weights.h5", "rng": "rng-00003.npz"}


@pytest.mark.tf_only
def test_full_disk_during_a_checkpoint_is_an_error_and_keeps_the_previous_one(tmp_path):
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    out = str(tmp_path)
    training.write_checkpoint(model, out, 1)
    os.symlink("/dev/full", os.path.join(out, training.CHECKPOINT_DIR, "model-00002.weights.h5"))
    with pytest.raises(training.RunError, match=r"cannot write the checkpoint of epoch 2 in .*No space left on device"
                                                r".*the previous checkpoint \(epoch 1\) is intact"):
        training.write_checkpoint(model, out, 2)
    assert training.checkpoint_epoch(out) == 1
    assert sorted(os.listdir(os.path.join(out, training.CHECKPOINT_DIR))) == [
        "model-00001.weights.h5", "rng-00001.npz", "state.json"]


def test_a_checkpoint_that_claims_more_epochs_than_it_trained(tmp_path):
    """state.json claiming epoch 2 over the files of a 1-epoch checkpoint renamed: the optimizer's step
    count tells, and the run never finishes without training the epochs it claims."""
    model = fitted_model()  # 2 steps: epoch 1
    out = str(tmp_path)
    training.write_checkpoint(model, out, 1)
    folder = tmp_path / training.CHECKPOINT_DIR
    for old, new in zip(training.checkpoint_files(1), training.checkpoint_files(2)):
        os.rename(folder / old, folder / new)
    set_state(out, epoch=2, weights=training.checkpoint_files(2)[0], rng=training.checkpoint_files(2)[1])
    with pytest.raises(training.RunError, match=r"model-00002.weights.h5: holds the optimizer state of 2 training "
                                                r"steps, not the 4 of the 2 epoch\(s\) .*state.json claims"):
        training.restore_checkpoint(model, out, steps_per_epoch=2, epochs=3)
    set_state(out, epoch=1, weights="model-00002.weights.h5")  # and the honest claim loads
    with pytest.raises(training.RunError, match="is not the checkpoint of epoch 1"):
        training.restore_checkpoint(model, out, steps_per_epoch=2, epochs=3)
    for old, new in zip(training.checkpoint_files(2), training.checkpoint_files(1)):
        os.rename(folder / old, folder / new)
    set_state(out, epoch=1, weights="model-00001.weights.h5", rng="rng-00001.npz")
    assert training.restore_checkpoint(model, out, steps_per_epoch=2, epochs=3) is not None


@pytest.fixture
def interrupted(tmp_path):
    """tmp_path: a run folder with the whole checkpoints of epochs 1 and 2, state.json naming 2."""
    folder = str(tmp_path / training.CHECKPOINT_DIR)
    for epoch in (1, 2):
        checkpoint_files_on_disk(folder, epoch)
    weights, rng = training.checkpoint_files(2)
    (tmp_path / training.CHECKPOINT_DIR / training.STATE_FILE).write_text(
        json.dumps({"epoch": 2, "weights": weights, "rng": rng}))
    return str(tmp_path)


@pytest.mark.one_backend
def test_resume_epoch_is_the_checked_checkpoint_state_json_names(tmp_path, interrupted):
    assert training.resume_epoch(str(tmp_path / "fresh"), epochs=3) == 0
    assert training.resume_epoch(interrupted, epochs=3) == 2
    assert training.checkpoint_epoch(interrupted) == 2
    with pytest.raises(training.RunError, match=r"state.json: epoch 2 is outside \[0, 1\] \(this run trains 1 "
                                                r"epochs\)"):
        training.resume_epoch(interrupted, epochs=1)


@pytest.mark.one_backend
def test_a_damaged_newest_checkpoint_names_the_previous_one(interrupted):
    weights = os.path.join(interrupted, training.CHECKPOINT_DIR, "model-00002.weights.h5")
    with open(weights, "r+b") as f:
        f.truncate(100)
    with pytest.raises(training.RunError) as info:
        training.resume_epoch(interrupted, epochs=3)
    assert str(info.value).startswith(f"{weights}: not a whole HDF5 weights file, truncated or damaged")
    assert str(info.value).endswith("the previous complete checkpoint is epoch 1; `--resume-from 1` resumes from "
                                    "it, `--resume-from 0` starts the run over")
    assert training.checkpoint_epoch(interrupted) == 2  # state.json itself is whole
    assert training.complete_checkpoints(interrupted) == [1]


@pytest.mark.one_backend
def test_a_missing_state_json_beside_checkpoints_is_an_error(interrupted):
    os.remove(os.path.join(interrupted, training.CHECKPOINT_DIR, training.STATE_FILE))
    with pytest.raises(training.RunError, match=r"state.json: missing, yet the run folder holds checkpoints; the "
                                                r"previous complete checkpoint is epoch 2 \(complete checkpoints: "
                                                r"epochs 1, 2\)"):
        training.resume_epoch(interrupted, epochs=3)
    assert training.checkpoint_epoch(interrupted) == 0


@pytest.mark.one_backend
@pytest.mark.parametrize("name, problem", [
    ("../../elsewhere.h5", "is not a file name inside"),
    ("/abs/model-00002.weights.h5", "is not a file name inside"),
    ("model-00001.weights.h5", "is not the checkpoint of epoch 2 ('model-00002.weights.h5')"),
])
def test_state_json_names_only_its_own_files(interrupted, name, problem):
    set_state(interrupted, weights=name)
    with pytest.raises(training.RunError) as info:
        training.read_state(interrupted)
    assert problem in str(info.value)
    assert training.checkpoint_epoch(interrupted) == 0  # unusable: none


@pytest.mark.one_backend
def test_resume_from_an_earlier_checkpoint_or_over(interrupted, capsys):
    assert training.resume_epoch(interrupted, epochs=3, resume_from=1) == 1
    assert training.read_state(interrupted)["epoch"] == 1
    with pytest.raises(training.RunError, match=r"--resume-from 3: .*model-00003.weights.h5: missing"):
        training.resume_epoch(interrupted, epochs=3, resume_from=3)
    assert training.resume_epoch(interrupted, epochs=3, resume_from=0) == 0
    assert f"--resume-from 0: starting {interrupted} over (its checkpoints deleted)" in capsys.readouterr().err
    assert os.listdir(os.path.join(interrupted, training.CHECKPOINT_DIR)) == []
