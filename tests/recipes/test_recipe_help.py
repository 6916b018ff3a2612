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


def test_loss_plot_has_no_legend_entry_without_data(tmp_path, monkeypatch):
    """A loss column that was never logged (all "NA" / empty) gets no line and no legend entry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from recipes import common

    csv_path = tmp_path / "history.csv"
    csv_path.write_text("epoch,loss,mlm_loss,nsp_loss,val_loss\n0,2.0,1.5,0.5,NA\n1,1.5,1.2,0.3,\n")
    labels = []
    real_savefig = plt.Figure.savefig

    def savefig(fig, *args, **kwargs):
        for ax in fig.axes:
            legend = ax.get_legend()
            labels.extend(t.get_text() for t in legend.get_texts()) if legend else None
        return real_savefig(fig, *args, **kwargs)

    monkeypatch.setattr(plt.Figure, "savefig", savefig)
    assert common.plot_history(str(csv_path), str(tmp_path / "loss.png"), "t")
    assert labels == ["loss", "mlm_loss", "nsp_loss"]
