"""Parity with the independent `transformers` ALBERT (random tiny weights).

The published-layout fixtures (tests/models/albert/fixtures.py) hold the same
weights as the `transformers` model; our loader must reproduce its sequence,
pooled, MLM and SOP outputs within TOLERANCE on every backend.
"""

import os

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.albert import AlbertBackbone
from keras_pretrain.models.albert import AlbertPretrainer
from keras_pretrain.models.albert import AlbertTokenizer
from keras_pretrain.models.albert import load_albert
from tests.models.albert.fixtures import build_albert_archive
from tests.models.albert.fixtures import hf_albert
from tests.models.albert.fixtures import reference_outputs
from tests.models.albert.fixtures import train_sentencepiece
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

POSITIONS = np.array([[1, 3, 5], [0, 6, 11]], "int32")


def compare(pretrainer, model, vocab_size):
    data = random_encoder_inputs(2, 12, vocab_size, pad_from=8)
    reference = reference_outputs(model, data, POSITIONS)
    ours_backbone = pretrainer.backbone(data)
    ours = pretrainer({**data, "masked_lm_positions": POSITIONS})
    diffs = {
        "sequence_output": max_abs_diff(ours_backbone["sequence_output"], reference["sequence_output"]),
        "pooled_output": max_abs_diff(ours_backbone["pooled_output"], reference["pooled_output"]),
        "encoder_outputs": max(
            max_abs_diff(a, b) for a, b in zip(ours_backbone["encoder_outputs"], reference["encoder_outputs"])
        ),
        "mlm": max_abs_diff(ours["mlm"], reference["mlm"]),
        "sop": max_abs_diff(ours["sop"], reference["sop"]),
    }
    print("max abs diff", {k: f"{v:.2e}" for k, v in diffs.items()})
    for key, diff in diffs.items():
        assert diff <= TOLERANCE, f"{key}: {diff}"
    return diffs


@pytest.mark.parametrize(
    "kind, num_layers, groups, inner",
    [("v2", 2, 1, 1), ("v2", 3, 2, 2), ("zh", 2, 1, 1)],
    ids=["v2", "v2-groups2-inner2", "zh"],
)
def test_published_archive_parity(tmp_path, kind, num_layers, groups, inner):
    path, model = build_albert_archive(str(tmp_path), kind, num_layers, groups, inner)
    pretrainer, tokenizer = load_albert(path, pretrainer=True)
    assert isinstance(pretrainer, AlbertPretrainer)
    backbone = pretrainer.backbone
    assert (backbone.num_groups, backbone.num_inner_repetitions) == (groups, inner)
    assert backbone.activation == ("gelu_approximate" if kind == "v2" else "relu")
    assert len(backbone.output["encoder_outputs"]) == num_layers
    assert tokenizer.vocabulary_size() == model.config.vocab_size
    compare(pretrainer, model, model.config.vocab_size)


def test_extracted_folder_hub_module_and_backbone_only(tmp_path):
    folder, model = build_albert_archive(str(tmp_path), "v2", tarball=False)
    data = random_encoder_inputs(2, 12, model.config.vocab_size, pad_from=8)
    reference = reference_outputs(model, data, POSITIONS)
    # The extracted folder (top folder inside), backbone only: cls/* is ignored.
    backbone, tokenizer = load_albert(folder)
    assert isinstance(backbone, AlbertBackbone) and isinstance(tokenizer, AlbertTokenizer)
    assert max_abs_diff(backbone(data)["sequence_output"], reference["sequence_output"]) <= TOLERANCE
    # The same through the convert registry.
    backbone, _ = convert.from_tf1_checkpoint(folder, family="albert")
    assert max_abs_diff(backbone(data)["pooled_output"], reference["pooled_output"]) <= TOLERANCE
    # A TF1 hub module: variables/ + assets/ at the root.
    hub, model = build_albert_archive(str(tmp_path), "v2", tarball=False, layout="hub", seed=1)
    pretrainer, tokenizer = load_albert(hub, pretrainer=True)
    assert tokenizer is not None
    compare(pretrainer, model, model.config.vocab_size)


def test_huggingface_parity(tmp_path):
    vocab_size = 64
    model = hf_albert(vocab_size, num_layers=3, groups=2, inner=2)
    folder = str(tmp_path / "hf")
    model.save_pretrained(folder)
    train_sentencepiece(os.path.join(folder, "spiece.model"), vocab_size)
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, AlbertPretrainer) and tokenizer.vocabulary_size() == vocab_size
    compare(pretrainer, model, vocab_size)
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, AlbertBackbone)
    # An `AlbertModel` folder (no "albert." prefix, no heads).
    base_folder = str(tmp_path / "hf_base")
    model.albert.save_pretrained(base_folder)
    backbone, _ = convert.from_huggingface(base_folder)
    data = random_encoder_inputs(2, 12, vocab_size, pad_from=8)
    reference = reference_outputs(model, data, POSITIONS)
    assert max_abs_diff(backbone(data)["sequence_output"], reference["sequence_output"]) <= TOLERANCE
