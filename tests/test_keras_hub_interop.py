"""keras-hub presets both ways (issue 39, item 4): ours -> a preset of keras-hub's own class with equal outputs and
tokenizer ids, and keras-hub's presets -> ours (`OurBackbone.from_preset(folder)`), for BERT, ALBERT, RoBERTa and
DistilBERT; refusals of folders that are not new, and of configurations keras-hub's classes cannot take."""

import json
import os

import keras
import keras_hub
import numpy as np
import pytest

from keras_pretrain.errors import ConfigError
from keras_pretrain.models import keras_hub_presets
from keras_pretrain.models.albert import AlbertBackbone
from keras_pretrain.models.albert import AlbertTokenizer
from keras_pretrain.models.bert import BertBackbone
from keras_pretrain.models.bert import BertTokenizer
from keras_pretrain.models.distil_bert import DistilBertBackbone
from keras_pretrain.models.distil_bert import DistilBertTokenizer
from keras_pretrain.models.roberta import RobertaBackbone
from keras_pretrain.models.roberta import RobertaTokenizer
from tests.models.albert.fixtures import train_sentencepiece
from tests.models.roberta.fixtures import write_bpe_files
from tests.testing import TOLERANCE
from tests.testing import max_abs_diff
from tests.testing import to_numpy

FAMILIES = ["bert", "albert", "roberta", "distil_bert"]
TINY = dict(num_layers=2, num_heads=4, hidden_dim=32, intermediate_dim=37, max_sequence_length=16)
WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", ".", "!",
             "un", "##known", "##word", "dog", "a"]
TEXT = "the cat sat on a mat. unknownword dog!"  # lower-case ASCII: see keras_hub_presets' docstring
BATCH, LENGTH, REAL = 2, 9, 6  # row 0 padded from REAL on


def wordpiece(ours_cls, hub_cls):
    def build(folder):
        return ours_cls(vocabulary=WORDPIECE, lowercase=True), hub_cls(vocabulary=WORDPIECE, lowercase=True)

    return build


def sentencepiece(folder):
    path = str(folder / "sp.model")
    train_sentencepiece(path)
    return AlbertTokenizer(proto=path), keras_hub.models.AlbertTokenizer(proto=path)


def byte_pair(folder):
    vocab, merges = write_bpe_files(folder)
    return RobertaTokenizer(vocabulary=vocab, merges=merges), keras_hub.models.RobertaTokenizer(vocab, merges)


ALBERT_SIZES = dict(embedding_dim=8, num_groups=2, num_inner_repetitions=2)  # E != H; 2 groups of 2 blocks


class Case:
    """One family: its tokenizers (ours, keras-hub's), both backbones at the same tiny sizes, its inputs."""

    def __init__(self, tokenizers, ours, hub, sizes=None, segments=True, pad_id=0, real_tokens_only=False,
                 hub_sizes=None):
        self.tokenizers, self.ours, self.hub = tokenizers, ours, hub
        self.segments, self.pad_id, self.real_tokens_only = segments, pad_id, real_tokens_only
        self.sizes = {**TINY, **(sizes or {})}
        self.hub_sizes = {**self.sizes, **(hub_sizes or {})}

    def our_backbone(self, vocabulary_size):
        return self.ours(vocabulary_size=vocabulary_size, **self.sizes)

    def hub_backbone(self, vocabulary_size):
        return self.hub(vocabulary_size=vocabulary_size, **self.hub_sizes)


CASES = {
    "bert": Case(wordpiece(BertTokenizer, keras_hub.models.BertTokenizer), BertBackbone,
                 keras_hub.models.BertBackbone),
    "albert": Case(sentencepiece, AlbertBackbone, keras_hub.models.AlbertBackbone, sizes=ALBERT_SIZES),
    # Our 16 positions = keras-hub's 14 past the padding_id offset of 2; keras-hub's positions are the index,
    # ours skip padding: equal at real tokens only (see keras_hub_presets).
    "roberta": Case(byte_pair, RobertaBackbone, keras_hub.models.RobertaBackbone, segments=False, pad_id=1,
                    real_tokens_only=True, hub_sizes={"max_sequence_length": 14}),
    "distil_bert": Case(wordpiece(DistilBertTokenizer, keras_hub.models.DistilBertTokenizer), DistilBertBackbone,
                        keras_hub.models.DistilBertBackbone, segments=False),
}


