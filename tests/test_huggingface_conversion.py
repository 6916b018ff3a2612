"""Hugging Face folders both ways, every head, every family transformers has (issue 39, items 1 and 2).

For each architecture: a random tiny transformers model is saved; `convert.load` follows its `architectures`
to our task with its head, and its outputs equal transformers' (import parity); `convert.to_huggingface`
writes it back; the exported state dict equals transformers' own, tensor for tensor (the exporter is the
importers' placers run backwards), and `AutoModel*.from_pretrained` of the export gives the original's
outputs (export parity). Every backend; the checks of names, folders and errors once (`one_backend`).
"""

import json
import os

import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

V, T, B = 50, 9, 2
BERT_STYLE = dict(vocab_size=V, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
                  max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def configs():
    t = transformers
    return {
        "bert": t.BertConfig(**BERT_STYLE, hidden_act="gelu_new"),
        "albert": t.AlbertConfig(**BERT_STYLE, embedding_size=16, hidden_act="gelu_new", classifier_dropout_prob=0.0),
        "ernie": t.ErnieConfig(**BERT_STYLE, use_task_id=True, task_type_vocab_size=3),
        "roberta": t.RobertaConfig(**{**BERT_STYLE, "max_position_embeddings": 42}, pad_token_id=1, type_vocab_size=1),
        "distil_bert": t.DistilBertConfig(vocab_size=V, dim=32, n_layers=2, n_heads=4, hidden_dim=37,
                                          max_position_embeddings=40, dropout=0.0, attention_dropout=0.0,
                                          seq_classif_dropout=0.0),
        "xlnet": t.XLNetConfig(vocab_size=V, d_model=32, n_layer=2, n_head=4, d_inner=37, dropout=0.0,
                               summary_last_dropout=0.0),
        "gpt": t.OpenAIGPTConfig(vocab_size=V, n_positions=20, n_embd=32, n_layer=2, n_head=4, embd_pdrop=0.0,
                                 attn_pdrop=0.0, resid_pdrop=0.0, summary_first_dropout=0.0, pad_token_id=0),
    }


STEM = {"bert": "Bert", "albert": "Albert", "ernie": "Ernie", "roberta": "Roberta", "distil_bert": "DistilBert",
        "xlnet": "XLNet", "gpt": "OpenAIGPT"}
PRETRAINING = {"bert": "ForPreTraining", "albert": "ForPreTraining", "ernie": "ForPreTraining",
               "roberta": "ForMaskedLM", "distil_bert": "ForMaskedLM", "xlnet": "LMHeadModel", "gpt": "LMHeadModel"}
CASES = [(f, "Model") for f in STEM] + [(f, PRETRAINING[f]) for f in STEM] + [
    (f, "ForSequenceClassification") for f in STEM] + [
    ("bert", "ForMaskedLM"), ("gpt", "DoubleHeadsModel"),
    ("bert", "ForSequenceClassification:regression"), ("roberta", "ForSequenceClassification:multi_label")]


def inputs(family):
    rng = np.random.default_rng(0)
    ids = rng.integers(5, V, (B, T)).astype("int32")
    mask = np.ones((B, T), "int32")
    if family not in ("xlnet",):  # XLNet's summary reads the last position: inputs padded on the left there
        mask[1, 6:] = 0
        ids[1, 6:] = 1 if family == "roberta" else 0
    data = {"token_ids": ids, "padding_mask": mask}
    if family in ("bert", "albert", "ernie", "xlnet"):  # RoBERTa's, DistilBERT's and GPT's take none
        data["segment_ids"] = (np.arange(T)[None] >= 4).astype("int32") * np.ones_like(ids)
    if family == "ernie":
        data["task_type_ids"] = np.ones_like(ids)
    return data


def torch_inputs(family, data):
    x = {"input_ids": torch.tensor(data["token_ids"], dtype=torch.long),
         "attention_mask": torch.tensor(data["padding_mask"], dtype=torch.long)}
    if "segment_ids" in data:
        x["token_type_ids"] = torch.tensor(data["segment_ids"], dtype=torch.long)
    if "task_type_ids" in data:
        x["task_type_ids"] = torch.tensor(data["task_type_ids"], dtype=torch.long)
    return x


def hf_model(family, suffix, seed=0):
    config = configs()[family]
    suffix, _, problem = suffix.partition(":")
    if suffix == "ForSequenceClassification":
        config.num_labels = {"": 3, "regression": 1, "multi_label": 4}[problem]
        if problem:
            config.problem_type = {"regression": "regression", "multi_label": "multi_label_classification"}[problem]
    return randomize_torch_module(getattr(transformers, STEM[family] + suffix)(config), seed=seed).eval()


def choices(data, count=3):
    """[B, C, T] multiple-choice inputs from [B, T] ones."""
    return {k: np.repeat(v[:, None], count, axis=1) for k, v in data.items()}


def reference_outputs(family, suffix, model, data):
    """transformers' outputs to compare for this architecture."""
    with torch.no_grad():
        if suffix == "DoubleHeadsModel":
            many = multiple_choice_inputs(data)
            flat = {"input_ids": torch.tensor(many["token_ids"], dtype=torch.long),
                    "attention_mask": torch.tensor(many["padding_mask"].reshape(-1, T), dtype=torch.long)}
            last = torch.tensor(many["padding_mask"].sum(-1) - 1, dtype=torch.long)
            return model(**flat, mc_token_ids=last).mc_logits.numpy()
        reference = model(**torch_inputs(family, data))
    if suffix == "Model":
        return reference.last_hidden_state.numpy()
    if suffix.startswith("ForSequenceClassification") or family in ("gpt", "xlnet"):
        return reference.logits.numpy()
    positions = np.tile(np.arange(T, dtype="int32"), (B, 1))
    logits = reference.prediction_logits if hasattr(reference, "prediction_logits") else reference.logits
    return np.take_along_axis(logits.numpy(), positions[..., None], axis=1)


def our_outputs(family, suffix, ours, data):
    """Our model's outputs, as `reference_outputs` gives transformers'."""
    if suffix == "DoubleHeadsModel":
        return to_numpy(ours(multiple_choice_inputs(data))["logits"])
    if suffix == "Model":
        return to_numpy(ours(data)["sequence_output"])
    if suffix.startswith("ForSequenceClassification") or family == "gpt":
        logits = ours(data)
        return to_numpy(logits["logits"] if isinstance(logits, dict) else logits)
    if family == "xlnet":  # the LM head: the tied embedding and `lm_loss.bias` on the backbone's states
        states = to_numpy(ours.backbone(data)["sequence_output"])
        embedding = to_numpy(ours.backbone.token_embedding.embeddings)
        return states @ embedding.T + to_numpy(ours.lm_head.bias)
    positions = np.tile(np.arange(T, dtype="int32"), (B, 1))
    return to_numpy(ours({**data, "masked_lm_positions": positions})["mlm"])


def multiple_choice_inputs(data):
    many = choices(data)
    many["token_ids"][:, 1] = (many["token_ids"][:, 1] + 3) % V
    return many


def exported_state(folder):
    from safetensors.numpy import load_file

    return load_file(os.path.join(folder, "model.safetensors"))


def check_exported_folder(out, reference, skip=("position_ids",)):
    """The folder `to_huggingface` wrote names `reference`'s architecture and holds its state dict: every tensor a
    name transformers has, within 1e-6, and every one of transformers' (but `skip` and tied copies) exported."""
    config = json.load(open(os.path.join(out, "config.json")))
    assert config["architectures"] == [type(reference).__name__]
    state = exported_state(out)
    expected = {k: v.numpy() for k, v in reference.state_dict().items()}
    for name, value in state.items():
        assert name in expected, f"exported {name!r}, which transformers does not have"
        assert max_abs_diff(value, expected[name]) <= 1e-6, name
    untied = {k for k in expected if not k.endswith(tuple(skip))}
    tied = {k for k in untied - set(state) if any(np.array_equal(expected[k], v) for v in state.values())}
    assert untied - set(state) - tied == set(), "not exported"


@pytest.mark.parametrize("family,suffix", CASES, ids=[f"{f}-{s}" for f, s in CASES])
def test_both_ways(family, suffix, tmp_path):
    reference = hf_model(family, suffix)
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    reference.save_pretrained(source)
    data = inputs(family)

    model, _ = convert.load(source)  # follows `architectures`
    assert families.family_of(model).name == family
    ours, theirs = our_outputs(family, suffix, model, data), reference_outputs(family, suffix, reference, data)
    assert max_abs_diff(ours, theirs) <= TOLERANCE, ("import", max_abs_diff(ours, theirs))
    if ":" in suffix:
        assert model.problem_type == reference.config.problem_type

    convert.to_huggingface(model, out)
    check_exported_folder(out, reference, skip=("position_ids", "attn.bias", "masked_bias"))

    back = getattr(transformers, type(reference).__name__).from_pretrained(out).eval()
    again = reference_outputs(family, suffix, back, data)
    assert max_abs_diff(again, theirs) <= TOLERANCE, ("export", max_abs_diff(again, theirs))
    reloaded, _ = convert.load(out)
    for a, b in zip(model.weights, reloaded.weights):
        if suffix == "ForMaskedLM" and "pooled_dense" in a.path:
            continue  # transformers' *ForMaskedLM has no pooler: not exported, initialised on import
        assert tuple(a.shape) == tuple(b.shape) and max_abs_diff(a, b) == 0, a.path


@pytest.mark.one_backend
def test_backbone_only_says_which_head_it_skips(tmp_path, capsys):
    hf_model("albert", "ForSequenceClassification").save_pretrained(str(tmp_path))
    backbone, _ = convert.load(str(tmp_path), task=False)
    assert type(backbone).__name__ == "AlbertBackbone"
    assert "AlbertForSequenceClassification" in capsys.readouterr().out


@pytest.mark.one_backend
@pytest.mark.parametrize("family,architecture", [("bert", "BertForNextSentencePrediction"),
                                                  ("roberta", "RobertaForCausalLM")])
def test_an_architecture_without_a_task_is_named(family, architecture, tmp_path):
    config = configs()[family]
    randomize_torch_module(getattr(transformers, architecture)(config)).save_pretrained(str(tmp_path))
    with pytest.raises(ConfigError, match=architecture):
        convert.load(str(tmp_path))
    backbone, _ = convert.load(str(tmp_path), task=False)  # the backbone alone still loads
    assert families.family_of(backbone).name == family


@pytest.mark.one_backend
def test_unknown_architecture_is_named(tmp_path):
    hf_model("bert", "Model").save_pretrained(str(tmp_path))
    path = tmp_path / "config.json"
    path.write_text(path.read_text().replace('"BertModel"', '"BertForSomethingNew"'))
    with pytest.raises(ConfigError, match="BertForSomethingNew"):
        convert.load(str(tmp_path))


@pytest.mark.one_backend
def test_export_refuses_a_folder_that_is_not_empty_or_a_link(tmp_path):
    model, _ = convert.load(_saved(tmp_path / "hf", hf_model("bert", "Model")))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="not empty"):
        convert.to_huggingface(model, str(busy))
    assert os.listdir(busy) == ["notes.txt"] and (busy / "notes.txt").read_text() == "mine"
    target = tmp_path / "elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "link")
    with pytest.raises(ExportError, match="symbolic link"):
        convert.to_huggingface(model, str(tmp_path / "link"))
    assert os.listdir(target) == []


