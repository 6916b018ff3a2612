"""Every recipe: `--help` works, shows each option's default, and bad arguments exit with 2."""

import importlib

import pytest

RECIPES = ["pretrain", "finetune", "fill_mask", "generate", "distill", "create_pretraining_data",
           "albert_to_savedmodel", "evaluate"]


def parser_of(name):
    return importlib.import_module(f"recipes.{name}").build_parser()


@pytest.mark.parametrize("name", RECIPES)
def test_help_shows_defaults(name, capsys):
    parser = parser_of(name)
    text = "".join(parser.format_help().split())  # no whitespace: argparse wraps long defaults anywhere
    for action in parser._actions:
        if action.option_strings and action.default not in (None, False, "==SUPPRESS==") and action.help:
            shown = f"(default: {action.default})"
            assert "".join(shown.split()) in text, f"{name} {action.option_strings[0]}: {shown} missing from --help"
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--help"])
    assert info.value.code == 0
    with pytest.raises(SystemExit) as info:
        parser.parse_args(["--no-such-option"])
    assert info.value.code == 2


@pytest.mark.parametrize("name", RECIPES)
def test_help_has_a_line_per_option_and_each_default_once(name):
    parser = parser_of(name)
    for action in parser._actions:
        if not action.option_strings:
            continue
        assert action.help, f"{name} {action.option_strings[0]}: no help line"
        shown = parser._get_formatter()._expand_help(action)
        assert shown.count("default") <= 1, f"{name} {action.option_strings[0]}: default shown twice: {shown!r}"