def randomize(model, seed):
    """Every variable random (LayerNorm scales and biases too, which start at 1 and 0)."""
    rng = np.random.default_rng(seed)
    for variable in model.weights:
        variable.assign(rng.normal(0.0, 0.2, variable.shape).astype("float32"))


def inputs(case, vocabulary_size):
    rng = np.random.default_rng(0)
    mask = np.ones((BATCH, LENGTH), "int32")
    mask[0, REAL:] = 0
    ids = np.where(mask > 0, rng.integers(5, vocabulary_size, (BATCH, LENGTH)), case.pad_id).astype("int32")
    x = {"token_ids": ids, "padding_mask": mask}
    if case.segments:
        x["segment_ids"] = (np.arange(LENGTH)[None] >= 3).astype("int32") * mask
    return x, mask.astype(bool)


def outputs(backbone, x, mask, case):
    """sequence_output at the compared positions (RoBERTa: real tokens only) and pooled_output where there is one."""
    out = backbone(x)
    out = out if isinstance(out, dict) else {"sequence_output": out}
    sequence = to_numpy(out["sequence_output"])
    found = {"sequence_output": sequence[mask] if case.real_tokens_only else sequence}
    if "pooled_output" in out:
        found["pooled_output"] = to_numpy(out["pooled_output"])
    return found


def assert_equal_outputs(actual, expected, what):
    assert sorted(actual) == sorted(expected), what
    for key in expected:
        diff = max_abs_diff(actual[key], expected[key])
        print(f"PARITY {keras.config.backend()} {what} {key} {diff:.3g}")
        assert diff <= TOLERANCE, f"{what} {key}: max abs diff {diff:.3g}"


def random_backbone(build, tokenizer, seed):
    """`(backbone, vocabulary_size)`: `build(vocabulary_size)` with every weight random."""
    vocabulary_size = tokenizer.vocabulary_size()
    backbone = build(vocabulary_size)
    randomize(backbone, seed=seed)
    return backbone, vocabulary_size


def case_and_tokenizers(family, tmp_path):
    """`(case, our_tokenizer, hub_tokenizer)` of `family` (the tokenizers' files written under `tmp_path`)."""
    case = CASES[family]
    return (case, *case.tokenizers(tmp_path))


def ids(tokenizer):
    return [int(i) for i in np.asarray(to_numpy(tokenizer(TEXT)))]


@pytest.mark.parametrize("family", FAMILIES)
def test_ours_to_keras_hub_preset(family, tmp_path):
    case, tokenizer, _ = case_and_tokenizers(family, tmp_path)
    ours, vocabulary_size = random_backbone(case.our_backbone, tokenizer, seed=1)
    folder = tmp_path / "preset"
    keras_hub_presets.to_keras_hub_preset(ours, folder, tokenizer=tokenizer)

    with open(folder / "config.json") as f:
        assert json.load(f)["registered_name"].startswith("keras_hub>")
    hub_cls = case.hub
    generic = keras_hub.models.Backbone.from_preset(str(folder))
    assert type(generic) is hub_cls  # keras-hub's own class, not ours
    hub = hub_cls.from_preset(str(folder))
    x, mask = inputs(case, vocabulary_size)
    expected = outputs(ours, x, mask, case)
    assert_equal_outputs(outputs(hub, x, mask, case), expected, f"{family} ours->keras-hub")
    assert_equal_outputs(outputs(generic, x, mask, case), expected, f"{family} ours->keras-hub (Backbone)")

    hub_tokenizer = keras_hub.tokenizers.Tokenizer.from_preset(str(folder))
    assert type(hub_tokenizer).__module__.startswith("keras_hub.")
    assert ids(hub_tokenizer) == ids(tokenizer)
    assert len(set(ids(tokenizer))) > 3  # the text is really tokenized


