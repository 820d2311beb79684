"""The real pipeline end to end, in the fast suite: the smoke preset's whole DAG
(fetch, filter, checkpoint, split, train every model including RealMLP and LightGBM, select,
aggregate, figures, HTML report) run by Snakemake in a temporary copy of the workflow, with the code
under test. The unit tests check each piece; this checks that they still fit together: the rules'
command lines match the CLI, the file contracts between steps hold, and the default target is
complete. Afterwards the same finished study is drawn from (the last section): figures and
reports plan no data or training job, and a rerun, a redraw or a damaged input touches only
what it should.

Run under umask 022 so that it also checks that every output is readable by others (an atomic
write through a temporary file of mode 0600 would leave the output unreadable to them).
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from fixtures.browser import browser_or_skip, title_box
from fixtures.damaged import damage
from fixtures.plugin_dists import METRIC_GROUP, METRIC_ID, METRIC_LABEL, install_example_plugin
from workspace import (
    DATA_JOBS,
    Workspace,
    assert_no_data_or_training,
    job_stats,
    mtimes,
    output_of,
    planned_jobs,
    restored,
)

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


def test_restop_adds_a_plugin_metric_and_leaves_the_folder_up_to_date(smoke_run, tmp_path):
    """`snakemake restop` on the finished smoke study with a plugin metric installed: the
    metric's column in every runs file without a train job, its method in the selected files,
    the summary and the report, and the folder up to date: the study's own command then plans
    nothing (no select job for stale selected files, no redraw, no report)."""
    with restored(smoke_run[0], tmp_path) as ws:
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


# --- figures and reports from the finished folder ------------------------------------------
# Afterwards, with no --config repeated: `snakemake figures -n` and `snakemake report -n` plan
# no train, fetch, filter or split job (before results/run_config.yaml they planned the paper
# preset's whole study), not even when the data is newer than the runs, which makes a study run
# retrain; `tabbench figures --results` gives the same summary numbers as `snakemake figures`
# (it used the paper's 10K "large" threshold on any folder); a --config that disagrees with the
# folder's settings is refused naming the keys, and nothing runs; a single-dataset rerun
# rebuilds that dataset's runs and selection and nothing else, and its last line says that the
# drawings are now stale and how to redraw them; with `figures` beside it, one command retrains
# the pair and redraws the summary, claims, figures and report; a damaged input (truncated, or a
# corrupt page that only the job notices) ends `figures` in one line and deletes nothing drawn
# or selected before. (After a SIGINT and a resume: test_figures_from_cache.py.)


@pytest.fixture(scope="module")
def smoke(smoke_run) -> Workspace:
    """The finished smoke study's workspace (the module's one run of the whole DAG)."""
    ws, _ = smoke_run
    assert (ws.root / "results" / "run_config.yaml").is_file()
    return ws


def test_figures_and_report_plan_no_data_or_training_job(smoke):
    assert_no_data_or_training(smoke)
    res = smoke.snakemake("--cores", "1", "-n", "figures")
    # the folder's settings, and config.yaml's differing preset named as not used
    assert "using results/run_config.yaml" in output_of(res)
    assert "config.yaml's preset='paper' not used" in output_of(res)
    assert "Nothing to be done" in output_of(res), output_of(res)[-3000:]
    # an up-to-date folder: the line before Snakemake's "Nothing to be done" says how to redraw
    # anyway, and that way redraws (the regenerate job, nothing upstream)
    assert "--forcerun regenerate" in output_of(res), output_of(res)[-3000:]
    forced = planned_jobs(smoke, "figures", "--forcerun", "regenerate")
    assert forced.get("regenerate") == 1 and not set(forced) & set(DATA_JOBS), forced


def _data_changed(ws: Workspace) -> None:
    """Newer data under a finished study: the study would retrain every model on it."""
    processed = ws.root / "data" / "processed" / "kc1.parquet"
    pd.read_parquet(processed).iloc[:-1].to_parquet(processed)
    models = yaml.safe_load((ws.root / "results" / "run_config.yaml").read_text())["models"]
    assert planned_jobs(ws).get("train") == len(models)


def test_figures_never_plan_training_even_where_a_study_run_would(smoke, tmp_path):
    """Newer data: the study would retrain, `figures` and `report` plan no data or training
    job. That the regenerate job writes nothing under runs/: tests/report/test_redraw.py; the
    redraw run: test_figures_never_train_even_where_a_study_run_would (slow)."""
    with restored(smoke, tmp_path) as ws:
        _data_changed(ws)
        assert_no_data_or_training(ws)


@pytest.mark.slow
def test_figures_never_train_even_where_a_study_run_would(smoke, tmp_path):
    with restored(smoke, tmp_path) as ws:
        _data_changed(ws)
        assert_no_data_or_training(ws)
        before = mtimes(ws.root, "results/runs", "data")
        res = ws.snakemake("--cores", "1", "figures")
        assert res.returncode == 0, output_of(res)[-3000:]
        assert mtimes(ws.root, "results/runs", "data") == before


@pytest.mark.slow
def test_tabbench_figures_equals_snakemake_figures(smoke, tmp_path):
    """Slow (a second drawing of the folder). The regenerate job's command is `tabbench
    figures` with the folder's settings (tests/jobs/test_drawing.py::
    test_the_command_carries_the_redraw_settings), and `tabbench figures` without them reads
    the folder's own (tests/settings/test_run_config.py: the folder's "large" threshold)."""
    out = tmp_path / "out"
    res = subprocess.run([str(smoke.root / "bin" / "tabbench"), "figures", "--results",
                          "results", "--out", str(out), "--jobs", "1"],
                         cwd=smoke.root, env=smoke.env, capture_output=True, text=True)
    assert res.returncode == 0, output_of(res)[-3000:]
    ours, theirs = out / "summary", smoke.root / "results" / "summary"
    for name in ("summary.parquet", "relative.parquet", "dataset_means.parquet",
                 "best_epochs_summary.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(ours / name), pd.read_parquet(theirs / name),
                                      obj=name)
    meta = {k: pd.read_json(d / "meta.json", typ="series") for k, d in (("a", ours),
                                                                         ("b", theirs))}
    for key in ("large_rows", "n_datasets", "n_large_datasets", "models"):
        assert meta["a"][key] == meta["b"][key], key
    assert meta["a"]["large_rows"] == 1500 and meta["a"]["n_large_datasets"] == 2
    summary = pd.read_parquet(ours / "summary.parquet")
    assert (summary["subset"] == "large").any()  # Fig. 5 is not empty


def _other_patiences_plan_a_redraw_and_a_reselection(ws: Workspace, other) -> None:
    """`figures` with other patiences plans the one regenerate job (and the report); the
    study plans the select jobs again (their params changed) but no data or train job."""
    assert set(planned_jobs(ws, "figures", *other)) == {"regenerate", "report", "figures",
                                                        "total"}
    study = planned_jobs(ws, *other)
    assert not set(study) & set(DATA_JOBS), study
    assert study.get("select") == len(list((ws.root / "results" / "selected").glob(
        "*/*.parquet"))), study


def test_other_patiences_plan_a_reselection_and_a_redraw_but_no_training(smoke):
    """The stopping rules' patiences are a reselect/redraw setting (dry runs on the finished
    folder). The redraw itself holds the new patiences without touching the runs (slow:
    test_other_patiences_reselect_and_redraw_but_never_train); in the fast suite a changed
    patience reselects from the runs and the rule table has it
    (tests/summary/test_rule_summary.py::
    test_a_folder_reselects_the_pairs_whose_selected_files_hold_other_patiences), and the
    regenerate job's command carries it (tests/jobs/test_drawing.py::
    test_the_command_carries_the_redraw_settings)."""
    _other_patiences_plan_a_redraw_and_a_reselection(smoke, ("--config", "patience=[3]"))


@pytest.mark.slow
def test_other_patiences_reselect_and_redraw_but_never_train(smoke, tmp_path):
    """The stopping rules' patiences are a reselect/redraw setting: on the finished folder,
    `figures` with other patiences plans the one regenerate job, the study plans the select
    jobs again (their params changed) but no train job, and the redraw holds the new
    patiences without touching the runs. Slow (a redraw); the plans in the fast suite:
    test_other_patiences_plan_a_reselection_and_a_redraw_but_no_training."""
    with restored(smoke, tmp_path) as ws:
        other = ("--config", "patience=[3]")
        _other_patiences_plan_a_redraw_and_a_reselection(ws, other)
        before = mtimes(ws.root, "results/runs", "data")
        res = ws.snakemake("--cores", "1", "figures", *other)
        assert res.returncode == 0, output_of(res)[-3000:]
        assert mtimes(ws.root, "results/runs", "data") == before
        rules = pd.read_parquet(ws.root / "results" / "summary" / "rules.parquet")
        assert set(rules["choice"]) == {"best", "patience 3"}


def test_a_config_that_disagrees_with_the_folder_is_refused(smoke):
    before = mtimes(smoke.root, "results", "data")
    for args in (["figures", "-n"], []):
        res = smoke.snakemake("--cores", "1", *args, "--config", "preset=demo", "n_splits=2",
                              "seed=0")
        text = output_of(res)
        assert res.returncode != 0, text[-3000:]
        tail = "\n".join(text.strip().splitlines()[-6:])
        assert "preset: folder 'smoke', asked 'demo'" in tail, text[-3000:]
        assert "n_splits: folder 1, asked 2" in tail, text[-3000:]
        assert "seed:" not in tail  # the folder's value: no difference
        assert "Job stats" not in text
    assert mtimes(smoke.root, "results", "data") == before


OWN_FILES = {"results/selected/xgboost/kc1.parquet", "results/runs/xgboost/kc1/split0.parquet",
             "results/runs/xgboost/kc1/split0.failures.json",
             "results/logs/train/xgboost/kc1/split0.log", "results/logs/select/xgboost/kc1.log",
             # what re-stopping needs (keep_for_restop), written by the train job
             "results/runs/xgboost/kc1/split0.restop.npz",
             "results/runs/xgboost/kc1/split0.restop.json"}


def _drawn(root: Path) -> dict[str, bytes]:
    """Every file the drawing writes (summary, claims, figures, report), by content."""
    results = root / "results"
    files = [*(results / "summary").rglob("*"), *(results / "figures").rglob("*"),
             results / "report.html"]
    return {str(p.relative_to(root)): p.read_bytes() for p in files if p.is_file()}


def test_single_dataset_rerun_rebuilds_only_its_own_files(smoke, tmp_path):
    target = "results/selected/xgboost/kc1.parquet"
    with restored(smoke, tmp_path) as ws:
        before = mtimes(ws.root, "results", "data")
        res = ws.snakemake("--cores", "2", target, "--forcerun", "train")  # the README's
        assert res.returncode == 0, output_of(res)[-3000:]
        after = mtimes(ws.root, "results", "data")
        changed = {k for k in after if after[k] != before.get(k)}
        assert changed == OWN_FILES, sorted(changed ^ OWN_FILES)
        # the figures, claims and report now lag the folder: the run ends by saying so (before
        # Snakemake's log path and elapsed time) and which command redraws them, which plans
        # the drawing and nothing else
        line = ("tabbench: the summary, claims and figures and the report of results/ are older "
                f"than {target} or missing: redraw with `snakemake --cores 1 figures` (nothing "
                "is trained)")
        assert line in output_of(res).strip().splitlines()[-3:], output_of(res)[-3000:]
        assert planned_jobs(ws, "figures") == {"regenerate": 1, "report": 1, "figures": 1,
                                           "total": 3}


#: the README's command that retrains one pair and redraws
RETRAIN_AND_REDRAW = ("results/selected/xgboost/kc1.parquet", "figures", "--forcerun", "train")


def test_one_command_plans_a_pairs_retraining_and_the_redraw(smoke):
    """`snakemake results/selected/M/D.parquet figures --forcerun train` plans that pair's
    training and selection, then the drawing and the report, and nothing else. What the
    retraining rewrites: test_single_dataset_rerun_rebuilds_only_its_own_files; the whole
    command run: test_one_command_retrains_a_pair_and_redraws_everything (slow)."""
    assert planned_jobs(smoke, *RETRAIN_AND_REDRAW) == {
        "train": 1, "select": 1, "regenerate": 1, "report": 1, "figures": 1, "total": 5}


@pytest.mark.slow
def test_one_command_retrains_a_pair_and_redraws_everything(smoke, tmp_path):
    """`snakemake results/selected/M/D.parquet figures --forcerun train`: that pair's training
    and selection, then the summary, claims, figures and report, and nothing else; afterwards
    the study and `figures` are up to date. Slow (a training and a drawing); its plan in the
    fast suite: test_one_command_plans_a_pairs_retraining_and_the_redraw."""
    with restored(smoke, tmp_path) as ws:
        before = mtimes(ws.root, "results", "data")
        drawn_before = _drawn(ws.root)
        res = ws.snakemake("--cores", "2", *RETRAIN_AND_REDRAW)
        assert res.returncode == 0, output_of(res)[-3000:]
        assert job_stats(output_of(res)) == {"train": 1, "select": 1, "regenerate": 1, "report": 1,
                                         "figures": 1, "total": 5}, output_of(res)[-3000:]
        after = mtimes(ws.root, "results", "data")
        changed = {k for k in after if after[k] != before.get(k)}
        drawing = {k for k in changed if k.startswith(("results/summary/", "results/figures/"))}
        logs = {"results/logs/regenerate.log", "results/logs/report.log"}
        assert changed - drawing == OWN_FILES | logs | {"results/report.html"}
        assert drawing | {"results/report.html"} == set(drawn_before)  # every one written again
        assert "tabbench: the summary" not in output_of(res)  # nothing left stale
        for args in ([], ["figures"]):
            assert "Nothing to be done" in output_of(ws.snakemake("--cores", "1", "-n", *args))


def test_a_damaged_file_stops_figures_in_one_line_and_deletes_nothing_drawn(smoke, tmp_path):
    """A truncated runs file, then `snakemake figures` or `report`: one line naming it and how
    to rebuild it, before any job; every file drawn before is still there, byte for byte
    (Snakemake deleted the failed job's outputs: all of summary/ and figures/)."""
    damaged = "results/runs/xgboost/kc1/split0.parquet"
    with restored(smoke, tmp_path) as ws:
        drawn = _drawn(ws.root)
        damage(ws.root / damaged, "truncated")
        for target in ("figures", "report"):
            res = ws.snakemake("--cores", "1", target)
            assert res.returncode != 0, output_of(res)[-3000:]
            last = output_of(res).strip().splitlines()[-1]
            assert last.startswith(f"tabbench: {damaged} cannot be read, truncated or corrupt"), \
                output_of(res)[-3000:]
            assert last.endswith(f"rebuild it with `snakemake {damaged} --forcerun train`. "
                                 "Nothing was redrawn: the summary, figures and report in "
                                 "results/ are those drawn before"), last
            assert "Job stats" not in output_of(res)
            assert _drawn(ws.root) == drawn


def test_a_job_that_fails_on_a_damaged_file_keeps_what_was_drawn_and_selected(smoke, tmp_path):
    """Damage only a reader of the data notices (a corrupt page behind an intact footer): the
    regenerate job fails with one line naming the file, and what was drawn before is put back;
    a resume whose select job fails on a truncated runs file keeps the selected file (which
    Snakemake deleted)."""
    runs = "results/runs/xgboost/kc1/split0.parquet"
    selected = "results/selected/xgboost/kc1.parquet"
    with restored(smoke, tmp_path) as ws:
        drawn = _drawn(ws.root)
        damage(ws.root / runs, "page")
        res = ws.snakemake("--cores", "1", "figures")
        assert res.returncode != 0, output_of(res)[-3000:]
        log = (ws.root / "results" / "logs" / "regenerate.log").read_text().strip().splitlines()
        assert len(log) == 1 and log[0].startswith(
            f"tabbench figures: error: {runs} cannot be read"), log
        assert log[0] in output_of(res)
        assert _drawn(ws.root) == drawn

        kept = (ws.root / selected).read_bytes()
        damage(ws.root / runs, "truncated")
        res = ws.snakemake("--cores", "1")  # a resume: the select job reruns on the newer runs
        assert res.returncode != 0, output_of(res)[-3000:]
        assert "Error in rule select" in output_of(res), output_of(res)[-3000:]
        assert (ws.root / selected).read_bytes() == kept
        assert set(_drawn(ws.root)) == set(drawn)



@pytest.mark.slow
def test_a_folder_from_before_run_config_gets_one_from_its_next_training(smoke, tmp_path):
    with restored(smoke, tmp_path) as ws:
        stored = ws.root / "results" / "run_config.yaml"
        stored.unlink()
        assert_no_data_or_training(ws)  # read what is cached, without it
        res = ws.snakemake("--cores", "1", "figures", "--forcerun", "regenerate")
        assert res.returncode == 0, output_of(res)[-3000:]
        assert "keep the 'large' threshold of its last summary (1500 rows)" in output_of(res)
        assert not stored.exists()  # drawing figures says nothing about how it was trained
        res = ws.snakemake("--cores", "2", "results/selected/xgboost/kc1.parquet",
                           "--forcerun", "train", "--config", "preset=smoke")
        assert res.returncode == 0, output_of(res)[-3000:]
        assert yaml.safe_load(stored.read_text())["preset"] == "smoke"


