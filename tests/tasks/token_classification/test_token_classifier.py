"""Token classification for every family (issue 42, item 1): `TokenClassifier` equals transformers'
`*ForTokenClassification` on the same weights (logits and loss, -100 labels ignored), both ways through
`convert`; it fits, saves, and reads GPT's and ELMo's token states too."""

import keras
import numpy as np
import pytest

from keras_pretrain import convert
from keras_pretrain import families
from keras_pretrain.errors import ConfigError
from keras_pretrain.tasks import TokenClassifier
from keras_pretrain.tasks.token_classification.head import TokenAccuracy
from keras_pretrain.tasks.token_classification.head import TokenLoss
from tests.test_huggingface_conversion import B
from tests.test_huggingface_conversion import T
from tests.test_huggingface_conversion import check_exported_folder
from tests.test_huggingface_conversion import configs
from tests.test_huggingface_conversion import inputs
from tests.test_huggingface_conversion import torch_inputs
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import to_numpy

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

FAMILIES = ["bert", "albert", "ernie", "roberta", "distil_bert", "xlnet"]
STEM = {"bert": "Bert", "albert": "Albert", "ernie": "Ernie", "roberta": "Roberta", "distil_bert": "DistilBert",
        "xlnet": "XLNet"}
NUM_LABELS = 5


def labels():
    """[B, T] tags with -100 on some tokens (sub-words, specials), as the aligned labels are."""
    rng = np.random.default_rng(3)
    y = rng.integers(0, NUM_LABELS, size=(B, T)).astype("int32")
    y[:, 0] = -100
    y[0, 2:4] = -100
    return y


def hf_token_model(family):
    from tests.test_huggingface_conversion import randomize_torch_module

    config = configs()[family]
    config.num_labels = NUM_LABELS
    return randomize_torch_module(getattr(transformers, STEM[family] + "ForTokenClassification")(config)).eval()


def reference(model, family, data, y=None):
    """transformers' `(logits [B, T, C], loss)`."""
    extra = {} if y is None else {"labels": torch.tensor(y, dtype=torch.long)}
    with torch.no_grad():
        out = model(**torch_inputs(family, data), **extra)
    return out.logits.numpy(), (None if y is None else float(out.loss))


@pytest.mark.parametrize("family", FAMILIES)
def test_equals_transformers_both_ways(family, tmp_path):
    hf = hf_token_model(family)
    source, out = str(tmp_path / "hf"), str(tmp_path / "ours")
    hf.save_pretrained(source)
    data = inputs(family)
    y = labels()

    model, _ = convert.load(source)  # `architectures`: *ForTokenClassification -> TokenClassifier, classifier
    assert isinstance(model, TokenClassifier) and families.family_of(model).name == family
    assert model.num_classes == NUM_LABELS
    logits, their_loss = reference(hf, family, data, y)
    ours = model({name: data[name] for name in model.input})
    assert tuple(ours.shape) == (B, T, NUM_LABELS)
    diff = max_abs_diff(ours, logits)
    print(f"parity {family} import: {diff:.2e}")
    assert diff <= TOLERANCE, ("import", diff)
    loss = float(to_numpy(TokenLoss()(y, ours)))
    assert abs(loss - their_loss) <= TOLERANCE, ("loss", loss, their_loss)

    convert.to_huggingface(model, out)
    check_exported_folder(out, hf)
    back = transformers.AutoModelForTokenClassification.from_pretrained(out).eval()
    assert type(back) is type(hf) and back.config.num_labels == NUM_LABELS
    again, _ = reference(back, family, data)
    diff = max_abs_diff(again, logits)
    print(f"parity {family} export: {diff:.2e}")
    assert diff <= TOLERANCE, ("export", diff)
    reloaded, _ = convert.load(out)
    assert isinstance(reloaded, TokenClassifier) and reloaded.dropout == model.dropout
    for a, b in zip(model.weights, reloaded.weights):
        if "pooler" in a.path or "pooled" in a.path:
            continue  # transformers' *ForTokenClassification has no pooler: not exported, initialised on import
        assert tuple(a.shape) == tuple(b.shape) and max_abs_diff(a, b) == 0, a.path


