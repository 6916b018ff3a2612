"""recipes.albert_to_savedmodel: TF-Hub-style encoder + preprocessor SavedModels."""

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.models.albert.fixtures import ZH_VOCAB
from tests.models.albert.fixtures import build_albert_archive
from tests.models.albert.fixtures import reference_outputs
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff

pytestmark = pytest.mark.tf_only  # SavedModels are TF-side code
transformers = pytest.importorskip("transformers")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TEXTS_A = ["The quick brown fox jumps.", "ALBERT is a LITE Bert; Café!"]
TEXTS_B = ["Sentence order prediction", "numbers 12 345"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from recipes.albert_to_savedmodel import main

    tmp = str(tmp_path_factory.mktemp("albert_export"))
    path, model = build_albert_archive(tmp, "v2", num_layers=3, groups=2, inner=2)
    out = os.path.join(tmp, "out")
    assert main(["--tarball", path, "--out", out, "--seq-length", "16"]) == 0
    return path, model, out


def encoder_inputs(data):
    return {"input_word_ids": data["token_ids"], "input_mask": data["padding_mask"],
            "input_type_ids": data["segment_ids"]}


def test_encoder_parity_with_transformers(exported):
    import tensorflow as tf

    _, model, out = exported
    encoder = tf.saved_model.load(os.path.join(out, "encoder"))
    from tests.testing import random_encoder_inputs

    data = random_encoder_inputs(2, 12, model.config.vocab_size, pad_from=8)
    positions = np.array([[1, 3, 5], [0, 6, 11]], "int32")
    reference = reference_outputs(model, data, positions)
    outputs = encoder(encoder_inputs(data))
    assert sorted(outputs) == ["default", "encoder_outputs", "pooled_output", "sequence_output"]
    assert len(outputs["encoder_outputs"]) == 3
    mlm = encoder.mlm({**encoder_inputs(data), "masked_lm_positions": positions})
    diffs = {
        "sequence_output": max_abs_diff(outputs["sequence_output"], reference["sequence_output"]),
        "pooled_output": max_abs_diff(outputs["pooled_output"], reference["pooled_output"]),
        "default": max_abs_diff(outputs["default"], reference["pooled_output"]),
        "encoder_outputs": max(max_abs_diff(a, b) for a, b in zip(outputs["encoder_outputs"], reference["encoder_outputs"])),
        "mlm_logits": max_abs_diff(mlm["mlm_logits"], reference["mlm"]),
        "sop_logits": max_abs_diff(mlm["sop_logits"], reference["sop"]),
    }
    print("SavedModel max abs diff", {k: f"{v:.2e}" for k, v in diffs.items()})
    assert max(diffs.values()) <= TOLERANCE, diffs
    assert set(encoder.signatures) == {"serving_default", "mlm"}
    serving = encoder.signatures["serving_default"](**{k: tf.constant(v) for k, v in encoder_inputs(data).items()})
    assert max_abs_diff(serving["encoder_outputs_2"], reference["sequence_output"]) <= TOLERANCE


def test_preprocessor_matches_transformers_tokenizer(exported, tmp_path):
    import shutil
    import tarfile

    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the preprocessor uses)

    path, _, out = exported
    with tarfile.open(path) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("30k-clean.model"))
        tar.extract(member, str(tmp_path), filter="data")
    shutil.copy(os.path.join(tmp_path, member.name), tmp_path / "spiece.model")
    reference = transformers.AlbertTokenizer.from_pretrained(str(tmp_path))
    pre = tf.saved_model.load(os.path.join(out, "preprocessor"))
    # One segment, default seq_length (16 here).
    expected = reference(TEXTS_A, padding="max_length", max_length=16, truncation=True, return_token_type_ids=True)
    got = pre(tf.constant(TEXTS_A))
    np.testing.assert_array_equal(got["input_word_ids"], expected["input_ids"])
    np.testing.assert_array_equal(got["input_mask"], expected["attention_mask"])
    # Two segments through tokenize + bert_pack_inputs, another length.
    packed = pre.bert_pack_inputs([pre.tokenize(tf.constant(TEXTS_A)), pre.tokenize(tf.constant(TEXTS_B))],
                                  seq_length=tf.constant(40))
    expected = reference(TEXTS_A, TEXTS_B, padding="max_length", max_length=40, return_token_type_ids=True)
    np.testing.assert_array_equal(packed["input_word_ids"], expected["input_ids"])
    np.testing.assert_array_equal(packed["input_type_ids"], expected["token_type_ids"])
    np.testing.assert_array_equal(packed["input_mask"], expected["attention_mask"])
    assert (int(pre.cls_id), int(pre.sep_id), int(pre.pad_id), int(pre.mask_id)) == (2, 3, 0, 4)
    pair = pre.signatures["pair"](text_a=tf.constant(TEXTS_A), text_b=tf.constant(TEXTS_B))
    assert pair["input_word_ids"].shape == (2, 16)


