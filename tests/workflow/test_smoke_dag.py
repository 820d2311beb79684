"""The real pipeline end to end, in the fast suite (issue 12 item 6): the smoke preset's whole DAG
(fetch, filter, checkpoint, split, train every model including RealMLP and LightGBM, select,
aggregate, figures, HTML report) run by Snakemake in a temporary copy of the workflow, with the code
under test. The unit tests check each piece; this checks that they still fit together: the rules'
command lines match the CLI, the file contracts between steps hold, and the default target is
complete.

Run under umask 022 so that it also checks that every output is readable by others (issue 15:
atomic writes used to leave every file 0600).
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
from tabbench.presets import PRESETS

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


def _patience_reference(values, p: int) -> tuple[int, int]:
    """(returned epoch, stop epoch) of patience ``p`` on one validation curve (1-based), written
    out here as a training loop does it: an epoch improves when it is finite and strictly below
    the best so far (the folder's tie rule, first); stop once ``p`` epochs have not improved."""
    best, best_epoch, since = float("inf"), 0, 0
    for epoch, v in enumerate(values, start=1):
        if v == v and abs(v) != float("inf") and v < best:
            best, best_epoch, since = v, epoch, 0
        else:
            since += 1
        if since >= p:
            return best_epoch, epoch
    return best_epoch, len(values)


def test_the_stopping_rules_are_selected_claimed_and_drawn(smoke_run):
    from tabbench.metrics.registry import stopping_metric_ids
    from tabbench.stopping_rules import patiences_for

    ws, _ = smoke_run
    results = ws.root / "results"
    patiences = patiences_for(SMOKE["patience"], "mlp")
    assert patiences == (1, 2)
    stopped_early = 0
    for model in MODELS:
        for ds in DATASETS:
            sel = pd.read_parquet(results / "selected" / model / f"{ds}.parquet")
            runs = pd.read_parquet(results / "runs" / model / ds / "split0.parquet")
            default = runs[runs["config"] == 0].sort_values("epoch")
            for p in patiences:
                rows = sel[(sel["rule"] == "patience") & (sel["patience"] == p)
                           & (sel["regime"] == "default")]
                assert set(rows["stopping"]) == set(stopping_metric_ids()), (model, ds, p)
                for r in rows.itertuples():
                    # the default regime (one config): an independent recomputation from the
                    # runs file's validation curve
                    want = _patience_reference(default[f"val_{r.stopping}"].tolist(), p)
                    assert (r.epoch, r.stop_epoch) == want, (model, ds, p, r.stopping)
                    assert r.epochs_trained == r.stop_epoch
                    assert r.epochs_recorded == len(default)
                    stopped_early += r.stop_epoch < len(default)
            best = sel[sel["rule"] == "best"]
            assert best["patience"].isna().all() and len(best) > 0
            whole = best[best["regime"] == "default"]
            assert (whole["stop_epoch"] == whole["epochs_recorded"]).all()  # the whole run
    assert stopped_early > 0  # the smoke's patiences do stop some runs early
    claims = pd.read_parquet(results / "summary" / "claims.parquet")
    by_rule = claims[claims["figure"] == "Stopping rules"]
    assert {f"ts_ref_beats_logloss_patience{p}" for p in patiences} <= set(by_rule["claim"])
    assert "under patience 1" in (results / "summary" / "claims.md").read_text()
    rules = pd.read_parquet(results / "summary" / "rules.parquet")
    assert {"best", "patience 1", "patience 2"} <= set(rules["choice"])
    html = (results / "report.html").read_text()
    for stem in ("figR_compute_quality", "figR_regret_by_rule"):
        assert f"{stem}.png" in html, stem
