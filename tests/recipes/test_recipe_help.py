"""Every recipe: `--help` works, shows each option's default, and bad arguments exit with 2."""

import importlib

import pytest

RECIPES = ["pretrain", "finetune", "fill_mask", "generate", "distill", "create_pretraining_data",
           "albert_to_savedmodel"]


def parser_of(name):
    return importlib.import_module(f"recipes.{name}").build_parser()


@pytest.mark.parametrize("name", RECIPES)
def test_help_shows_defaults(name, capsys):
    parser = parser_of(name)
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.option_strings and action.default not in (None, False, "==SUPPRESS==") and action.help:
            shown = f"(default: {action.default})"
            assert shown in text, f"{name} {action.option_strings[0]}: {shown} missing from --help"
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--help"])
    assert info.value.code == 0
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--no-such-option"])
    assert info.value.code == 2