def test_the_head_dropout_is_transformers_choice(tmp_path):
    """BERT: `classifier_dropout`, else `hidden_dropout_prob`; DistilBERT `dropout`; XLNet none."""
    config = configs()["bert"]
    config.num_labels, config.classifier_dropout, config.hidden_dropout_prob = 3, 0.25, 0.0
    transformers.BertForTokenClassification(config).save_pretrained(str(tmp_path / "a"))
    assert convert.load(str(tmp_path / "a"))[0].dropout == 0.25
    config.classifier_dropout, config.hidden_dropout_prob = None, 0.05
    transformers.BertForTokenClassification(config).save_pretrained(str(tmp_path / "b"))
    assert convert.load(str(tmp_path / "b"))[0].dropout == 0.05
    config = configs()["xlnet"]
    config.num_labels = 3
    transformers.XLNetForTokenClassification(config).save_pretrained(str(tmp_path / "c"))
    assert convert.load(str(tmp_path / "c"))[0].dropout == 0.0


def tiny_backbone(name):
    family = families.get(name)
    if family.token_states.characters:  # ELMo
        return family.backbone_class(**family.demo_config)
    config = dict(family.demo_config, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=64)
    if "embedding_dim" in config:
        config["embedding_dim"] = 8
    if family.positions:
        config["max_sequence_length"] = 16
    from tests.test_huggingface_conversion import V

    return family.backbone_class(vocabulary_size=V, **config)


@pytest.mark.parametrize("family", ["bert", "gpt"])  # GPT: transformers has no token head; ours reads its states
def test_one_fit_step_lowers_the_loss(family):
    model = TokenClassifier(tiny_backbone(family), NUM_LABELS, dropout=0.0)
    data = {name: value for name, value in inputs(family).items() if name in model.input}
    data = {name: data.get(name, np.zeros((B, T), "int32")) for name in model.input}
    y = labels()
    before = float(to_numpy(TokenLoss()(y, model(data))))
    evaluated = model.evaluate(data, y, batch_size=B, verbose=0, return_dict=True)
    assert abs(evaluated["loss"] - before) <= 1e-5, (evaluated, before)
    assert 0.0 <= evaluated["token_accuracy"] <= 1.0
    model.fit({**data, "labels": y}, batch_size=B, epochs=3, verbose=0)  # a feature dict holding the labels
    after = float(to_numpy(TokenLoss()(y, model(data))))
    assert np.isfinite(after) and after < before, (before, after)


def test_elmo_tags_words_from_its_scalar_mix(tmp_path):
    model = TokenClassifier(tiny_backbone("elmo"), 3)
    assert sorted(model.input) == ["char_ids"] and model.get_config()["trainable_backbone"] is False
    char_ids = np.zeros((2, 4, model.backbone.max_characters), "int32")
    char_ids[:, :3, :5] = 7
    logits = model({"char_ids": char_ids})
    assert tuple(logits.shape) == (2, 4, 3)
    path = str(tmp_path / "elmo_tagger.keras")
    model.save(path)
    again = keras.models.load_model(path)({"char_ids": char_ids})
    assert max_abs_diff(again, logits) <= 1e-5


@pytest.mark.parametrize("family", ["ernie", "roberta"])
def test_saves_and_loads(family, tmp_path):
    model = TokenClassifier(tiny_backbone(family), NUM_LABELS, dropout=0.2)
    data = {name: inputs(family)[name] for name in model.input}
    logits = model(data)
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    assert type(restored) is TokenClassifier and restored.get_config() == model.get_config()
    assert max_abs_diff(restored(data), logits) <= 1e-5
    assert model.count_params() == model.backbone.count_params() + 16 * NUM_LABELS + NUM_LABELS


@pytest.mark.one_backend
def test_loss_and_accuracy_skip_the_ignored_tokens():
    """TokenLoss / TokenAccuracy on hand-computed values: -100 (and labels out of the classes) count nowhere."""
    logits = np.log(np.array([[[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]], "float32"))
    y = np.array([[0, -100, 1]], "int32")
    expected = -(np.log(0.7) + np.log(0.2)) / 2
    assert abs(float(to_numpy(TokenLoss()(y, logits))) - expected) <= 1e-6
    metric = TokenAccuracy()
    metric.update_state(y, logits)
    assert float(to_numpy(metric.result())) == 0.5
    with pytest.raises(ConfigError, match="num_classes"):
        TokenClassifier(tiny_backbone("bert"), 0)
    with pytest.raises(ConfigError, match="dropout"):
        TokenClassifier(tiny_backbone("bert"), 3, dropout=1.0)
