import os

import pytest

from recipes import finetune
from recipes import pretrain
from tests.recipes.test_pretrain_recipe import CORPUS

pytestmark = pytest.mark.tf_only  # end-to-end recipe: one backend is enough


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("ft")
    corpus = root / "corpus.txt"
    corpus.write_text(CORPUS * 4, encoding="utf-8")
    out = str(root / "run")
    pretrain.main(["--corpus", str(corpus), "--out", out, "--steps", "2", "--steps-per-epoch", "2",
                   "--batch-size", "4", "--seq-length", "24", "--max-predictions", "4",
                   "--vocab-size", "200", "--eval-batches", "1", "--verbose", "0", "--no-export"])
    return out


def write_table(path, header, rows):
    path.write_text("\n".join(["\t".join(header)] + ["\t".join(r) for r in rows]) + "\n", encoding="utf-8")
    return str(path)


def test_classify(run_folder, tmp_path):
    data = write_table(tmp_path / "c.tsv", ["label", "text"],
                       [("en", "the whale was white"), ("zh", "床前明月光")] * 8)
    summary = finetune.main(["--from", run_folder, "--task", "classify", "--data", data, "--epochs", "1",
                             "--batch-size", "4", "--seq-length", "16", "--out", str(tmp_path / "c"), "--verbose", "0"])
    assert summary["labels"] == ["en", "zh"]
    assert os.path.exists(tmp_path / "c" / "classifier.keras")
    assert os.path.exists(tmp_path / "c" / "classifier" / "1" / "saved_model.pb")  # TF Serving's NAME/1
    assert summary["serving"]["inputs"] == ["text"] and summary["serving"]["labels"] == ["en", "zh"]
    assert summary["family"] == "albert" and summary["rows"] == 16


@pytest.mark.parametrize(
    "args, message",
    [
        (["--data", "/nonexistent.tsv"], "no such file"),
        (["--task", "pair"], "lacks column"),
        (["--epochs", "0"], "must be positive"),
    ],
)
def test_bad_arguments_exit_2(run_folder, tmp_path, capsys, args, message):
    data = write_table(tmp_path / "c.tsv", ["label", "text"], [("a", "x")] * 4)
    argv = ["--from", run_folder, "--data", data, "--out", str(tmp_path / "o")] + args
    with pytest.raises(SystemExit) as info:
        finetune.main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
