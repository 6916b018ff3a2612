"""XLNet's SQuAD 2.0 head (issue 41): `BeamQuestionAnswering` equals transformers' `XLNetForQuestionAnswering`
on the same weights (the beam, the answer class, the loss), both ways through `convert`; XLNet's span head
`XLNetForQuestionAnsweringSimple` is `SpanQuestionAnswering`; the head fits, saves and checks its arguments."""

import keras
import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks import BeamQuestionAnswering
from keras_pretrain.tasks import SpanQuestionAnswering
from keras_pretrain.tasks.question_answering.beam_head import AnswerClassLoss
from keras_pretrain.tasks.question_answering.span_head import SpanLoss
from tests.tasks.question_answering.test_span_head import tiny_backbone
from tests.test_huggingface_conversion import B
from tests.test_huggingface_conversion import T
from tests.test_huggingface_conversion import check_exported_folder
from tests.test_huggingface_conversion import configs
from tests.test_huggingface_conversion import inputs
from tests.test_huggingface_conversion import torch_inputs
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import randomize_torch_module
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

K, E = 3, 2  # start_n_top, end_n_top
START, END = np.array([1, 3], "int32"), np.array([4, 5], "int32")
IMPOSSIBLE = np.array([0.0, 1.0], "float32")


def qa_inputs():
    data = inputs("xlnet")
    p_mask = np.zeros((B, T), "float32")
    p_mask[:, -3:] = 1.0  # the question, separators and class token of XLNet's layout: P <sep> Q <sep> <cls>
    p_mask[1, 0] = 1.0
    return {**data, "p_mask": p_mask, "cls_index": np.array([T - 1, T - 2], "int32")}


def hf_beam_model(seed=0):
    config = configs()["xlnet"]
    config.start_n_top, config.end_n_top = K, E
    return randomize_torch_module(transformers.XLNetForQuestionAnswering(config), seed=seed).eval()


def reference(model, data, **labels):
    extra = {"p_mask": torch.tensor(data["p_mask"]), "cls_index": torch.tensor(data["cls_index"], dtype=torch.long)}
    labels = {k: torch.tensor(v) for k, v in labels.items()}
    with torch.no_grad():
        return model(**torch_inputs("xlnet", data), **extra, **labels)


def compare_beam(ours, theirs, what):
    """Ours are the authors' log-probabilities, start-major; transformers' the probabilities, end-major."""
    assert np.array_equal(to_numpy(ours["start_top_index"]), theirs.start_top_index.numpy()), what
    their_end_index = theirs.end_top_index.numpy().reshape(B, E, K).transpose(0, 2, 1).reshape(B, K * E)
    their_end = theirs.end_top_log_probs.numpy().reshape(B, E, K).transpose(0, 2, 1).reshape(B, K * E)
    assert np.array_equal(to_numpy(ours["end_top_index"]), their_end_index), what
    diff = max(max_abs_diff(np.exp(to_numpy(ours["start_top_log_probs"])), theirs.start_top_log_probs.numpy()),
               max_abs_diff(np.exp(to_numpy(ours["end_top_log_probs"])), their_end),
               max_abs_diff(ours["cls_logits"], theirs.cls_logits.numpy()))
    print(f"parity xlnet beam {what}: {diff:.2e}")
    assert diff <= TOLERANCE, (what, diff)


def test_equals_transformers_both_ways(tmp_path):
    hf = hf_beam_model()
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    hf.save_pretrained(source)
    data = qa_inputs()

    model, _ = convert.load(source)
    assert isinstance(model, BeamQuestionAnswering) and (model.start_n_top, model.end_n_top) == (K, E)
    outputs = model(data)
    assert sorted(outputs) == sorted(["start_top_log_probs", "start_top_index", "end_top_log_probs",
                                      "end_top_index", "cls_logits"])
    assert tuple(outputs["end_top_index"].shape) == (B, K * E) and tuple(outputs["cls_logits"].shape) == (B,)
    theirs = reference(hf, data)
    compare_beam(outputs, theirs, "import")
    # No masked position is ever chosen.
    chosen = np.concatenate([to_numpy(outputs["start_top_index"]), to_numpy(outputs["end_top_index"])], axis=1)
    assert not np.take_along_axis(data["p_mask"], chosen, axis=1).any()

    # Training: transformers' loss without the answer class is the mean of the start and end losses on the
    # end logits that read the true start; our answer class reads the expected start (the authors' code) in
    # training too, which is transformers' inference value.
    trained = model({**data, "start_positions": START})
    assert sorted(trained) == ["cls_logits", "end_logits", "start_logits"]
    loss = 0.5 * float(to_numpy(SpanLoss()(START, trained["start_logits"]))) + \
        0.5 * float(to_numpy(SpanLoss()(END, trained["end_logits"])))
    their_loss = float(reference(hf, data, start_positions=START.astype("int64"),
                                 end_positions=END.astype("int64")).loss)
    assert abs(loss - their_loss) <= TOLERANCE, (loss, their_loss)
    assert max_abs_diff(trained["cls_logits"], theirs.cls_logits.numpy()) <= TOLERANCE
    # The answer-class loss is the authors' sigmoid cross-entropy.
    logits = to_numpy(trained["cls_logits"]).astype("float64")
    expected = np.mean(np.log1p(np.exp(-logits)) + (1 - IMPOSSIBLE) * logits)
    assert abs(float(to_numpy(AnswerClassLoss()(IMPOSSIBLE, trained["cls_logits"]))) - expected) <= 1e-5

    convert.to_huggingface(model, out)
    check_exported_folder(out, hf)
    # (transformers' Auto class maps XLNet to the `*Simple` head: the folder names the full one.)
    back = transformers.XLNetForQuestionAnswering.from_pretrained(out).eval()
    assert back.start_n_top == K
    compare_beam(outputs, reference(back, data), "export")
    reloaded, _ = convert.load(out)
    for a, b in zip(model.weights, reloaded.weights):
        assert tuple(a.shape) == tuple(b.shape) and max_abs_diff(a, b) == 0, a.path