@pytest.mark.one_backend
def test_elmo_has_no_transformers_class():
    family = families.get("elmo")
    backbone = family.backbone_class(**family.demo_config)
    with pytest.raises(ExportError, match="to_bilm"):
        convert.to_huggingface(backbone, "unused")


@pytest.mark.one_backend
def test_activation_names_are_translated_back(tmp_path):
    for ours, theirs in (("gelu_approximate", "gelu_new"), ("gelu", "gelu"), ("relu", "relu")):
        backbone = families.get("bert").backbone_class(vocabulary_size=V, num_layers=1, num_heads=2, hidden_dim=8,
                                                       intermediate_dim=16, activation=ours)
        convert.to_huggingface(backbone, str(tmp_path / ours))
        assert json.load(open(tmp_path / ours / "config.json"))["hidden_act"] == theirs


def _saved(folder, model):
    model.save_pretrained(str(folder))
    return str(folder)


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch PAYLOAD_RAN",))


@pytest.mark.one_backend
def test_a_task_folder_pickle_runs_no_code(tmp_path, monkeypatch):
    """A fine-tuned head comes through the same restricted reader: a `pytorch_model.bin` holding code is
    refused, and the code never runs."""
    monkeypatch.chdir(tmp_path)
    hf_model("bert", "ForSequenceClassification").config.save_pretrained(str(tmp_path / "hf"))
    state = {k: v for k, v in hf_model("bert", "ForSequenceClassification").state_dict().items()}
    state["classifier.bias"] = _Payload()
    torch.save(state, str(tmp_path / "hf" / "pytorch_model.bin"))
    from keras_pretrain.errors import CheckpointFormatError

    with pytest.raises(CheckpointFormatError, match="pytorch_model.bin"):
        convert.load(str(tmp_path / "hf"))
    assert not (tmp_path / "PAYLOAD_RAN").exists()


