"""The family registry: every family's classes, presets and converters resolve; the model -> family
lookup is exact; the recipe's checks refuse options a family does not use."""

import pytest

from keras_pretrain import families
from keras_pretrain.data import packing
from keras_pretrain.export import contracts
from keras_pretrain import pretraining
from keras_pretrain.errors import ConfigError

DIMS = dict(vocabulary_size=40, num_layers=1, num_heads=2, hidden_dim=16, intermediate_dim=32)


def test_every_family_resolves():
    assert families.names() == ("albert", "bert", "roberta", "distil_bert", "ernie", "gpt", "xlnet", "elmo")
    for family in families.FAMILIES.values():
        for cls in (family.backbone_class, family.pretrainer_class, family.classifier_class, family.tokenizer_class):
            assert isinstance(cls, type), (family.name, cls)
        assert family.presets, family.name
        for source in family.converters:
            assert callable(family.converter(source))
        assert family.contract in contracts.CONTRACTS.values()
        assert isinstance(family.packing, packing.Packing)
        assert family.objective in family.objectives
        assert family.masked_lm == (family.masking is not None)


def test_the_registry_agrees_with_the_data_pipeline():
    from keras_pretrain.data.instances import OBJECTIVES
    from keras_pretrain.data.masking import MASKINGS

    assert families.MASKED_LM_OBJECTIVES == OBJECTIVES
    assert families.MASKINGS == tuple(MASKINGS)


@pytest.mark.parametrize("name", ["albert", "bert", "roberta", "distil_bert", "ernie", "gpt"])
def test_family_of_a_model(name):
    family = families.get(name)
    config = dict(DIMS, **({"embedding_dim": 8} if name == "albert" else {}))
    backbone = family.backbone_class(**config)
    assert families.family_of(backbone) is family
    assert families.family_of(family.pretrainer_class(backbone)) is family


def test_family_of_refuses_other_models():
    import keras

    with pytest.raises(ConfigError, match="not the backbone of a known family"):
        families.family_of(keras.layers.Dense(2))
    with pytest.raises(ConfigError, match="unknown model family 'bart'"):
        families.get("bart")
    with pytest.raises(ConfigError, match="model_type 'bart' is not supported"):
        families.from_huggingface_type("bart")


@pytest.mark.parametrize("family, options, message", [
    ("bert", {"lexicon": "phrases.txt"}, "--lexicon: only knowledge masking reads a lexicon; bert masks with token"),
    ("gpt", {"masking": "token"}, "--masking: gpt does not mask tokens"),
    ("xlnet", {"dynamic": True}, "--dynamic: xlnet does not mask tokens"),
    ("elmo", {"lexicon": "phrases.txt"}, "--lexicon: elmo does not mask tokens"),
    ("xlnet", {"objective": "sop"}, "--objective sop: xlnet takes permutation_lm"),
    ("bert", {"objective": "causal_lm"}, "--objective causal_lm: bert takes nsp, sop"),
    ("elmo", {"vocab": "vocab.txt"}, "--vocab: elmo learns its word list"),
])
def test_options_a_family_does_not_use(family, options, message):
    problems = pretraining.check(family, pretraining.PretrainingSettings(**options))
    assert len(problems) == 1 and problems[0].startswith(message), problems
    with pytest.raises(ConfigError, match=message.split(":")[0]):
        pretraining.build_job(family, [], pretraining.PretrainingSettings(**options))


@pytest.mark.parametrize("family, options", [
    ("ernie", {"lexicon": "phrases.txt"}),
    ("bert", {"lexicon": "phrases.txt", "masking": "knowledge"}),
    ("roberta", {"objective": "full_sentences", "dynamic": True}),
    ("gpt", {"objective": "causal_lm"}),
])
def test_options_a_family_uses(family, options):
    assert pretraining.check(family, pretraining.PretrainingSettings(**options)) == []


def test_one_rule_for_the_model_length():
    assert pretraining.max_sequence_length("bert", 64) == 128
    assert pretraining.max_sequence_length("bert", 300) == 300
    assert pretraining.max_sequence_length("roberta", 64) == 130  # positions start past the padding id
    assert pretraining.max_sequence_length("bert", 256, preset="bert_tiny_en_uncased") == 512
    with pytest.raises(ConfigError, match="seq_length 600 exceeds the 512 positions of preset bert_tiny_en_uncased"):
        pretraining.max_sequence_length("bert", 600, preset="bert_tiny_en_uncased")
    with pytest.raises(ConfigError, match="seq_length 513 exceeds the 512 positions of the demo configuration"):
        pretraining.max_sequence_length("gpt", 513)


def test_each_family_folder_registers_its_own_family():
    """The registry is at the bottom: `families.py` names the built-in folders only; each folder's
    `<name>_family.py` registers the `Family` (with its contract, packing and text preprocessor)."""
    import importlib
    import inspect

    for name in families.BUILTIN:
        module = importlib.import_module(f"keras_pretrain.models.{name}.{name}_family")
        assert families.get(name) in vars(module).values(), name
    source = inspect.getsource(families)
    assert "Family(" not in source.split("FAMILIES = {}")[1]
    assert families.get("gpt").contract is contracts.GPT and families.get("elmo").contract is contracts.ELMO
    assert families.get("gpt").preprocessor_class.__module__ == "keras_pretrain.models.gpt.gpt_text"
    assert families.get("elmo").preprocessor_class.__module__ == "keras_pretrain.models.elmo.elmo_text"
