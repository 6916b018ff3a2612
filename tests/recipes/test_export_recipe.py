"""`python -m recipes.export`: one entry point for the exporters (issue 39, item 2)."""

import os

import numpy as np
import pytest

from recipes import export
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytestmark = pytest.mark.one_backend  # the recipe's reading, writing and errors; parity: test_huggingface_conversion

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(40)]


@pytest.fixture
def fine_tuned(tmp_path):
    """A fine-tuned Hugging Face BERT classifier folder, with its vocabulary."""
    config = transformers.BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=16,
                                     num_labels=3)
    model = randomize_torch_module(transformers.BertForSequenceClassification(config)).eval()
    folder = tmp_path / "fine_tuned"
    model.save_pretrained(str(folder))
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return model, str(folder)


def test_a_fine_tuned_folder_goes_out_again_with_its_head(fine_tuned, tmp_path):
    model, folder = fine_tuned
    out = str(tmp_path / "out")
    assert export.main(["--from", folder, "--to", "huggingface", "--out", out]) == 0
    again = transformers.AutoModelForSequenceClassification.from_pretrained(out).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(out)
    batch = tokenizer(["w1 w2 w3", "w4 w5"], padding=True, return_tensors="pt")
    with torch.no_grad():
        assert max_abs_diff(again(**batch).logits.numpy(), model(**batch).logits.numpy()) <= TOLERANCE
    assert sorted(os.listdir(out)) == ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                       "vocab.txt"]


def test_refuses_a_folder_that_holds_files(fine_tuned, tmp_path, capsys):
    _, folder = fine_tuned
    out = tmp_path / "busy"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    with pytest.raises(SystemExit) as exit_info:
        export.main(["--from", folder, "--to", "huggingface", "--out", str(out)])
    assert exit_info.value.code == 2 and "not an empty folder" in capsys.readouterr().err
    assert os.listdir(out) == ["mine.txt"] and (out / "mine.txt").read_text() == "keep"


def test_a_missing_source_is_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        export.main(["--from", str(tmp_path / "nothing"), "--to", "huggingface", "--out", str(tmp_path / "o")])
    assert exit_info.value.code == 2
    assert "nothing" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_elmo_to_huggingface_says_why_and_where_to(tmp_path, capsys):
    from keras_pretrain import families

    family = families.get("elmo")
    model = family.backbone_class(**family.demo_config)
    model.save(str(tmp_path / "model.keras"))
    with pytest.raises(SystemExit) as exit_info:
        export.main(["--from", str(tmp_path / "model.keras"), "--to", "huggingface", "--out", str(tmp_path / "o")])
    assert exit_info.value.code == 2 and "to_bilm" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
