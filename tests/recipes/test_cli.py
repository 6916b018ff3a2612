"""`keras-pretrain <command>` (recipes.cli, the console script) and the recipes' parser: commands listed at
once, an unknown command or option gets a "did you mean", no abbreviated options, TensorFlow's native start-up
lines filtered."""

import os
import subprocess
import sys

import pytest

from recipes import cli
from recipes import common

pytestmark = pytest.mark.one_backend
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(*args):
    return subprocess.run([sys.executable, "-m", "recipes.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_help_lists_every_command_without_importing_tensorflow():
    result = run("--help")
    assert result.returncode == 0, result.stderr
    for name in cli.COMMANDS:
        assert f"  {name} " in result.stdout
    assert result.stderr == ""
    code = "import sys; from recipes import cli; cli.usage(); print(sorted(m for m in ('tensorflow', 'keras', " \
           "'keras_pretrain') if m in sys.modules))"
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert imported.stdout.strip() == "[]", imported.stdout + imported.stderr


def test_every_command_is_a_module_with_a_main():
    import importlib.util

    for name, (module, text) in cli.COMMANDS.items():
        assert importlib.util.find_spec(module) is not None, name
        assert text and name == name.lower() and "_" not in name


def test_an_unknown_command_is_a_usage_error_with_a_suggestion():
    result = run("finetuen")
    assert result.returncode == 2
    assert "unknown command 'finetuen' (did you mean 'finetune'?)" in result.stderr
    assert run().returncode == 2


def test_a_command_runs_its_recipe_under_the_command_name():
    result = run("create_pretraining_data", "--help")  # snake case accepted for a command
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: keras-pretrain create-pretraining-data")


def test_the_console_script_is_declared():
    text = open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8").read()
    assert 'keras-pretrain = "recipes.cli:main"' in text


def parser():
    p = common.ArgumentParser(prog="python -m recipes.example")
    p.add_argument("--seq-length", type=int, default=128, help="length")
    p.add_argument("--out", help="folder")
    return p


def test_no_abbreviations_and_a_suggestion_for_a_misspelt_option(capsys):
    with pytest.raises(SystemExit) as info:
        parser().parse_args(["--seq", "64"])
    assert info.value.code == 2
    assert "did you mean: --seq -> --seq-length?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser().parse_args(["--seq_length", "64"])
    assert "--seq_length -> --seq-length" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parser().parse_args(["--zzzzzz"])
    assert "did you mean" not in capsys.readouterr().err
    assert parser().parse_args(["--seq-length", "64"]).seq_length == 64


def test_the_usage_names_the_console_command(monkeypatch):
    monkeypatch.setattr(common, "COMMAND_PROG", "keras-pretrain example")
    assert parser().prog == "keras-pretrain example"
    monkeypatch.setattr(common, "COMMAND_PROG", None)
    assert parser().prog == "python -m recipes.example"


NOISE = """WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
I0000 00:00:1796685340.382562   19533 cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
I0000 00:00:1796685340.486914   19533 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.
To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate compiler flags.
E0000 00:00:1796685347.283212   19533 cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)
"""


def test_native_noise_is_filtered_and_everything_else_kept():
    code = ("import os, sys\nfrom recipes import common\nwith common.native_noise_filtered():\n"
            f"    os.write(2, {NOISE.encode()!r})\n    os.write(2, b'a real problem\\n')\n"
            "    print('python warning', file=sys.stderr)\nprint('after', file=sys.stderr)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0
    assert result.stderr == "a real problem\npython warning\nafter\n"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                           env={**os.environ, "KERAS_PRETRAIN_NATIVE_LOGS": "1"})
    assert "cudart_stub.cc" in shown.stderr


def test_tensorflow_starts_quietly():
    code = "from recipes import common\ncommon.start_tensorflow()\nimport tensorflow as tf\nprint(tf.constant(2) + 1)"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    noise = [line for line in result.stderr.splitlines() if line.strip()]
    assert noise == [], noise

