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

import contextlib
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest
from fixtures.browser import browser_or_skip, title_box
from fixtures.plugin_dists import METRIC_GROUP, METRIC_ID, METRIC_LABEL, install_example_plugin
from workspace import Workspace, job_stats

from tabbench.models.recorder import check_records
from tabbench.models.runs_schema import val_column
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


def test_the_report_opens_on_the_study_title_in_a_browser(smoke_run, tmp_path):
    """The report opened as a reader opens it (headless Chromium, 1400×900): at scroll 0 the
    window shows the opening page's title, and the page's text column (with the claims table)
    takes most of the window's width rather than a narrow column beside the rule graph.
    Snakemake's own layout centres the long page vertically, its title out of reach above the
    window: workflow/report/report.css undoes that."""
    from tabbench.report.study_description import TITLE

    browser = browser_or_skip()
    ws, _ = smoke_run
    box = title_box(ws.root / "results" / "report.html", TITLE, tmp_path, (1400, 900), browser)
    assert box["found"], box
    assert 0 <= box["top"] and box["bottom"] <= box["height"] and box["shown"], box
    assert box["right"] - box["left"] >= 0.6 * box["width"], box


@contextlib.contextmanager
def _restored(ws: Workspace, tmp) -> Iterator[Workspace]:
    """Let a test change the shared smoke workspace in place and put it back afterwards (a copy
    elsewhere would not do: the fetch rule's params hold the absolute path of data/demo, so a
    moved project refetches); its environment too."""
    backup, env = tmp / "backup", dict(ws.env)
    shutil.copytree(ws.root, backup, symlinks=True)
    try:
        yield ws
    finally:
        shutil.rmtree(ws.root)
        shutil.move(backup, ws.root)
        ws.env = env


def test_restop_adds_a_plugin_metric_and_leaves_the_folder_up_to_date(smoke_run, tmp_path):
    """`snakemake restop` on the finished smoke study with a plugin metric installed: the
    metric's column in every runs file without a train job, its method in the selected files,
    the summary and the report, and the folder up to date: the study's own command then plans
    nothing (no select job for stale selected files, no redraw, no report)."""
    with _restored(smoke_run[0], tmp_path) as ws:
        _restop_and_check(ws, tmp_path)


