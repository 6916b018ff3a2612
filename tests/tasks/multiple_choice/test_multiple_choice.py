"""Multiple choice for every transformer family (issue 40, items 1 and 5): `MultipleChoice` equals transformers'
`*ForMultipleChoice` on the same weights (logits and loss), both ways through `convert`; it fits, saves and
takes any number of choices; the preprocessors pack `(context, ending)` pairs as `[B, C, T]`."""

import json

import keras
import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.errors import ExportError
from keras_pretrain.tasks import MultipleChoice
from keras_pretrain.tasks.multiple_choice import for_backbone
from tests.test_huggingface_conversion import STEM
from tests.test_huggingface_conversion import V
from tests.test_huggingface_conversion import configs
from tests.test_huggingface_conversion import check_exported_folder
from tests.test_huggingface_conversion import torch_inputs
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

B, C, T = 2, 3, 8
FAMILIES = ["bert", "albert", "ernie", "roberta", "distil_bert", "xlnet"]
LABELS = np.array([2, 0], "int32")
PAD_ID = {"roberta": 1}  # the others pad with 0


def choice_inputs(family, count=C, seed=0):
    """[B, count, T] inputs: real ids in [5, V), each choice its own tokens, padding (on the left for XLNet, whose
    summary reads the last position) in some choices, segment 1 on the second half."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, V, (B, 8, T)).astype("int32")[:, :count]  # the first choices whatever the count
    mask = np.ones((B, count, T), "int32")
    for c in range(count):
        pad = (c % 3) + 1  # 1..3 padded positions in row 1
        if family == "xlnet":
            mask[1, c, :pad] = 0
        else:
            mask[1, c, T - pad:] = 0
    ids = np.where(mask > 0, ids, PAD_ID.get(family, 0)).astype("int32")
    segments = np.broadcast_to((np.arange(T) >= T // 2).astype("int32"), ids.shape) * mask
    return {"token_ids": ids, "padding_mask": mask, "segment_ids": segments.astype("int32"),
            "task_type_ids": np.zeros_like(ids)}


def ours(model, data):
    """The inputs `model` takes."""
    return {name: data[name] for name in model.input}


def hf_choice_model(family, seed=0):
    model = getattr(transformers, STEM[family] + "ForMultipleChoice")(configs()[family])
    return randomize_torch_module(model, seed=seed).eval()


def reference(model, family, data, labels=None):
    """transformers' `(logits, loss)` (ERNIE's task-type ids are left out: `ErnieForMultipleChoice` does not
    fold them; zeros, as ours are here)."""
    x = torch_inputs(family, {k: v for k, v in data.items() if k != "task_type_ids"})
    if family in ("roberta", "distil_bert"):  # no segment input (ours takes none either)
        x.pop("token_type_ids", None)
    with torch.no_grad():
        out = model(**x, labels=None if labels is None else torch.tensor(labels, dtype=torch.long))
    return out.logits.numpy(), (None if labels is None else float(out.loss))


def softmax_cross_entropy(logits, labels):
    logits = np.asarray(logits, "float64")
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return float(-np.mean(log_probs[np.arange(len(labels)), labels]))


@pytest.mark.parametrize("family", FAMILIES)
def test_equals_transformers_both_ways(family, tmp_path):
    hf = hf_choice_model(family)
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    hf.save_pretrained(source)
    data = choice_inputs(family)

    model, _ = convert.load(source)  # `architectures`: *ForMultipleChoice -> MultipleChoice with its head
    assert isinstance(model, MultipleChoice) and families.family_of(model).name == family
    theirs, their_loss = reference(hf, family, data, LABELS)
    logits = to_numpy(model(ours(model, data)))
    assert logits.shape == (B, C)
    assert max_abs_diff(logits, theirs) <= TOLERANCE, ("import", max_abs_diff(logits, theirs))
    loss = float(to_numpy(model.loss(LABELS, logits)))  # the default compile's loss
    assert abs(loss - their_loss) <= TOLERANCE, ("loss", loss, their_loss)

    convert.to_huggingface(model, out)
    check_exported_folder(out, hf)
    back = getattr(transformers, type(hf).__name__).from_pretrained(out).eval()
    again, _ = reference(back, family, data)
    assert max_abs_diff(again, theirs) <= TOLERANCE, ("export", max_abs_diff(again, theirs))
    reloaded, _ = convert.load(out)
    assert isinstance(reloaded, MultipleChoice)
    for a, b in zip(model.weights, reloaded.weights):
        assert tuple(a.shape) == tuple(b.shape) and max_abs_diff(a, b) == 0, a.path


def test_ernie_folds_its_task_type_ids(tmp_path):
    """Task-type ids [B, C, T] are folded with the rest (transformers' `ErnieForMultipleChoice` passes them
    unfolded: compared here with its modules on the folded inputs)."""
    hf = hf_choice_model("ernie")
    hf.save_pretrained(str(tmp_path))
    model, _ = convert.load(str(tmp_path))
    data = choice_inputs("ernie")
    data["task_type_ids"] = np.random.default_rng(1).integers(0, 3, data["token_ids"].shape).astype("int32")
    flat = torch_inputs("ernie", {k: v.reshape(B * C, T) for k, v in data.items()})
    with torch.no_grad():
        theirs = hf.classifier(hf.ernie(**flat).pooler_output).view(B, C).numpy()
    logits = to_numpy(model(ours(model, data)))
    assert max_abs_diff(logits, theirs) <= TOLERANCE, max_abs_diff(logits, theirs)
    assert max_abs_diff(logits, to_numpy(model(ours(model, {**data, "task_type_ids": 0 * data["token_ids"]})))) > 1e-3


def tiny_backbone(name):
    family = families.get(name)
    config = dict(family.demo_config, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=64)
    if "embedding_dim" in config:
        config["embedding_dim"] = 8
    if name == "ernie":
        config["use_task_id"] = True
    if family.positions:
        config["max_sequence_length"] = 16
    return family.backbone_class(vocabulary_size=V, **config)


@pytest.mark.parametrize("family", ["bert", "roberta"])  # the plumbing is every family's; these two heads differ
def test_one_fit_step_lowers_the_loss(family):
    model = MultipleChoice(tiny_backbone(family))
    data = ours(model, choice_inputs(family))
    before = to_numpy(model(data))
    history = model.fit(data, LABELS, batch_size=B, epochs=1, verbose=0)  # the default compile
    assert sorted(history.history) == ["accuracy", "loss"]
    after = to_numpy(model(data))
    assert np.all(np.isfinite(after))
    assert softmax_cross_entropy(after, LABELS) < softmax_cross_entropy(before, LABELS)
    for weight in model.weights:
        assert np.all(np.isfinite(to_numpy(weight))), weight.path


@pytest.mark.parametrize("family", FAMILIES)
def test_saves_and_takes_any_number_of_choices(family, tmp_path):
    model = MultipleChoice(tiny_backbone(family))
    data = ours(model, choice_inputs(family))
    logits = to_numpy(model(data))
    path = str(tmp_path / "choice.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is MultipleChoice and restored.get_config() == model.get_config()
    assert max_abs_diff(restored(data), logits) <= 1e-5

    # Any number of choices; a choice's score does not depend on the others.
    five = to_numpy(model(ours(model, choice_inputs(family, count=5))))
    assert five.shape == (B, 5) and max_abs_diff(five[:, :C], logits) <= 1e-5


def test_a_fixed_number_of_choices_round_trips():
    model = MultipleChoice(tiny_backbone("bert"), num_choices=C, dropout=0.3)
    clone = MultipleChoice.from_config(model.get_config())
    assert clone.num_choices == C and clone.dropout == 0.3 and tuple(clone.input["token_ids"].shape) == (None, C, None)
    assert clone.count_params() == model.count_params() == model.backbone.count_params() + 16 + 1
    data = ours(model, choice_inputs("bert"))
    clone.set_weights(model.get_weights())
    assert max_abs_diff(clone(data), model(data)) <= 1e-6


def test_gpt_multiple_choice_is_its_double_heads_task():
    model = for_backbone(tiny_backbone("gpt"), lm_weight=0.25)
    assert type(model).__name__ == "GPTClassifier" and model.task == "multiple_choice" and model.lm_weight == 0.25
    data = ours(model, choice_inputs("gpt"))
    assert to_numpy(model(data)["logits"]).shape == (B, C)
    assert isinstance(for_backbone(tiny_backbone("bert")), MultipleChoice)


@pytest.mark.one_backend
def test_families_without_a_multiple_choice_task_say_so():
    family = families.get("elmo")
    backbone = family.backbone_class(**family.demo_config)
    with pytest.raises(ConfigError, match="multiple-choice"):
        for_backbone(backbone)
    with pytest.raises(ConfigError, match="token states"):
        MultipleChoice(backbone)
    with pytest.raises(ConfigError, match="num_choices"):
        MultipleChoice(tiny_backbone("bert"), num_choices=0)


@pytest.mark.one_backend
def test_roberta_reads_the_pooler_as_transformers(tmp_path, capsys):
    """`RobertaForMultipleChoice`'s pooler is the task's `pooler_dense` (the backbone is built without one); a
    backbone with its own pooler has no place in the folder; `task=False` loads the backbone, pooler and all."""
    hf = hf_choice_model("roberta")
    hf.save_pretrained(str(tmp_path / "hf"))
    model, _ = convert.load(str(tmp_path / "hf"))
    assert model.backbone.pooled_dense is None
    assert max_abs_diff(model.pooler_dense.kernel, hf.roberta.pooler.dense.weight.T) == 0
    backbone, _ = convert.load(str(tmp_path / "hf"), task=False)
    assert "RobertaForMultipleChoice" in capsys.readouterr().out
    assert max_abs_diff(backbone.pooled_dense.kernel, hf.roberta.pooler.dense.weight.T) == 0
    with pytest.raises(ExportError, match="use_pooler"):
        convert.to_huggingface(MultipleChoice(backbone), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


@pytest.mark.one_backend
def test_a_sequence_classifier_still_exports_as_one(tmp_path):
    """`MultipleChoice` is a `SequenceClassifier` subclass: the export tells them apart."""
    classifier = families.get("bert").classifier_class(tiny_backbone("bert"), num_classes=3)
    convert.to_huggingface(classifier, str(tmp_path / "cls"))
    convert.to_huggingface(MultipleChoice(classifier.backbone), str(tmp_path / "mc"))
    for name, architecture in (("cls", "BertForSequenceClassification"), ("mc", "BertForMultipleChoice")):
        assert json.load(open(tmp_path / name / "config.json"))["architectures"] == [architecture]


# --- preprocessing ----------------------------------------------------------------------------------------------

CONTEXTS = ["the cat sat", "on the mat"]
ENDINGS = [["on the mat", "the cat", "sat"], ["the", "cat sat on the mat the cat", "mat"]]


@pytest.mark.one_backend
@pytest.mark.parametrize("name", ["bert", "roberta", "xlnet"])
def test_encode_choices_packs_each_pair_as_encode(name, tmp_path):
    from tests.hub_modules.fixtures import build

    family = families.get(name)
    preprocessor = family.preprocessor_class(family, build(name, tmp_path)[1])
    x = preprocessor.encode_choices(CONTEXTS, ENDINGS, 10)
    assert set(x) == {"token_ids", "segment_ids", "padding_mask"}
    ids = preprocessor.special_ids()
    for b in range(2):
        for c in range(3):
            pair = preprocessor.encode([[CONTEXTS[b]], [ENDINGS[b][c]]], 10, (ids["cls"], ids["sep"]))
            for key, value in pair.items():
                assert x[key].shape == (2, 3, 10) and np.array_equal(x[key][b, c], value[0]), (key, b, c)
    with pytest.raises(ConfigError, match="same number"):
        preprocessor.encode_choices(CONTEXTS, [ENDINGS[0], ENDINGS[1][:2]], 10)


@pytest.mark.one_backend
def test_gpt_encode_choices_is_its_input_transformation(tmp_path):
    from keras_pretrain.models.gpt import transform_inputs
    from tests.hub_modules.fixtures import build

    family = families.get("gpt")
    tokenizer = build("gpt", tmp_path)[1]
    preprocessor = family.preprocessor_class(family, tokenizer)
    with pytest.raises(ConfigError, match="build_multiple_choice"):
        preprocessor.encode_choices(CONTEXTS, ENDINGS, 12)
    backbone = build("gpt", tmp_path)[0].backbone
    model = preprocessor.build_multiple_choice(backbone, seed=0)
    assert model.task == "multiple_choice" and model.backbone.vocabulary_size == backbone.vocabulary_size + 3
    x = preprocessor.encode_choices(CONTEXTS, ENDINGS, 12)
    special = [tokenizer.vocabulary[t] for t in family.packing.special_tokens]
    examples = [(tokenizer.tokenize(c), [tokenizer.tokenize(e) for e in row]) for c, row in zip(CONTEXTS, ENDINGS)]
    expected = transform_inputs("multiple_choice", examples, *special, 12)
    assert all(np.array_equal(x[k], expected[k]) for k in expected) and x["token_ids"].shape == (2, 3, 12)
    assert to_numpy(model(x)["logits"]).shape == (2, 3)


@pytest.mark.one_backend
def test_build_multiple_choice_gives_the_familys_task(tmp_path):
    from tests.hub_modules.fixtures import build

    family = families.get("bert")
    preprocessor = family.preprocessor_class(family, build("bert", tmp_path)[1])
    model = preprocessor.build_multiple_choice(tiny_backbone("bert"), seed=0)
    x = preprocessor.encode_choices(CONTEXTS, ENDINGS, 10)
    assert isinstance(model, MultipleChoice) and to_numpy(model(ours(model, x))).shape == (2, 3)