@pytest.mark.one_backend
def test_a_gpt_classifier_with_a_bias_has_no_transformers_form(tmp_path):
    from keras_pretrain.models.gpt import GPTClassifier

    family = families.get("gpt")
    backbone = family.backbone_class(vocabulary_size=V, num_layers=1, num_heads=2, hidden_dim=8,
                                     intermediate_dim=32, max_sequence_length=16)
    classifier = GPTClassifier(backbone, num_classes=2)
    classifier.output_dense.bias.assign(np.ones(2, "float32"))
    with pytest.raises(ExportError, match="use_bias=False"):
        convert.to_huggingface(classifier, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    convert.to_huggingface(GPTClassifier(backbone, num_classes=2, use_bias=False), str(tmp_path / "ok"))
    config = json.load(open(tmp_path / "ok" / "config.json"))
    assert config["architectures"] == ["OpenAIGPTForSequenceClassification"] and config["pad_token_id"] == 0


@pytest.mark.one_backend
def test_albert_classifier_reads_its_classifier_dropout_prob(tmp_path):
    """transformers' AlbertConfig names the head's dropout `classifier_dropout_prob` (the others
    `classifier_dropout`)."""
    config = configs()["albert"]
    config.classifier_dropout_prob = 0.37
    randomize_torch_module(transformers.AlbertForSequenceClassification(config)).save_pretrained(str(tmp_path))
    model, _ = convert.load(str(tmp_path))
    assert model.dropout == pytest.approx(0.37)
