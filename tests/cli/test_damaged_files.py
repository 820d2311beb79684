"""A damaged runs, selected or summary file ends ``select``, ``aggregate`` and ``figures`` with
one line naming the file and how to rebuild it, not a pyarrow traceback.

Damage: fixtures/damaged.py; a corrupt page behind an intact footer is tested where the data
are read (selection), the other damage wherever a file is opened.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.damaged import FOOTER_DAMAGE, damage
from fixtures.synthetic import SyntheticDataset, write_synthetic_results

from tabbench.cli import main as cli_main
from tabbench.core.layout import ResultsLayout

MODEL = "xgboost"
DATASETS = (SyntheticDataset("kc1", 2_109, 2), SyntheticDataset("credit-g", 1_000, 2))
@pytest.fixture
def folder(tmp_path: Path, capsys, monkeypatch) -> ResultsLayout:
    """``results/`` with runs (1 split), selected files and a summary, in the working folder
    (as Snakemake runs the rules: relative paths, so the hints need no ``--config``)."""
    monkeypatch.chdir(tmp_path)
    layout = ResultsLayout("results")
    write_synthetic_results(layout.root, DATASETS, [MODEL], n_splits=1, n_configs=2,
                            epochs={MODEL: (5, 5)})
    for ds in DATASETS:
        assert cli_main(["select", "--runs", layout.runs(MODEL, ds.name, 0),
                         "--out", layout.selected(MODEL, ds.name)]) == 0
    assert cli_main(["aggregate", "--selected", *_selected(layout), "--out",
                     layout.summary_dir, "--runs-dir", layout.runs_dir]) == 0
    capsys.readouterr()
    return layout


def _selected(layout: ResultsLayout) -> list[str]:
    return [layout.selected(MODEL, ds.name) for ds in DATASETS]


def _one_line_error(capsys, command: str, path: str, rebuild: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"tabbench {command}: error: {path} cannot be read"), err
    assert err[0].endswith(f"rebuild it with `snakemake {rebuild}`"), err


@pytest.mark.parametrize("how", [*FOOTER_DAMAGE, "page"])
def test_select_names_a_damaged_runs_file(folder, capsys, how):
    runs = folder.runs(MODEL, "kc1", 0)
    damage(Path(runs), how)
    out = folder.selected(MODEL, "kc1")
    assert cli_main(["select", "--runs", runs, "--out", out]) == 1
    _one_line_error(capsys, "select", runs, f"{runs} --forcerun train")


@pytest.mark.parametrize("how", FOOTER_DAMAGE)
def test_aggregate_names_a_damaged_selected_file(folder, capsys, how):
    selected = folder.selected(MODEL, "credit-g")
    damage(Path(selected), how)
    assert cli_main(["aggregate", "--selected", *_selected(folder), "--out",
                     str(Path(folder.root) / "new_summary")]) == 1
    _one_line_error(capsys, "aggregate", selected, f"{selected} --forcerun select")


def test_aggregate_names_a_damaged_runs_file_behind_a_selection(folder, capsys):
    """Aggregation reads the provenance of every runs file behind the selected rows."""
    runs = folder.runs(MODEL, "kc1", 0)
    damage(Path(runs), "truncated")
    assert cli_main(["aggregate", "--selected", *_selected(folder), "--out",
                     str(Path(folder.root) / "new_summary"), "--runs-dir",
                     folder.runs_dir]) == 1
    _one_line_error(capsys, "aggregate", runs, f"{runs} --forcerun train")


@pytest.mark.parametrize("how", FOOTER_DAMAGE)
def test_figures_from_a_summary_names_a_damaged_table(folder, capsys, how, tmp_path):
    table = folder.summary("summary.parquet")
    damage(Path(table), how)
    assert cli_main(["figures", "--summary", folder.summary_dir, "--out",
                     str(tmp_path / "figures")]) == 1
    _one_line_error(capsys, "figures", table, "figures --forcerun regenerate")


def test_figures_from_a_folder_names_a_damaged_selected_file(folder, capsys, tmp_path):
    selected = folder.selected(MODEL, "kc1")  # newer than its runs: used as it is
    damage(Path(selected), "truncated")
    assert cli_main(["figures", "--results", folder.root, "--out", str(tmp_path / "out"),
                     "--jobs", "1"]) == 1
    _one_line_error(capsys, "figures", selected, f"{selected} --forcerun select")


def test_figures_from_a_folder_names_a_damaged_runs_file_from_a_worker(folder, capsys,
                                                                       tmp_path):
    """Without selected files the selections are recomputed in worker processes: the error
    comes back from one of them whole."""
    for selected in _selected(folder):
        Path(selected).unlink()
    runs = folder.runs(MODEL, "credit-g", 0)
    damage(Path(runs), "page")
    assert cli_main(["figures", "--results", folder.root, "--out", str(tmp_path / "out"),
                     "--jobs", "2"]) == 1
    _one_line_error(capsys, "figures", runs, f"{runs} --forcerun train")