def test_tfsmlayer_reload(exported):
    import keras
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    _, _, out = exported
    pre = keras.layers.TFSMLayer(os.path.join(out, "preprocessor"))
    encoder = keras.layers.TFSMLayer(os.path.join(out, "encoder"))
    inputs = pre(tf.constant(TEXTS_A))
    outputs = encoder(inputs)
    assert tuple(outputs["pooled_output"].shape) == (2, 32)
    direct = tf.saved_model.load(os.path.join(out, "encoder"))(inputs)
    assert max_abs_diff(outputs["sequence_output"], direct["sequence_output"]) == 0.0
    mlm = keras.layers.TFSMLayer(os.path.join(out, "encoder"), call_endpoint="serve_mlm")
    result = mlm({**inputs, "masked_lm_positions": tf.constant([[1, 2], [3, 4]])})
    assert tuple(result["mlm_logits"].shape) == (2, 2, 64)


def test_saved_model_cli_run(exported, tmp_path):
    _, _, out = exported
    cli = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    arrays = {"input_word_ids": [[2, 5, 6, 3, 0]], "input_mask": [[1, 1, 1, 1, 0]], "input_type_ids": [[0] * 5]}
    inputs = []
    for name, value in arrays.items():
        np.save(tmp_path / f"{name}.npy", np.array(value, "int32"))
        inputs.append(f"{name}={tmp_path / name}.npy")
    result = subprocess.run(
        [cli, "run", "--dir", os.path.join(out, "encoder"), "--tag_set", "serve",
         "--signature_def", "serving_default", "--inputs", ";".join(inputs)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "pooled_output" in result.stdout and "sequence_output" in result.stdout


def test_zh_export_and_recipe_errors(tmp_path, capsys):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from recipes.albert_to_savedmodel import main

    path, model = build_albert_archive(str(tmp_path), "zh")
    out = str(tmp_path / "out")
    assert main(["--tarball", path, "--out", out, "--no-mlm"]) == 0
    pre = tf.saved_model.load(os.path.join(out, "preprocessor"))
    encoder = tf.saved_model.load(os.path.join(out, "encoder"))
    assert not hasattr(encoder, "mlm") or "mlm" not in encoder.signatures
    inputs = pre(tf.constant(["我是中国人", "hello world"]))
    assert inputs["input_word_ids"].shape == (2, 40)  # capped at the 40 positions
    expected = [2] + [ZH_VOCAB.index(c) for c in "我是中国人"] + [3]
    assert list(np.asarray(inputs["input_word_ids"])[0, :7]) == expected
    assert encoder(inputs)["pooled_output"].shape == (2, 32)
    # Errors: exit status 2 and one line naming the problem.
    assert main(["--tarball", path, "--out", out]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(open(path, "rb").read()[:200])
    assert main(["--tarball", str(bad), "--out", str(tmp_path / "o2")]) == 2
    assert "bad.tar.gz" in capsys.readouterr().err
    assert main(["--tarball", str(tmp_path / "missing.tar.gz"), "--out", str(tmp_path / "o3")]) == 2
    assert main(["--tarball", path, "--out", str(tmp_path / "o4"), "--seq-length", "41"]) == 2
    assert "exceeds the model's 40 positions" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2


def test_preprocessor_runs_under_saved_model_cli(exported):
    """The preprocessor needs the tensorflow-text ops: our entry point loads them."""
    _, _, out = exported
    result = subprocess.run(
        [sys.executable, "-m", "keras_pretrain.export.saved_model_cli", "run",
         "--dir", os.path.join(out, "preprocessor"), "--tag_set", "serve",
         "--signature_def", "serving_default", "--input_exprs", 'text=["Hello world", "a b"]'],
        capture_output=True, text=True, timeout=180, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "input_word_ids" in result.stdout and "input_mask" in result.stdout
