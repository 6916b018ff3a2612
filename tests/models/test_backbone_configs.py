"""Every family's backbone writes its config explicitly: the config rebuilds the same backbone, holds the
values it was built with, and its keys are exactly the constructor's arguments (an argument that
`get_config` leaves out, or a key no argument takes, fails here)."""

import inspect

import pytest

from keras_pretrain import families

# What every backbone config holds besides the named arguments (keras' own, taken through `**kwargs`).
BASE_KEYS = {"name", "trainable"}
# ERNIE also takes BERT's `num_task_types` and writes it as `use_task_id` / `task_type_vocab_size`.
WRITTEN_AS_OTHERS = {"ErnieBackbone": {"num_task_types"}}


def constructor_arguments(cls):
    """The named arguments of `cls.__init__`, and of its bases' while a constructor hands `*args` on."""
    names = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = inspect.signature(init).parameters.values()
        names |= {p.name for p in parameters
                  if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"}
        if not any(p.kind is p.VAR_POSITIONAL for p in parameters):
            break
    return names


@pytest.mark.parametrize("name", families.names())
def test_backbone_config_is_explicit_and_complete(name):
    cls = families.get(name).backbone_class
    arguments = constructor_arguments(cls)
    given = dict(families.get(name).demo_config)
    if "vocabulary_size" in arguments:
        given["vocabulary_size"] = 40
    backbone = cls(**given)
    config = backbone.get_config()
    assert cls.from_config(config).get_config() == config
    assert {key: config[key] for key in given} == given
    assert set(config) - BASE_KEYS == arguments - WRITTEN_AS_OTHERS.get(cls.__name__, set())


def test_the_check_sees_inherited_arguments():
    class Base:
        def __init__(self, width, depth=1, **kwargs):
            pass

    class Special(Base):
        def __init__(self, *args, depth=2, extra=None, **kwargs):
            super().__init__(*args, depth=depth, **kwargs)

    assert constructor_arguments(Base) == {"width", "depth"}
    assert constructor_arguments(Special) == {"width", "depth", "extra"}
