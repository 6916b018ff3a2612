import json
import os

import keras
import pytest

from keras_pretrain import pretraining
from keras_pretrain.pretraining import masked_lm
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
    assert "unigram baseline on the same held-out positions" in printed
    with open(os.path.join(out, "summary.json")) as f:
        baseline = json.load(f)["unigram_baseline"]
    assert 0.0 <= baseline["mlm_accuracy"] <= 1.0 and baseline["token"]
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


def large_on_tensorflow(test):
    """60-90 s on TensorFlow (2 cores): `make test-large` there; PyTorch (the backend that was wrong) and
    JAX run it in every `make test`."""
    return pytest.mark.large(test) if keras.config.backend() == "tensorflow" else test


@large_on_tensorflow
def test_resume_with_dropout_reaches_same_weights(corpus, tmp_path, monkeypatch, capsys):
    """An interrupted run (SIGTERM after 2 of 3 epochs), restarted, ends with
    exactly the weights of an uninterrupted one, with dropout on: the random
    states (seed generators; torch's global generator on PyTorch) are in the
    checkpoint. Without them, PyTorch's weights differed by up to 0.1."""
    import signal

    import keras
    import numpy as np

    from keras_pretrain import training
    from keras_pretrain.training import checkpoints

    args = lambda out: ["--model", "bert", "--dropout", "0.2"] + tiny_args(corpus, out, 6)  # noqa: E731
    full = str(tmp_path / "full")
    pretrain.main(args(full))

    part = str(tmp_path / "part")
    original = checkpoints.write_checkpoint

    def interrupted_after_epoch_2(model, out, epoch):
        original(model, out, epoch)
        if epoch == 2:  # after 4 of 6 steps, as a SIGTERM would
            signal.raise_signal(signal.SIGTERM)

    monkeypatch.setattr(checkpoints, "write_checkpoint", interrupted_after_epoch_2)  # what EpochCheckpoint calls
    with pytest.raises(SystemExit) as info:
        pretrain.main(args(part))
    assert info.value.code == 128 + signal.SIGTERM
    assert "stopped by SIGTERM (checkpoint of epoch 2 kept" in capsys.readouterr().err
    monkeypatch.setattr(checkpoints, "write_checkpoint", original)
    assert training.checkpoint_epoch(part) == 2
    assert not os.path.exists(os.path.join(part, training.LOCK_FILE))
    # Something else draws from the global generators in between (a fresh process would start anew).
    keras.random.uniform((3,))
    np.random.rand(3)
    summary = pretrain.main(args(part))
    assert summary["steps"] == 6
    a = keras.models.load_model(os.path.join(full, "pretrainer.keras"))
    b = keras.models.load_model(os.path.join(part, "pretrainer.keras"))
    for x, y in zip(a.weights, b.weights):
        np.testing.assert_array_equal(keras.ops.convert_to_numpy(x), keras.ops.convert_to_numpy(y), err_msg=x.path)
    assert os.path.exists(os.path.join(part, "loss.png"))
    # A finished run is never resumed or overwritten.
    with pytest.raises(SystemExit):
        pretrain.main(args(part))


# The other families are pretrained (and fine-tuned) in test_finetune_families.py.


@pytest.mark.tf_only  # runs once: a JAX subprocess with two fake CPU devices
@pytest.mark.large  # 32 s; model_parallel itself: tests/distribute (JAX 2x2), every run
def test_readme_model_parallel_command_pads_the_vocabulary(corpus, tmp_path):
    """`KERAS_BACKEND=jax python -m recipes.pretrain --model bert --distribution
    model_parallel` (smallest settings) trains although the learned vocabulary
    has an odd size: it is padded to a multiple of the "model" axis."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = str(tmp_path / "mp")
    env = dict(os.environ, KERAS_BACKEND="jax", PYTHONPATH=root, TF_CPP_MIN_LOG_LEVEL="3",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    words = sorted({w for w in CORPUS.lower().replace(".", " ").replace(",", " ").split()} | set(CORPUS) - {"\n", " "})
    tokens = masked_lm.SPECIAL_TOKENS + words[: len(words) - (len(words) + len(masked_lm.SPECIAL_TOKENS) + 1) % 2]
    assert len(tokens) % 2 == 1
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    argv = ["--model", "bert", "--distribution", "model_parallel", "--vocab", str(vocab)] + tiny_args(corpus, out, 2)
    result = subprocess.run([sys.executable, "-m", "recipes.pretrain"] + argv, cwd=root, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "distribution: model_parallel" in result.stdout
    with open(os.path.join(out, "preset", "config.json")) as f:
        vocabulary_size = json.load(f)["config"]["vocabulary_size"]
    assert vocabulary_size == len(tokens) + 1
    assert vocab.read_text(encoding="utf-8").split() == tokens  # the user's file is left alone
    # One device: a clear error, exit 2, nothing written.
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
    argv = ["--model", "bert", "--distribution", "model_parallel"] + tiny_args(corpus, str(tmp_path / "one"), 2)
    result = subprocess.run([sys.executable, "-m", "recipes.pretrain"] + argv, cwd=root, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "must divide the number of devices (1)" in result.stderr
    assert not os.path.exists(tmp_path / "one")


def test_demo_probes_are_held_out_sentences_of_the_bundled_corpus():
    """Each default fill-mask probe is text of a held-out document (never trained on) with one word masked."""
    from keras_pretrain.data.corpus import read_documents

    documents = list(read_documents(pretrain.DEFAULT_CORPUS))
    held_out = ["".join(doc).replace(" ", "") for i, doc in enumerate(documents) if pretraining.held_out_document(i)]
    assert 0 < len(held_out) <= len(documents) // pretraining.HELD_OUT_EVERY + 1

    def masked_in(probe, doc):  # the text around the mask, then a word of 1-12 characters, then the rest
        before, after = probe.replace(" ", "").split("[MASK]")
        tail = before[-6:]
        return before[:8] in doc and any(
            doc[p - len(tail):p] == tail and any(doc.startswith(after, p + k) for k in range(1, 13))
            for p in range(len(tail), len(doc)))

    for probe in pretrain.DEMO_SENTENCES:
        assert probe.count("[MASK]") == 1, probe
        assert any(masked_in(probe, doc) for doc in held_out), f"{probe!r}: not from a held-out document"


@pytest.mark.large
@pytest.mark.tf_only
def test_demo_default_run_learns(tmp_path, capsys):
    """`make demo` itself (about 4 minutes): held-out accuracy well above the unigram baseline, and the
    first probe (the 曰 of 子曰, in a held-out document) completed right."""
    summary = pretrain.main(["--out", str(tmp_path / "demo"), "--verbose", "0"])
    assert summary["after"]["mlm_accuracy"] > 2 * summary["unigram_baseline"]["mlm_accuracy"]
    out = capsys.readouterr().out
    first = out[out.index(pretrain.DEMO_SENTENCES[0]):].splitlines()[1]
    assert first.split(":", 1)[1].strip().startswith("曰 ("), first
