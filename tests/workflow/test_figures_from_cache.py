"""Figures and reports from a results folder, whatever config produced it.

A real run of the smoke preset (`snakemake --cores 2 --config preset=smoke`) in a temporary copy
of the workflow; afterwards, with no --config repeated:

- `snakemake figures -n` and `snakemake report -n` plan no train, fetch, filter or split job
  (before results/run_config.yaml they planned the paper preset's whole study);
- not even when the data is newer than the runs, which makes a study run retrain;
- `tabbench figures --results` gives the same summary numbers as `snakemake figures` (it used
  the paper's 10K "large" threshold on any folder);
- a --config that disagrees with the folder's settings is refused naming the keys, and
  nothing runs;
- a single-dataset rerun rebuilds that dataset's runs and selection and nothing else, and its
  last line says that the drawings are now stale and how to redraw them; with `figures` beside
  it, one command retrains the pair and redraws the summary, claims, figures and report;
- a damaged input (truncated, or a corrupt page that only the job notices) ends `figures` in
  one line and deletes nothing drawn or selected before.

And after a run interrupted by SIGINT (as Ctrl-C sends it) the same holds before and after the
run is resumed with the bare `snakemake --cores 2`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.damaged import damage
from workspace import Workspace, job_stats

DATA_JOBS = ("train", "fetch_dataset", "filter_dataset", "split_dataset", "collect_datasets")


def _text(res: subprocess.CompletedProcess) -> str:
    return res.stdout + res.stderr


def _planned(ws: Workspace, *args: str) -> dict[str, int]:
    res = ws.snakemake("--cores", "1", "-n", *args)
    assert res.returncode == 0, _text(res)[-3000:]
    return job_stats(_text(res))


def _assert_no_data_or_training(ws: Workspace) -> None:
    for target in ("figures", "report"):
        stats = _planned(ws, target)
        assert not set(stats) & set(DATA_JOBS), (target, stats)


def _mtimes(root: Path, *folders: str) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns
            for f in folders for p in (root / f).rglob("*") if p.is_file()}


@contextlib.contextmanager
def _restored(ws: Workspace, tmp: Path) -> Iterator[Workspace]:
    """Let a test change the shared workspace in place and put it back afterwards (a copy
    elsewhere would not do: the fetch rule's params hold the absolute path of data/demo, so a
    moved project refetches)."""
    backup = tmp / "backup"
    shutil.copytree(ws.root, backup, symlinks=True)
    try:
        yield ws
    finally:
        shutil.rmtree(ws.root)
        shutil.move(backup, ws.root)


@pytest.fixture(scope="module")
def smoke(tmp_path_factory) -> Workspace:
    ws = Workspace(tmp_path_factory.mktemp("smoke") / "wf", demo=("segment", "kc1"))
    res = ws.snakemake("--cores", "2", "--config", "preset=smoke")
    assert res.returncode == 0, _text(res)[-3000:]
    assert (ws.root / "results" / "run_config.yaml").is_file()
    return ws


def test_figures_and_report_plan_no_data_or_training_job(smoke):
    _assert_no_data_or_training(smoke)
    res = smoke.snakemake("--cores", "1", "-n", "figures")
    # the folder's settings, and config.yaml's differing preset named as not used
    assert "using results/run_config.yaml" in _text(res)
    assert "config.yaml's preset='paper' not used" in _text(res)
    assert "Nothing to be done" in _text(res), _text(res)[-3000:]
    # an up-to-date folder: the line before Snakemake's "Nothing to be done" says how to redraw
    # anyway, and that way redraws (the regenerate job, nothing upstream)
    assert "--forcerun regenerate" in _text(res), _text(res)[-3000:]
    forced = _planned(smoke, "figures", "--forcerun", "regenerate")
    assert forced.get("regenerate") == 1 and not set(forced) & set(DATA_JOBS), forced


def test_figures_never_train_even_where_a_study_run_would(smoke, tmp_path):
    with _restored(smoke, tmp_path) as ws:
        processed = ws.root / "data" / "processed" / "kc1.parquet"
        pd.read_parquet(processed).iloc[:-1].to_parquet(processed)  # the data changed
        models = yaml.safe_load((ws.root / "results" / "run_config.yaml").read_text())["models"]
        assert _planned(ws).get("train") == len(models)  # the study: retrain on the new data
        _assert_no_data_or_training(ws)
        before = _mtimes(ws.root, "results/runs", "data")
        res = ws.snakemake("--cores", "1", "figures")
        assert res.returncode == 0, _text(res)[-3000:]
        assert _mtimes(ws.root, "results/runs", "data") == before


def test_tabbench_figures_equals_snakemake_figures(smoke, tmp_path):
    out = tmp_path / "out"
    res = subprocess.run([str(smoke.root / "bin" / "tabbench"), "figures", "--results",
                          "results", "--out", str(out), "--jobs", "1"],
                         cwd=smoke.root, env=smoke.env, capture_output=True, text=True)
    assert res.returncode == 0, _text(res)[-3000:]
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


def test_other_patiences_reselect_and_redraw_but_never_train(smoke, tmp_path):
    """The stopping rules' patiences are a reselect/redraw setting: on the finished folder,
    `figures` with other patiences plans the one regenerate job, the study plans the select
    jobs again (their params changed) but no train job, and the redraw holds the new
    patiences without touching the runs."""
    with _restored(smoke, tmp_path) as ws:
        other = ("--config", "patience=[3]")
        assert set(_planned(ws, "figures", *other)) == {"regenerate", "report", "figures",
                                                        "total"}
        study = _planned(ws, *other)
        assert not set(study) & set(DATA_JOBS), study
        assert study.get("select") == len(list((ws.root / "results" / "selected").glob(
            "*/*.parquet"))), study
        before = _mtimes(ws.root, "results/runs", "data")
        res = ws.snakemake("--cores", "1", "figures", *other)
        assert res.returncode == 0, _text(res)[-3000:]
        assert _mtimes(ws.root, "results/runs", "data") == before
        rules = pd.read_parquet(ws.root / "results" / "summary" / "rules.parquet")
        assert set(rules["choice"]) == {"best", "patience 3"}


def test_a_config_that_disagrees_with_the_folder_is_refused(smoke):
    before = _mtimes(smoke.root, "results", "data")
    for args in (["figures", "-n"], []):
        res = smoke.snakemake("--cores", "1", *args, "--config", "preset=demo", "n_splits=2",
                              "seed=0")
        text = _text(res)
        assert res.returncode != 0, text[-3000:]
        tail = "\n".join(text.strip().splitlines()[-6:])
        assert "preset: folder 'smoke', asked 'demo'" in tail, text[-3000:]
        assert "n_splits: folder 1, asked 2" in tail, text[-3000:]
        assert "seed:" not in tail  # the folder's value: no difference
        assert "Job stats" not in text
    assert _mtimes(smoke.root, "results", "data") == before


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
    with _restored(smoke, tmp_path) as ws:
        before = _mtimes(ws.root, "results", "data")
        res = ws.snakemake("--cores", "2", target, "--forcerun", "train")  # the README's
        assert res.returncode == 0, _text(res)[-3000:]
        after = _mtimes(ws.root, "results", "data")
        changed = {k for k in after if after[k] != before.get(k)}
        assert changed == OWN_FILES, sorted(changed ^ OWN_FILES)
        # the figures, claims and report now lag the folder: the run ends by saying so (before
        # Snakemake's log path and elapsed time) and which command redraws them, which plans
        # the drawing and nothing else
        line = ("tabbench: the summary, claims and figures and the report of results/ are older "
                f"than {target} or missing: redraw with `snakemake --cores 1 figures` (nothing "
                "is trained)")
        assert line in _text(res).strip().splitlines()[-3:], _text(res)[-3000:]
        assert _planned(ws, "figures") == {"regenerate": 1, "report": 1, "figures": 1,
                                           "total": 3}


def test_one_command_retrains_a_pair_and_redraws_everything(smoke, tmp_path):
    """`snakemake results/selected/M/D.parquet figures --forcerun train`: that pair's training
    and selection, then the summary, claims, figures and report, and nothing else; afterwards
    the study and `figures` are up to date."""
    with _restored(smoke, tmp_path) as ws:
        before = _mtimes(ws.root, "results", "data")
        drawn_before = _drawn(ws.root)
        res = ws.snakemake("--cores", "2", "results/selected/xgboost/kc1.parquet", "figures",
                           "--forcerun", "train")
        assert res.returncode == 0, _text(res)[-3000:]
        assert job_stats(_text(res)) == {"train": 1, "select": 1, "regenerate": 1, "report": 1,
                                         "figures": 1, "total": 5}, _text(res)[-3000:]
        after = _mtimes(ws.root, "results", "data")
        changed = {k for k in after if after[k] != before.get(k)}
        drawing = {k for k in changed if k.startswith(("results/summary/", "results/figures/"))}
        logs = {"results/logs/regenerate.log", "results/logs/report.log"}
        assert changed - drawing == OWN_FILES | logs | {"results/report.html"}
        assert drawing | {"results/report.html"} == set(drawn_before)  # every one written again
        assert "tabbench: the summary" not in _text(res)  # nothing left stale
        for args in ([], ["figures"]):
            assert "Nothing to be done" in _text(ws.snakemake("--cores", "1", "-n", *args))


def test_a_damaged_file_stops_figures_in_one_line_and_deletes_nothing_drawn(smoke, tmp_path):
    """A truncated runs file, then `snakemake figures` or `report`: one line naming it and how
    to rebuild it, before any job; every file drawn before is still there, byte for byte
    (Snakemake deleted the failed job's outputs: all of summary/ and figures/)."""
    damaged = "results/runs/xgboost/kc1/split0.parquet"
    with _restored(smoke, tmp_path) as ws:
        drawn = _drawn(ws.root)
        damage(ws.root / damaged, "truncated")
        for target in ("figures", "report"):
            res = ws.snakemake("--cores", "1", target)
            assert res.returncode != 0, _text(res)[-3000:]
            last = _text(res).strip().splitlines()[-1]
            assert last.startswith(f"tabbench: {damaged} cannot be read, truncated or corrupt"), \
                _text(res)[-3000:]
            assert last.endswith(f"rebuild it with `snakemake {damaged} --forcerun train`. "
                                 "Nothing was redrawn: the summary, figures and report in "
                                 "results/ are those drawn before"), last
            assert "Job stats" not in _text(res)
            assert _drawn(ws.root) == drawn


def test_a_job_that_fails_on_a_damaged_file_keeps_what_was_drawn_and_selected(smoke, tmp_path):
    """Damage only a reader of the data notices (a corrupt page behind an intact footer): the
    regenerate job fails with one line naming the file, and what was drawn before is put back;
    a resume whose select job fails on a truncated runs file keeps the selected file (which
    Snakemake deleted)."""
    runs = "results/runs/xgboost/kc1/split0.parquet"
    selected = "results/selected/xgboost/kc1.parquet"
    with _restored(smoke, tmp_path) as ws:
        drawn = _drawn(ws.root)
        damage(ws.root / runs, "page")
        res = ws.snakemake("--cores", "1", "figures")
        assert res.returncode != 0, _text(res)[-3000:]
        log = (ws.root / "results" / "logs" / "regenerate.log").read_text().strip().splitlines()
        assert len(log) == 1 and log[0].startswith(
            f"tabbench figures: error: {runs} cannot be read"), log
        assert log[0] in _text(res)
        assert _drawn(ws.root) == drawn

        kept = (ws.root / selected).read_bytes()
        damage(ws.root / runs, "truncated")
        res = ws.snakemake("--cores", "1")  # a resume: the select job reruns on the newer runs
        assert res.returncode != 0, _text(res)[-3000:]
        assert "Error in rule select" in _text(res), _text(res)[-3000:]
        assert (ws.root / selected).read_bytes() == kept
        assert set(_drawn(ws.root)) == set(drawn)


# --- after a SIGINT ---------------------------------------------------------------------------

EXTRA = "epochs: {mlp: 30, xgboost_default: 30, xgboost_tuned: 40}\n"


def _finished_train_jobs(log: str) -> int:
    return len(re.findall(r"Finished jobid: \d+ \(Rule: train\)", log))


def test_after_sigint_and_resume_figures_plan_no_training(tmp_path):
    ws = Workspace(tmp_path / "wf", demo=("kc1",))
    (ws.root / "extra.yaml").write_text(EXTRA)
    log = tmp_path / "run.log"
    # The profile as users get it (no --retries): a Ctrl-C stops the run and no job is run
    # again. ws.popen starts Snakemake as a terminal's foreground job: a test process with
    # SIGINT ignored (as `pytest &` from a script has) would make Snakemake ignore the SIGINT
    # while the train job stopped on it, and a retrying profile would restart the job.
    proc = ws.popen(["--cores", "2", "--configfile", "extra.yaml", "--config",
                     "preset=smoke", "suite=[kc1]", "models=[xgboost,mlp]", "n_configs=3"], log)
    runs = ws.root / "results" / "runs"
    deadline = time.monotonic() + 300
    try:
        while True:  # one train job finished, another one mid-way
            assert proc.poll() is None, "finished before the interrupt:\n" + log.read_text()[-3000:]
            assert time.monotonic() < deadline, "timed out waiting to interrupt"
            mid_way = [p for p in runs.glob("*/*/split*.parquet.part")
                       if not Path(str(p).removesuffix(".part")).exists()]
            if _finished_train_jobs(log.read_text()) and mid_way:
                break
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C sends to the terminal's process group
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.log_file.close()
    text = log.read_text()
    assert proc.returncode != 0, text[-3000:]
    # Snakemake stopped: in its job loop, or (when the interrupt lands while it evaluates an
    # input function after a finished job) with that function's KeyboardInterrupt
    assert ("Terminating processes on user request" in text
            or "KeyboardInterrupt" in text), text[-3000:]
    assert "Trying to restart job" not in text, text[-3000:]  # and ran no job again
    _assert_no_data_or_training(ws)  # before resuming

    res = ws.snakemake("--cores", "2")  # resumed: the folder's settings, no --config
    assert res.returncode == 0, _text(res)[-3000:]
    assert "using results/run_config.yaml" in _text(res)
    for model in ("xgboost", "mlp"):
        assert (runs / model / "kc1" / "split0.parquet").is_file()
    _assert_no_data_or_training(ws)


# slow: a folder without run_config.yaml on a full smoke training (~45 s)
@pytest.mark.slow
def test_a_folder_from_before_run_config_gets_one_from_its_next_training(smoke, tmp_path):
    with _restored(smoke, tmp_path) as ws:
        stored = ws.root / "results" / "run_config.yaml"
        stored.unlink()
        _assert_no_data_or_training(ws)  # read what is cached, without it
        res = ws.snakemake("--cores", "1", "figures", "--forcerun", "regenerate")
        assert res.returncode == 0, _text(res)[-3000:]
        assert "keep the 'large' threshold of its last summary (1500 rows)" in _text(res)
        assert not stored.exists()  # drawing figures says nothing about how it was trained
        res = ws.snakemake("--cores", "2", "results/selected/xgboost/kc1.parquet",
                           "--forcerun", "train", "--config", "preset=smoke")
        assert res.returncode == 0, _text(res)[-3000:]
        assert yaml.safe_load(stored.read_text())["preset"] == "smoke"


def test_figures_on_a_folder_without_results_say_so_in_one_line(tmp_path):
    ws = Workspace(tmp_path / "wf")
    cases = [  # (the folder's state, --config, the line)
        (None, [], "tabbench: results folder results/ does not exist. Run the study first"),
        ("results/runs", [], "tabbench: results/ holds no complete results to draw figures "
                             "from. Run the study first"),
        # a folder that does not exist, named with a typo of one that does
        ("results/runs", ["--config", "results_dir=reslts"],
         "tabbench: results folder reslts/ does not exist (did you mean 'results'?). Run the "
         "study first"),
    ]
    for folder, config, line in cases:
        if folder:
            (ws.root / folder).mkdir(parents=True, exist_ok=True)
        res = ws.snakemake("--cores", "1", "figures", *config)
        assert res.returncode != 0
        assert _text(res).strip().splitlines()[-1].startswith(line), _text(res)
        assert "Job stats" not in _text(res)
        assert "Exception" not in _text(res) and "Traceback" not in _text(res)
    assert not (ws.root / "results" / "summary").exists()