@pytest.mark.parametrize("family", FAMILIES)
def test_keras_hub_preset_to_ours(family, tmp_path):
    case, our_tokenizer, hub_tokenizer = case_and_tokenizers(family, tmp_path)
    hub, vocabulary_size = random_backbone(case.hub_backbone, hub_tokenizer, seed=2)
    folder = tmp_path / "hub_preset"
    hub.save_to_preset(str(folder))  # keras-hub's own saving
    hub_tokenizer.save_to_preset(str(folder))
    x, mask = inputs(case, vocabulary_size)
    expected = outputs(hub, x, mask, case)

    our_cls = case.ours
    fresh = outputs(our_cls.from_preset(str(folder), load_weights=False), x, mask, case)
    assert max_abs_diff(fresh["sequence_output"], expected["sequence_output"]) > 1e-2  # weights matter

    ours = our_cls.from_preset(str(folder))
    assert type(ours) is our_cls
    assert_equal_outputs(outputs(ours, x, mask, case), expected, f"{family} keras-hub->ours")
    backbone, tokenizer = keras_hub_presets.from_keras_hub_preset(folder)
    assert type(backbone) is our_cls and type(tokenizer) is type(our_tokenizer)
    assert_equal_outputs(outputs(backbone, x, mask, case), expected, f"{family} keras-hub->ours (function)")
    assert ids(tokenizer) == ids(hub_tokenizer)

    # Back again: keras-hub reads what we write from it, with the same outputs.
    keras_hub_presets.to_keras_hub_preset(ours, tmp_path / "again", tokenizer=tokenizer)
    again = keras_hub.models.Backbone.from_preset(str(tmp_path / "again"))
    assert_equal_outputs(outputs(again, x, mask, case), expected, f"{family} keras-hub->ours->keras-hub")


@pytest.mark.one_backend
def test_refuses_folders_that_are_not_new(tmp_path):
    backbone = CASES["bert"].our_backbone(len(WORDPIECE))
    used = tmp_path / "used"
    used.mkdir()
    (used / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="used.*not empty"):
        keras_hub_presets.to_keras_hub_preset(backbone, used)
    assert os.listdir(used) == ["notes.txt"]
    assert sorted(os.listdir(tmp_path)) == ["used"]  # no staging folder left behind

    link = tmp_path / "link"
    (tmp_path / "outside").mkdir()
    link.symlink_to(tmp_path / "outside")
    with pytest.raises(ConfigError, match="symlink"):
        keras_hub_presets.to_keras_hub_preset(backbone, link)
    assert os.listdir(tmp_path / "outside") == []

    empty = tmp_path / "empty"
    empty.mkdir()
    keras_hub_presets.to_keras_hub_preset(backbone, empty)  # an empty folder is fine
    assert {"config.json", "model.weights.h5"} <= set(os.listdir(empty))

    escape = tmp_path / "escape"
    escape.mkdir()
    for name in os.listdir(empty):
        os.symlink(empty / name, escape / name)  # a folder of links out of it is not read
    with pytest.raises(ConfigError, match="symlink out of"):
        keras_hub_presets.from_keras_hub_preset(escape)


@pytest.mark.one_backend
@pytest.mark.parametrize(
    "build, argument",
    [
        (lambda: BertBackbone(vocabulary_size=17, activation="gelu", **TINY), "activation"),
        (lambda: BertBackbone(vocabulary_size=17, layer_norm_epsilon=1e-6, **TINY), "layer_norm_epsilon"),
        (lambda: AlbertBackbone(vocabulary_size=17, num_groups=2, **dict(TINY, num_layers=3)), "num_groups"),
        (lambda: RobertaBackbone(vocabulary_size=17, use_pooler=True, **TINY), "use_pooler"),
        (lambda: DistilBertBackbone(vocabulary_size=17, activation="relu", **TINY), "activation"),
    ],
)
def test_refuses_what_keras_hub_cannot_represent(build, argument, tmp_path):
    with pytest.raises(ConfigError, match=argument):
        keras_hub_presets.to_keras_hub_preset(build(), tmp_path / "preset")
    assert not (tmp_path / "preset").exists()


@pytest.mark.one_backend
def test_from_preset_of_another_family_is_refused(tmp_path):
    hub = keras_hub.models.BertBackbone(vocabulary_size=17, **TINY)
    hub.save_to_preset(str(tmp_path / "bert"))
    with pytest.raises(ConfigError, match="BertBackbone"):
        AlbertBackbone.from_preset(str(tmp_path / "bert"))
