import json
import os

import pytest

from recipes import pretrain

CORPUS = """The quick brown fox jumps over the lazy dog.
It was the best of times.
It was the worst of times.

Call me Ishmael.
Some years ago I went to sea.
The whale was white.

床前明月光。
疑是地上霜。
举头望明月。
低头思故乡。

Hello world, said the program.
Then it stopped.
"""


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text(CORPUS * 4, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("model, objective, masking", [("albert", "sop", "ngram"), ("bert", "nsp", "token")])
def test_pretrain_end_to_end(corpus, tmp_path, model, objective, masking):
    """The masked-LM families on every backend (the others: test_other_families)."""
    out = str(tmp_path / "run")
    summary = pretrain.main([
        "--model", model, "--corpus", corpus, "--out", out, "--steps", "4", "--steps-per-epoch", "2",
        "--batch-size", "4", "--seq-length", "24", "--max-predictions", "4",
        "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0", "--no-export",
    ])
    assert summary["steps"] == 4
    for name in ("pretrainer.keras", "vocab.txt", "summary.json", "history.csv", "preset/config.json", "loss.png", "logs"):
        assert os.path.exists(os.path.join(out, name)), name
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    assert (summary["objective"], summary["masking"]) == (objective, masking)


@pytest.mark.tf_only
def test_demo_path_exports_and_fills_masks(corpus, tmp_path, capsys):
    """The main job with even smaller settings: train, export, reload, fill-mask."""
    out = str(tmp_path / "demo")
    pretrain.main([
        "--corpus", corpus, "--out", out, "--steps", "2", "--steps-per-epoch", "2",
        "--batch-size", "4", "--seq-length", "24", "--max-predictions", "4",
        "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0",
        "--fill-mask", "It was the [MASK] of times.", "床前明[MASK]光",
    ])
    printed = capsys.readouterr().out
    assert "before: masked-LM accuracy" in printed and "after:  masked-LM accuracy" in printed
    assert printed.count("[MASK] 1:") == 2
    for name in ("module/metadata.json", "module/encoder/saved_model.pb", "module/preprocessor/saved_model.pb", "module/model.keras"):
        assert os.path.exists(os.path.join(out, name)), name


@pytest.mark.tf_only
@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "gpt9"], "unknown model"),
        (["--corpus", "/nonexistent/file.txt"], "corpus"),
        (["--steps", "0"], "--steps must be positive"),
    ],
)
def test_bad_arguments_exit_2(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        pretrain.main(argv + ["--out", str(tmp_path / "o")])
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.tf_only
def test_refuses_to_overwrite(corpus, tmp_path, capsys):
    out = tmp_path / "used"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(SystemExit) as info:
        pretrain.main(["--corpus", corpus, "--out", str(out)])
    assert info.value.code == 2
    assert "already holds files" in capsys.readouterr().err
    assert (out / "precious.txt").read_text() == "keep me"


def tiny_args(corpus, out, steps):
    return ["--corpus", corpus, "--out", out, "--steps", str(steps), "--steps-per-epoch", "2",
            "--batch-size", "4", "--seq-length", "24", "--max-predictions", "4",
            "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0", "--seed", "3", "--no-export"]


@pytest.mark.tf_only  # slow; the resume logic is backend-independent (checked on jax by hand)
def test_resume_reaches_same_weights(corpus, tmp_path, monkeypatch):
    """An interrupted run, restarted, ends where an uninterrupted one does."""
    import keras
    import numpy as np

    from recipes import common

    full = str(tmp_path / "full")
    pretrain.main(tiny_args(corpus, full, 6))

    part = str(tmp_path / "part")
    original = common.epoch_checkpoint

    def interrupting_checkpoint(out):
        callback = original(out)
        save = callback.on_epoch_end

        def on_epoch_end(epoch, logs=None):
            save(epoch, logs)
            if epoch == 1:  # after 2 epochs (4 steps): simulate a kill
                raise KeyboardInterrupt

        callback.on_epoch_end = on_epoch_end
        return callback

    monkeypatch.setattr(common, "epoch_checkpoint", interrupting_checkpoint)
    with pytest.raises(KeyboardInterrupt):
        pretrain.main(tiny_args(corpus, part, 6))
    monkeypatch.setattr(common, "epoch_checkpoint", original)
    assert common.checkpoint_epoch(part) == 2
    summary = pretrain.main(tiny_args(corpus, part, 6))
    assert summary["steps"] == 6
    a = keras.models.load_model(os.path.join(full, "pretrainer.keras"))
    b = keras.models.load_model(os.path.join(part, "pretrainer.keras"))
    worst = max(
        float(np.max(np.abs(keras.ops.convert_to_numpy(x) - keras.ops.convert_to_numpy(y))))
        for x, y in zip(a.weights, b.weights)
    )
    assert worst < 1e-5, worst
    assert os.path.exists(os.path.join(part, "loss.png"))
    # A finished run is never resumed or overwritten.
    with pytest.raises(SystemExit):
        pretrain.main(tiny_args(corpus, part, 6))


# The other families are pretrained (and fine-tuned) in test_finetune_families.py.