def _restop_and_check(ws: Workspace, tmp_path) -> None:
    results = ws.root / "results"
    runs = sorted((results / "runs").glob("*/*/split*.parquet"))
    assert len(runs) == len(MODELS) * len(DATASETS)
    col = val_column(METRIC_ID)
    assert all(col not in pd.read_parquet(p).columns for p in runs)
    site = install_example_plugin(tmp_path / "site", [METRIC_GROUP])
    ws.env["PYTHONPATH"] = os.pathsep.join([str(site), ws.env["PYTHONPATH"]])
    dry = ws.snakemake("-n", "restop")
    assert dry.returncode == 0, dry.stderr
    assert job_stats(dry.stdout + dry.stderr) == {"restop": 1, "total": 1}
    report_before = (results / "report.html").stat().st_mtime
    res = ws.snakemake("--cores", "2", "restop", timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "rule train" not in res.stdout + res.stderr
    for path in runs:
        assert pd.read_parquet(path)[col].notna().all(), path
    log = (results / "logs" / "restop.log").read_text()
    assert f"tabbench restop: {len(runs)} runs files gained columns" in log
    assert f"{len(MODELS) * len(DATASETS)} selected files written again" in log
    for path in (results / "selected").glob("*/*.parquet"):
        assert METRIC_ID in set(pd.read_parquet(path)["stopping"]), path
    summary = pd.read_parquet(results / "summary" / "summary.parquet")
    assert f"{METRIC_LABEL}+TS" in set(summary["method"])
    assert (results / "report.html").stat().st_mtime > report_before
    after = ws.snakemake("-n", "--cores", "2", "--config", "preset=smoke")
    assert after.returncode == 0, after.stderr[-3000:]
    assert "Nothing to be done" in after.stdout + after.stderr, job_stats(
        after.stdout + after.stderr)


def _documented_outputs() -> list[str]:
    """The paths of docs/getting-started.md's "What a run produces" block (the ```text block
    after its marker), each with its {placeholders} and {a,b} alternatives as glob patterns."""
    import re

    from workspace import REPO

    page = (REPO / "docs" / "getting-started.md").read_text()
    block = re.search(r"<!-- run-outputs -->\s*```text\n(.*?)```", page, flags=re.S)
    assert block, "docs/getting-started.md: no ```text block after <!-- run-outputs -->"
    patterns = []
    for line in block.group(1).splitlines():
        if not line.strip() or line.startswith(" "):  # a description's continuation
            continue
        path = line.split()[0]
        alternatives = re.search(r"\{([^{}]*,[^{}]*)\}", path)
        options = alternatives.group(1).split(",") if alternatives else [None]
        for option in options:
            p = path if option is None else path.replace(alternatives.group(0), option)
            patterns.append(re.sub(r"\{[a-z_]+\}", "*", p))
    return patterns


def test_every_documented_output_is_written(smoke_run):
    """What the docs say every run writes, a smoke run wrote (the docs listed a file only
    OpenML runs write as written by every run)."""
    ws, _ = smoke_run
    patterns = _documented_outputs()
    assert len(patterns) > 20, patterns
    missing = [p for p in patterns if not list(ws.root.glob(p.rstrip("/")))]
    assert not missing, missing


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
    from tabbench.summary.stopping_rules import patiences_for

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


def _choice(runs: pd.DataFrame, column: str) -> pd.Series:
    """The (config, epoch) row a stopping metric picks from one split's records, written out
    as a loop would: per config its first epoch of least ``column``, then the config whose value
    is least (the lowest id on a tie)."""
    best = None
    for _, rows in sorted(runs.groupby("config"), key=lambda kv: kv[0]):
        rows = rows.sort_values("epoch")
        finite = rows[np.isfinite(rows[column])]
        if finite.empty:
            continue
        row = finite.loc[finite[column].idxmin()]
        if best is None or row[column] < best[column]:
            best = row
    return best


def test_the_validation_gain_is_what_the_runs_files_give(smoke_run):
    """summary/heterogeneity.parquet's val_gain equals a recomputation from the runs files:
    the validation TS-refinement at the (config, epoch) TS-Ref. chooses against that at the one
    logloss chooses, each averaged over the splits, then the ratio; test_gain the same with the
    test logloss after TS."""
    ws, _ = smoke_run
    results = ws.root / "results"
    table = pd.read_parquet(results / "summary" / "heterogeneity.parquet")
    fit = pd.read_parquet(results / "summary" / "heterogeneity_fit.parquet")
    assert set(fit["model"]) == {*MODELS, "all"} and (fit["n"] > 0).any()
    assert len(table) == len(MODELS) * len(DATASETS) * 2  # default and tuned
    for r in table.itertuples():
        sums = np.zeros(4)
        for path in sorted((results / "runs" / r.model / r.dataset).glob("split*.parquet")):
            runs = pd.read_parquet(path)
            runs = runs[(runs["config"] == 0) if r.regime == "default" else runs["config"] > 0]
            refined, plain = _choice(runs, "val_ts_ref"), _choice(runs, "val_logloss")
            sums += [refined["val_ts_ref"], plain["val_ts_ref"],
                     refined["test_logloss_ts"], plain["test_logloss_ts"]]
        want_val = 100 * (sums[0] / sums[1] - 1)
        want_test = float(np.clip(100 * (sums[2] / sums[3] - 1), -100, 100))  # as claims clip
        assert r.val_gain == pytest.approx(want_val, rel=1e-9, abs=1e-12), r
        assert r.test_gain == pytest.approx(want_test, rel=1e-9, abs=1e-12), r
        assert r.val_gain <= 0


def test_the_headline_without_the_low_signal_datasets_is_in_the_summary(smoke_run):
    """summary/low_signal.parquet and claims.md's section: each dataset's learnability
    recomputed from the data stage's class counts and the selected files (validation logloss at
    logloss's choice, mean over splits, over the entropy of the class shares; the lowest over
    models and regimes) decides which datasets the "not low-signal" rows leave out, at the
    threshold meta.json records; the "all large" rows are the claims table's."""
    import json

    ws, _ = smoke_run
    results, data = ws.root / "results", ws.root / "data"
    table = pd.read_parquet(results / "summary" / "low_signal.parquet")
    meta = json.loads((results / "summary" / "meta.json").read_text())
    threshold = meta["low_signal_learnability"]
    assert threshold == PRESETS["smoke"].get("low_signal_learnability", 0.9)
    lowest = {}
    for ds in DATASETS:
        counts = np.asarray(json.loads((data / "processed" / f"{ds}.json").read_text())
                            ["class_counts"], dtype=float)
        shares = counts / counts.sum()
        entropy = float(-(shares * np.log(shares)).sum())
        ratios = []
        for model in MODELS:
            sel = pd.read_parquet(results / "selected" / model / f"{ds}.parquet")
            sel = sel[(sel["stopping"] == "logloss") & (sel["rule"] == "best")]
            ratios += list(sel.groupby("regime")["val"].mean() / entropy)
        lowest[ds] = min(ratios)
    low = sorted(ds for ds, v in lowest.items() if v >= threshold)
    claims = pd.read_parquet(results / "summary" / "claims.parquet")
    headline = claims[claims["claim"] == "ts_ref_beats_logloss"]
    assert len(table) == 2 * len(headline) > 0
    for r in table.itertuples():
        assert r.n_unknown == 0 and r.threshold == threshold
        if r.datasets == "all large":
            row = headline[(headline["model"] == r.model) & (headline["regime"] == r.regime)]
            assert (r.n, r.verdict) == (row["n"].iloc[0], row["verdict"].iloc[0])
        else:
            assert r.low_signal == ", ".join(low) and r.n == len(DATASETS) - len(low), lowest
    text = (results / "summary" / "claims.md").read_text()
    assert "## The headline without the low-signal datasets" in text
    assert f"at least {threshold:g} of the prior's entropy" in text
