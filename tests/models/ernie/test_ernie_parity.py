"""Parity with the independent `transformers` ERNIE (random tiny weights, task-type embeddings)."""

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.models.ernie import ErnieBackbone
from keras_pretrain.models.ernie import ErniePretrainer
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import random_encoder_inputs
from tests.testing import randomize_torch_module
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]


def hf_config(use_task_id):
    return transformers.ErnieConfig(
        vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=37, max_position_embeddings=20, type_vocab_size=2, hidden_act="relu",
        use_task_id=use_task_id, task_type_vocab_size=3, layer_norm_eps=1e-5,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )


def data(use_task_id):
    d = random_encoder_inputs(2, 12, len(VOCAB), pad_from=8)
    if use_task_id:
        d["task_type_ids"] = np.array([[1] * 12, [2] * 12], "int32")
    return d


def torch_inputs(d):
    out = {"input_ids": d["token_ids"], "token_type_ids": d["segment_ids"], "attention_mask": d["padding_mask"]}
    if "task_type_ids" in d:
        out["task_type_ids"] = d["task_type_ids"]
    return {k: torch.tensor(v, dtype=torch.long) for k, v in out.items()}


@pytest.mark.parametrize("use_task_id", [True, False])
def test_model_parity(tmp_path, use_task_id):
    folder = str(tmp_path / "hf")
    model = randomize_torch_module(transformers.ErnieModel(hf_config(use_task_id)))
    model.save_pretrained(folder)
    d = data(use_task_id)
    with torch.no_grad():
        out = model(**torch_inputs(d))
    backbone, _ = convert.from_huggingface(folder)
    assert isinstance(backbone, ErnieBackbone) and backbone.use_task_id == use_task_id
    assert backbone.activation == "relu"
    ours = backbone(d)
    real = d["padding_mask"].astype(bool)
    diffs = (max_abs_diff(to_numpy(ours["sequence_output"])[real], out.last_hidden_state.numpy()[real]),
             max_abs_diff(ours["pooled_output"], out.pooler_output.numpy()))
    print("max abs diff", diffs)
    assert max(diffs) <= TOLERANCE


def test_masked_lm_parity(tmp_path):
    folder = str(tmp_path / "hf")
    model = randomize_torch_module(transformers.ErnieForMaskedLM(hf_config(True)))
    model.save_pretrained(folder)
    with open(f"{folder}/vocab.txt", "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    d = data(True)
    positions = np.array([[1, 3, 7], [0, 6, 11]], "int32")
    with torch.no_grad():
        logits = model(**torch_inputs(d)).logits.numpy()
    pretrainer, tokenizer = convert.from_huggingface(folder, pretrainer=True)
    assert isinstance(pretrainer, ErniePretrainer) and pretrainer.sentence_head is None
    assert tokenizer.vocabulary_size() == len(VOCAB)
    diff = max_abs_diff(pretrainer({**d, "masked_lm_positions": positions})["mlm"],
                        np.take_along_axis(logits, positions[..., None], axis=1))
    print("max abs diff", diff)
    assert diff <= TOLERANCE


@pytest.mark.tf_only
def test_preset_counts_equal_transformers():
    """Shapes of the presets, counted by `transformers` on the meta device (no memory used)."""
    ernie = ErnieBackbone.from_preset("ernie_1.0_base_zh").count_params()
    config = transformers.ErnieConfig(vocab_size=18000, max_position_embeddings=513, hidden_act="relu")
    with torch.device("meta"):
        reference = transformers.ErnieModel(config).num_parameters()
    assert ernie == reference == 99_866_112
    # Chinese BERT-wwm: BERT-base Chinese shapes.
    wwm = ErnieBackbone.from_preset("bert_wwm_base_zh").count_params()
    with torch.device("meta"):
        reference = transformers.BertModel(transformers.BertConfig(vocab_size=21128)).num_parameters()
    assert wwm == reference == 102_267_648
