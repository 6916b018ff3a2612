"""keras_pretrain.training.history: `history.csv` trimmed to the epochs a resume keeps, and its loss plot."""

import os

import pytest

from keras_pretrain import training


@pytest.mark.one_backend
def test_trim_history_keeps_the_header_and_the_epochs_of_the_checkpoint(tmp_path):
    path = tmp_path / "history.csv"
    path.write_text("epoch,loss\n0,5.0\n1,4.0\n2,3.0\n")
    training.trim_history(str(tmp_path), 2)
    assert path.read_text() == "epoch,loss\n0,5.0\n1,4.0\n"
    training.trim_history(str(tmp_path), 5)  # fewer rows than that: unchanged
    assert path.read_text() == "epoch,loss\n0,5.0\n1,4.0\n"
    training.trim_history(str(tmp_path), 0)
    assert path.read_text() == "epoch,loss\n"
    assert sorted(os.listdir(tmp_path)) == ["history.csv"]


@pytest.mark.one_backend
def test_trim_history_leaves_a_link_out_of_the_run_folder_alone(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    other = tmp_path / "other.csv"
    other.write_text("epoch,loss\n0,5.0\n1,4.0\n")
    os.symlink(other, run / "history.csv")
    training.trim_history(str(run), 0)
    assert other.read_text() == "epoch,loss\n0,5.0\n1,4.0\n"
    assert os.path.islink(run / "history.csv")  # neither read nor replaced by a file
    assert sorted(os.listdir(run)) == ["history.csv"]


def test_loss_plot_has_no_legend_entry_without_data(tmp_path, monkeypatch):
    """A loss column that was never logged (all "NA" / empty) gets no line and no legend entry."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

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
    assert training.plot_history(str(csv_path), str(tmp_path / "loss.png"), "t")
    assert labels == ["loss", "mlm_loss", "nsp_loss"]
