"""Span question answering for the encoder families (issue 41): `SpanQuestionAnswering` equals transformers'
`*ForQuestionAnswering` on the same weights (start / end logits and loss), both ways through `convert`; it fits
and saves."""

import keras
import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks import SpanQuestionAnswering
from keras_pretrain.tasks.question_answering.span_head import SpanLoss
from keras_pretrain.tasks.question_answering.span_head import for_backbone
from tests.test_huggingface_conversion import B
from tests.test_huggingface_conversion import T
from tests.test_huggingface_conversion import V
from tests.test_huggingface_conversion import check_exported_folder
from tests.test_huggingface_conversion import exported_state
from tests.test_huggingface_conversion import hf_model
from tests.test_huggingface_conversion import inputs
from tests.test_huggingface_conversion import torch_inputs
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

FAMILIES = ["bert", "albert", "ernie", "roberta", "distil_bert"]
START, END = np.array([1, 3], "int32"), np.array([4, 5], "int32")


def ours(model, data):
    return {name: data[name] for name in model.input}


def reference(model, family, data, start=None, end=None):
    """transformers' `(start_logits, end_logits, loss)`."""
    labels = {} if start is None else {"start_positions": torch.tensor(start, dtype=torch.long),
                                       "end_positions": torch.tensor(end, dtype=torch.long)}
    with torch.no_grad():
        out = model(**torch_inputs(family, data), **labels)
    return out.start_logits.numpy(), out.end_logits.numpy(), (None if start is None else float(out.loss))


def span_loss(start, end, outputs):
    """Our task's loss: the mean of the start and end `SpanLoss` (the default compile's, weights 0.5 each)."""
    return 0.5 * float(to_numpy(SpanLoss()(start, outputs["start_logits"]))) + \
        0.5 * float(to_numpy(SpanLoss()(end, outputs["end_logits"])))


@pytest.mark.parametrize("family", FAMILIES)
def test_equals_transformers_both_ways(family, tmp_path):
    hf = hf_model(family, "ForQuestionAnswering")
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    hf.save_pretrained(source)
    data = inputs(family)

    model, _ = convert.load(source)  # `architectures`: *ForQuestionAnswering -> SpanQuestionAnswering, qa_outputs
    assert isinstance(model, SpanQuestionAnswering) and families.family_of(model).name == family
    start, end, their_loss = reference(hf, family, data, START, END)
    outputs = model(ours(model, data))
    assert sorted(outputs) == ["end_logits", "start_logits"] and tuple(outputs["start_logits"].shape) == (B, T)
    diff = max(max_abs_diff(outputs["start_logits"], start), max_abs_diff(outputs["end_logits"], end))
    print(f"parity {family} import: {diff:.2e}")
    assert diff <= TOLERANCE, ("import", diff)
    loss = span_loss(START, END, outputs)
    assert abs(loss - their_loss) <= TOLERANCE, ("loss", loss, their_loss)
    # A label out of the sequence is clamped to T and ignored, as transformers' loss does.
    far = np.array([1, 99], "int32")
    _, _, their_far = reference(hf, family, data, far, END)
    assert abs(span_loss(far, END, outputs) - their_far) <= TOLERANCE

    convert.to_huggingface(model, out)
    check_exported_folder(out, hf)
    back = transformers.AutoModelForQuestionAnswering.from_pretrained(out).eval()
    assert type(back) is type(hf)
    again_start, again_end, _ = reference(back, family, data)
    diff = max(max_abs_diff(again_start, start), max_abs_diff(again_end, end))
    print(f"parity {family} export: {diff:.2e}")
    assert diff <= TOLERANCE, ("export", diff)
    reloaded, _ = convert.load(out)
    assert isinstance(reloaded, SpanQuestionAnswering) and reloaded.dropout == model.dropout
    for a, b in zip(model.weights, reloaded.weights):
        if "pooler" in a.path or "pooled" in a.path:
            continue  # transformers' *ForQuestionAnswering has no pooler: not exported, initialised on import
        assert tuple(a.shape) == tuple(b.shape) and max_abs_diff(a, b) == 0, a.path


def tiny_backbone(name):
    family = families.get(name)
    config = dict(family.demo_config, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=64)
    if "embedding_dim" in config:
        config["embedding_dim"] = 8
    if family.positions:
        config["max_sequence_length"] = 16
    return family.backbone_class(vocabulary_size=V, **config)


@pytest.mark.parametrize("family", ["bert", "distil_bert"])  # without and with the head's dropout
def test_one_fit_step_lowers_the_loss(family):
    model = for_backbone(tiny_backbone(family))
    assert model.dropout == (0.1 if family == "distil_bert" else 0.0)
    data = ours(model, inputs(family))
    before = span_loss(START, END, model(data))
    # transformers' label names; the default compile's loss is theirs: the mean of start and end.
    evaluated = model.evaluate(data, {"start_positions": START, "end_positions": END}, batch_size=B, verbose=0,
                               return_dict=True)
    assert abs(evaluated["loss"] - before) <= 1e-5, (evaluated, before)
    history = model.fit({**data, "start_positions": START, "end_positions": END}, batch_size=B, epochs=1,
                        verbose=0)  # a feature dict holding the labels
    assert "loss" in history.history
    after = span_loss(START, END, model(data))
    assert np.isfinite(after) and after < before, (before, after)
    for labels in ((START, END), {"start_logits": START, "end_logits": END}):  # a pair, the outputs' names
        _, y, _ = keras.utils.unpack_x_y_sample_weight(model.preprocess_samples(data, labels))
        assert sorted(y) == ["end_logits", "start_logits"] and y["start_logits"] is START and y["end_logits"] is END
    for weight in model.weights:
        assert np.all(np.isfinite(to_numpy(weight))), weight.path


@pytest.mark.parametrize("family", ["ernie", "roberta"])
def test_saves_and_loads(family, tmp_path):
    model = SpanQuestionAnswering(tiny_backbone(family), dropout=0.2)
    data = ours(model, inputs(family))
    outputs = model(data)
    path = str(tmp_path / "qa.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is SpanQuestionAnswering and restored.get_config() == model.get_config()
    assert restored.dropout == 0.2
    again = restored(data)
    for key in ("start_logits", "end_logits"):
        assert max_abs_diff(again[key], outputs[key]) <= 1e-5, key
    assert model.count_params() == model.backbone.count_params() + 16 * 2 + 2


@pytest.mark.one_backend
def test_what_has_no_span_task_says_so():
    family = families.get("elmo")
    with pytest.raises(ConfigError, match="token states"):
        SpanQuestionAnswering(family.backbone_class(**family.demo_config))
    with pytest.raises(ConfigError, match="dropout"):
        SpanQuestionAnswering(tiny_backbone("bert"), dropout=1.5)


@pytest.mark.one_backend
def test_a_roberta_backbone_with_a_pooler_exports_without_it(tmp_path):
    """`RobertaForQuestionAnswering` has no pooler: a task on a backbone with one (unread) exports without it."""
    backbone = families.get("roberta").backbone_class(
        vocabulary_size=V, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=16,
        use_pooler=True)
    model = SpanQuestionAnswering(backbone)
    convert.to_huggingface(model, str(tmp_path))
    assert not any("pooler" in name for name in exported_state(str(tmp_path)))
    back = transformers.RobertaForQuestionAnswering.from_pretrained(str(tmp_path)).eval()
    data = inputs("roberta")
    start, end, _ = reference(back, "roberta", data)
    outputs = model(ours(model, data))
    assert max(max_abs_diff(outputs["start_logits"], start), max_abs_diff(outputs["end_logits"], end)) <= TOLERANCE
