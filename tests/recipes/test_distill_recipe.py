import pytest

from recipes import distill
from tests.recipes.test_pretrain_recipe import CORPUS


@pytest.mark.tf_only
@pytest.mark.large  # 24 s; the distiller's loss and training: tests/distill, every backend
def test_distill_recipe_end_to_end(tmp_path, capsys):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(CORPUS * 4, encoding="utf-8")
    summary = distill.main([
        "--corpus", str(corpus), "--vocab-size", "120", "--hidden-dim", "16", "--teacher-layers", "4",
        "--student-layers", "2", "--seq-length", "24", "--max-predictions", "4", "--batch-size", "4",
        "--teacher-steps", "3", "--distill-steps", "3", "--eval-batches", "1",
    ])
    assert summary["copied_layers"] == [0, 2]
    assert summary["student_params"] < summary["teacher_params"]
    assert 0.0 <= summary["student_mlm_accuracy"] <= 1.0
    out = capsys.readouterr().out
    assert "teacher:" in out and "student:" in out and "parameters" in out


@pytest.mark.tf_only
@pytest.mark.parametrize("argv, message", [
    (["--corpus", "/nonexistent/file.txt"], "corpus"),
    (["--distill-steps", "0"], "--distill-steps must be positive"),
    (["--student-layers", "5"], "cannot exceed"),
    (["--copy-layers", "0", "9"], "--copy-layers"),
])
def test_bad_arguments_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as info:
        distill.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.tf_only
def test_help_exits_0(capsys):
    with pytest.raises(SystemExit) as info:
        distill.main(["--help"])
    assert info.value.code == 0
    assert "--temperature" in capsys.readouterr().out
