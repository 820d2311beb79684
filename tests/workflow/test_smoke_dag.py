"""The real pipeline end to end, in the fast suite: the smoke preset's whole DAG
(fetch, filter, checkpoint, split, train every model including RealMLP and LightGBM, select,
aggregate, figures, HTML report) run by Snakemake in a temporary copy of the workflow, with the code
under test. The unit tests check each piece; this checks that they still fit together: the rules'
command lines match the CLI, the file contracts between steps hold, and the default target is
complete.

Run under umask 022 so that it also checks that every output is readable by others (an atomic
write through a temporary file of mode 0600 would leave the output unreadable to them).
"""

from __future__ import annotations

import os
import stat
import subprocess
import time

import pandas as pd
import pytest
from workspace import Workspace

from tabbench.models.recorder import check_records
from tabbench.plots import figure_files
from tabbench.settings.presets import PRESETS

SMOKE = PRESETS["smoke"]
MODELS = SMOKE["models"]
DATASETS = SMOKE["suite"]


def _epochs(model: str) -> dict[int, int]:
    """config -> epochs of a smoke train job (config 0 = default, 1 = the random one)."""
    from tabbench.models.registry import epochs_key

    return {c: SMOKE["epochs"][epochs_key(model, c)] for c in (0, 1)}


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    ws = Workspace(tmp_path_factory.mktemp("smoke") / "wf", demo=DATASETS)
    start = time.monotonic()
    res = subprocess.run(
        ws.command("--cores", "2", "--config", "preset=smoke"),
        cwd=ws.root,
        env=ws.env,
        capture_output=True,
        text=True,
        timeout=900,
        preexec_fn=lambda: os.umask(0o022),
    )
    elapsed = time.monotonic() - start
    print(f"smoke preset, whole DAG: {elapsed:.0f} s (load {os.getloadavg()[0]:.1f})")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    return ws, res.stdout + res.stderr


def test_every_model_records_every_epoch_of_every_config(smoke_run):
    ws, _ = smoke_run
    assert set(MODELS) == {"xgboost", "mlp", "realmlp", "lightgbm"}
    for model in MODELS:
        for ds in DATASETS:
            runs = ws.root / "results" / "runs" / model / ds / "split0.parquet"
            check_records(pd.read_parquet(runs), _epochs(model))
            selected = pd.read_parquet(ws.root / "results" / "selected" / model / f"{ds}.parquet")
            assert set(selected["dataset"]) == {ds} and len(selected) > 0


def test_summary_figures_report_and_data_files(smoke_run):
    ws, text = smoke_run
    results, data = ws.root / "results", ws.root / "data"
    summary = pd.read_parquet(results / "summary" / "summary.parquet")
    assert set(summary["model"]) == set(MODELS)
    assert all(p.is_file() for p in figure_files(results / "figures"))
    html = (results / "report.html").read_text()
    assert len(html) > 10_000
    # the claims table: in the summary, and embedded in the report (its own page, with caption)
    assert "Verdict rule" in (results / "summary" / "claims.md").read_text()
    assert "filename=claims.html;base64," in html
    assert (data / "kept.txt").read_text().split() == DATASETS
    # the data stage's summary line comes at the end, where it is seen
    assert "tabbench data: 2 datasets: 2 kept, 0 dropped by filtering, 0 unavailable" in text
    for ds in DATASETS:
        log = results / "logs" / "train" / "realmlp" / ds / "split0.log"
        assert "done: 2 configs recorded" in log.read_text()


def test_outputs_are_readable_by_others_under_umask_022(smoke_run):
    ws, _ = smoke_run
    private = [
        str(p.relative_to(ws.root))
        for folder in ("data", "results")
        for p in (ws.root / folder).rglob("*")
        if p.is_file() and stat.S_IMODE(p.stat().st_mode) & 0o044 != 0o044
    ]
    assert not private, private[:10]


def test_nothing_left_to_do_afterwards(smoke_run):
    ws, _ = smoke_run
    again = ws.snakemake("-n", "--cores", "2", "--config", "preset=smoke")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Nothing to be done" in again.stdout + again.stderr