def test_the_class_token_defaults_to_the_last_position(tmp_path):
    """transformers without `cls_index` reads the last token; so do we for XLNet (ALBERT's is the first)."""
    hf = hf_beam_model(seed=1)
    hf.save_pretrained(str(tmp_path))
    data = qa_inputs()
    data["cls_index"] = np.array([T - 1, T - 1], "int32")
    theirs = reference(hf, data)
    model, _ = convert.load(str(tmp_path))
    assert model.cls_position == -1
    compare_beam(model({k: v for k, v in data.items() if k != "cls_index"}), theirs, "default cls")
    assert BeamQuestionAnswering(tiny_backbone("albert")).cls_position == 0


def test_span_head_is_xlnet_for_question_answering_simple(tmp_path):
    hf = randomize_torch_module(transformers.XLNetForQuestionAnsweringSimple(configs()["xlnet"])).eval()
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    hf.save_pretrained(source)
    data = inputs("xlnet")
    model, _ = convert.load(source)
    assert isinstance(model, SpanQuestionAnswering)
    with torch.no_grad():
        theirs = hf(**torch_inputs("xlnet", data))
    outputs = model(data)
    diff = max(max_abs_diff(outputs["start_logits"], theirs.start_logits.numpy()),
               max_abs_diff(outputs["end_logits"], theirs.end_logits.numpy()))
    print(f"parity xlnet span: {diff:.2e}")
    assert diff <= TOLERANCE
    convert.to_huggingface(model, out)
    check_exported_folder(out, hf)
    back = transformers.AutoModelForQuestionAnswering.from_pretrained(out)
    assert type(back) is transformers.XLNetForQuestionAnsweringSimple


@pytest.mark.parametrize("family", ["xlnet", "albert"])
def test_fits_and_saves(family, tmp_path):
    model = BeamQuestionAnswering(tiny_backbone(family), start_n_top=2, end_n_top=2, dropout=0.0)
    data = {k: v for k, v in qa_inputs().items() if k in ("token_ids", "segment_ids", "padding_mask", "p_mask")}
    if family == "albert":
        data["p_mask"] = data["p_mask"][:, ::-1].copy()  # ALBERT's class token comes first
    start, end = np.array([3, 4], "int32"), np.array([4, 5], "int32")  # unmasked in both layouts
    labels = {"start_positions": start, "end_positions": end, "is_impossible": IMPOSSIBLE}

    def loss():
        return model.evaluate(data, labels, batch_size=B, verbose=0, return_dict=True)["loss"]

    before = loss()
    trained = model({**data, "start_positions": start})
    expected = 0.5 * (float(to_numpy(SpanLoss()(start, trained["start_logits"]))) +
                      float(to_numpy(SpanLoss()(end, trained["end_logits"]))) +
                      float(to_numpy(AnswerClassLoss()(IMPOSSIBLE, trained["cls_logits"]))))
    assert abs(before - expected) <= 1e-5, (before, expected)
    model.fit({**data, **labels}, batch_size=B, epochs=3, verbose=0)  # a feature dict holding the labels
    after = loss()
    assert np.isfinite(after) and after < before, (before, after)
    outputs = model.predict(data, batch_size=B, verbose=0)
    assert outputs["end_top_index"].shape == (B, 4)

    path = str(tmp_path / "beam.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is BeamQuestionAnswering and restored.get_config() == model.get_config()
    again = restored(data)
    for key, value in model(data).items():
        assert max_abs_diff(again[key], value) <= 1e-5, key


@pytest.mark.one_backend
def test_bad_arguments_say_so():
    backbone = tiny_backbone("xlnet")
    for bad in ({"start_n_top": 0}, {"end_n_top": 1.5}, {"dropout": 1.0}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            BeamQuestionAnswering(backbone, **bad)
