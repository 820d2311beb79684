"""The data rules (workflow/rules/data.smk) run by Snakemake in a temporary copy of the repo.

Each test copies Snakefile, config.yaml, workflow/, profiles/ (and environment.yml, which the
rules name as their conda environment) into a temporary folder, writes small generated datasets
there, and runs ``python -m snakemake``. A ``tabbench`` launcher that uses this checkout's
``src`` is put first on PATH, so the rules call the code under test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from fixtures import data_fixtures as fx
from workspace import planned_commands

REPO = Path(__file__).resolve().parents[2]

LAUNCHER = """#!{python}
import sys
sys.path.insert(0, {src!r})
from tabbench import cli
sys.exit(cli.main())
"""




@pytest.fixture
def wf(tmp_path):
    """A temporary copy of the workflow with a `tabbench` launcher; returns a runner."""
    return _workflow_copy(tmp_path)


#: how much longer than a one-dataset dry run the full suite's may take. Measured (2 cores, load
#: 10-13): about 1.5x before the checkpoint (~400 data jobs) and 5.4x after it (the whole study:
#: ~3,000 train and 600 select jobs planned as well); a DAG cost growing faster than linearly
#: would blow well past these. Ratios, not seconds: both runs slow down alike on a busy machine.
DRY_RUN_RATIO = 5
DRY_RUN_RATIO_AFTER_CHECKPOINT = 15


@pytest.fixture(scope="module")
def dry_run_baseline(tmp_path_factory):
    """Seconds of a dry run with a one-dataset suite: Snakemake's and the workflow's fixed cost
    on this machine at this moment."""
    run = _workflow_copy(tmp_path_factory.mktemp("baseline"))
    fx.make_demo_dir(run.dir / "data" / "demo", {"toy": fx.synthetic_frame(50)})
    start = time.monotonic()
    run("-n", "--cores", "2", "--config", "suite=[toy]", "sources=[bundled]")
    return time.monotonic() - start


def _workflow_copy(tmp_path):
    for item in ("Snakefile", "config.yaml"):
        shutil.copy(REPO / item, tmp_path / item)
    for folder in ("workflow", "profiles"):
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, tmp_path / folder)
    env_file = REPO / "environment.yml"
    if env_file.is_file():
        shutil.copy(env_file, tmp_path / "environment.yml")
    else:  # before the packaging part is merged: the rules only need the file to exist
        (tmp_path / "environment.yml").write_text("name: tabbench\ndependencies: [python]\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "tabbench"
    launcher.write_text(LAUNCHER.format(python=sys.executable, src=str(REPO / "src")))
    launcher.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "snakemake", *args]
        proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{cmd} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    run.dir = tmp_path  # type: ignore[attr-defined]
    return run


def job_stats(text: str) -> dict[str, int]:
    """The 'Job stats' table of a dry run as {rule: count}."""
    return {
        parts[0]: int(parts[1])
        for line in text.splitlines()
        if len(parts := line.split()) == 2 and parts[1].isdigit()
    }


def test_lint_clean_for_data_rules(wf):
    fx.make_demo_dir(wf.dir / "data" / "demo", {"toy": fx.synthetic_frame(50)})
    out = wf("--lint", "--config", "suite=demo", check=False)
    text = out.stdout + out.stderr
    lint_headers = [line for line in text.splitlines() if line.startswith("Lints for")]
    mine = [h for h in lint_headers if "data.smk" in h or "data_helpers.smk" in h]
    assert not mine, text


def test_data_rules_run_and_record_problems_as_status(wf):
    d = wf.dir
    fx.make_demo_dir(
        d / "data" / "demo",
        {
            "alpha": fx.synthetic_frame(700, n_classes=3, cat_missing=0.1),
            "tiny": fx.synthetic_frame(200),
            "bad": fx.synthetic_frame(600),
        },
    )
    (d / "data" / "demo" / "bad.parquet").write_bytes(b"not a parquet file")  # sha mismatch
    fx.make_talent_folder(d / "talent", "beta", sizes=(400, 100, 150), num_missing=0.01)
    suite = "[alpha,beta,tiny,bad]"
    args = ["--cores", "2", "--config", f"suite={suite}", "sources=[talent,bundled]",
            f"talent_dir={d / 'talent'}", "min_rows=500", "n_splits=2", "max_rows=600"]  # fmt: skip
    wf("data", *args)  # the data part only: the default target would also train
    data = d / "data"
    assert (data / "kept.txt").read_text().split() == ["alpha", "beta"]
    summary = pd.read_csv(data / "datasets.csv").set_index("dataset")
    assert summary.loc["alpha", "source"] == "bundled" and summary.loc["beta", "source"] == "talent"
    assert summary.loc["alpha", "rows_final"] == 600  # subsampled to max_rows
    assert summary.loc["tiny", "status"] == "dropped"
    assert summary.loc["bad", "status"] == "unavailable"
    unavailable = pd.read_csv(data / "unavailable.csv").set_index("dataset")
    assert list(unavailable.index) == ["bad"]
    assert "talent: no folder 'bad'" in unavailable.loc["bad", "reasons"]
    assert "bundled: bad: bundled file" in unavailable.loc["bad", "reasons"]
    assert "corrupted" in unavailable.loc["bad", "reasons"]
    for name in ("alpha", "beta"):
        splits = pd.read_parquet(data / "splits" / f"{name}.parquet")
        assert sorted(splits["split"].unique()) == [0, 1]
    assert not (data / "splits" / "tiny.parquet").exists()
    report = json.loads((data / "processed" / "beta.json").read_text())
    assert report["kept"] and report["n_num"] == 3 and report["n_cat"] == 2
    # everything is up to date: a second dry run has nothing to do
    again = wf("-n", "data", *args[2:])
    assert "Nothing to be done" in again.stdout + again.stderr


def test_max_rows_unlimited_reaches_the_filter_as_no_cap(wf):
    """``max_rows: unlimited`` reaches the filter job as no cap (the smoke preset's cap is
    1,500); null would mean the preset's cap (tests/settings/test_presets.py). That the filter
    then keeps every row: tests/data/test_data_commands.py."""
    fx.make_demo_dir(wf.dir / "data" / "demo", {"big": fx.synthetic_frame(2_000)})
    out = wf("-n", "-p", "data", "--cores", "1", "--config", "preset=smoke", "suite=[big]",
             "max_rows=unlimited")
    filters = planned_commands(out.stdout, "tabbench data filter ")
    assert len(filters) == 1 and " --max-rows None " in filters[0], out.stdout[-3000:]


def test_dry_run_of_full_ye2024_manifest_is_fast(wf, dry_run_baseline):
    talent = wf.dir / "talent"
    fx.make_talent_folder(talent, "banknote_authentication")
    start = time.monotonic()
    out = wf("-n", "--cores", "2", "--config", "suite=ye2024", f"talent_dir={talent}")
    elapsed = time.monotonic() - start
    text = out.stdout + out.stderr
    assert elapsed < DRY_RUN_RATIO * dry_run_baseline, (
        f"dry run took {elapsed:.1f} s, one dataset's {dry_run_baseline:.1f} s"
    )
    stats = job_stats(text)
    assert stats["fetch_dataset"] == 200 and stats["filter_dataset"] == 200
    assert stats["collect_datasets"] == 1


def test_dry_run_after_checkpoint_has_split_jobs_for_kept_datasets(wf, dry_run_baseline):
    # a pre-populated state: every dataset of the manifest fetched and filtered, 200 kept
    from tabbench.data.manifest import suite_names

    names = suite_names("ye2024", wf.dir)
    data = wf.dir / "data"
    for sub in ("raw", "processed"):
        for name in names:
            for ext in ("parquet", "json"):
                path = data / sub / f"{name}.{ext}"
                path.parent.mkdir(parents=True, exist_ok=True)
                # a filter report says whether it kept the dataset (a split target is refused
                # for one it dropped)
                path.write_text('{"kept": true}' if (sub, ext) == ("processed", "json") else "{}")
        time.sleep(0.02)  # outputs newer than inputs
    (data / "kept.txt").write_text("".join(f"{n}\n" for n in names))
    (data / "datasets.csv").write_text("")
    (data / "unavailable.csv").write_text("")
    start = time.monotonic()
    out = wf("-n", "--cores", "2", "--config", "suite=ye2024")
    elapsed = time.monotonic() - start
    text = out.stdout + out.stderr
    assert elapsed < DRY_RUN_RATIO_AFTER_CHECKPOINT * dry_run_baseline, (
        f"dry run took {elapsed:.1f} s, one dataset's {dry_run_baseline:.1f} s"
    )
    stats = job_stats(text)
    assert stats["split_dataset"] == 200
    assert "fetch_dataset" not in stats and "filter_dataset" not in stats


@pytest.mark.slow
def test_shipped_demo_suite_data_rules(wf):
    shutil.copytree(REPO / "data" / "demo", wf.dir / "data" / "demo")
    wf("--cores", "2", "data", "--config", "preset=demo", "sources=[bundled]")
    data = wf.dir / "data"
    kept = (data / "kept.txt").read_text().split()
    demo = pd.read_csv(data / "demo" / "MANIFEST.csv")
    summary = pd.read_csv(data / "datasets.csv")
    assert len(summary) == len(demo) and len(kept) >= 10
    assert (summary["status"] != "unavailable").all()
    for name in kept:
        assert (data / "splits" / f"{name}.parquet").is_file()


def test_excluded_dataset_gets_no_job_and_a_typo_stops_the_run(wf):
    """config ``exclude`` removes a dataset before any job; a name the suite lacks is one line."""
    fx.make_demo_dir(wf.dir / "data" / "demo",
                     {"keep": fx.synthetic_frame(600), "drop": fx.synthetic_frame(600)})
    args = ["-n", "data", "--cores", "1", "--config", "suite=[keep,drop]", "sources=[bundled]"]
    every = wf(*args)
    left = wf(*args, "exclude=[drop]")
    fetched = lambda proc: set(re.findall(r"wildcards: dataset=(\w+)", proc.stdout))  # noqa: E731
    assert fetched(every) == {"keep", "drop"}
    assert fetched(left) == {"keep"}
    typo = wf(*args, "exclude=[dorp]", check=False)
    assert typo.returncode != 0
    assert "config key 'exclude': dorp not in the suite" in typo.stdout + typo.stderr


def _split_params(folder: Path) -> list[list[str]]:
    """What Snakemake recorded as the params of each split job (its params rerun trigger)."""
    records = [json.loads(m.read_text()) for m in (folder / ".snakemake" / "metadata").iterdir()]
    return [r["params"] for r in records if r.get("rule") == "split_dataset"]


@pytest.mark.slow
def test_split_by_groups_reruns_the_splits_only_when_true(wf):
    """With the default (false) a split job's params are n_splits, seed and stratify alone
    (what a data folder made without the option recorded), so a finished data folder draws no
    split again; turned on in the folder's run_config.yaml, every split job reruns (another
    study); back to false, nothing does.

    Slow (a data stage and three plans); in the fast suite: what a split job records, by
    value (tests/jobs/test_data.py::test_splitting_by_groups_is_recorded_only_when_true), and
    that a changed record reruns a job under the profile's triggers while a changed rule does
    not (tests/workflow/test_train_rules.py::
    test_the_rerun_policy_retrains_for_settings_never_for_a_changed_rule)."""
    fx.make_demo_dir(wf.dir / "data" / "demo", {"toy": fx.synthetic_frame(300)})
    triggers = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())[
        "rerun-triggers"]
    args = ["data", "--cores", "1", "--rerun-triggers", *triggers]
    wf(*args, "--config", "suite=[toy]", "sources=[bundled]", "n_splits=2", "min_rows=100")
    assert _split_params(wf.dir) == [sorted([repr(2), repr(0), repr(False)])]
    stored = wf.dir / "results" / "run_config.yaml"
    cfg = yaml.safe_load(stored.read_text())
    assert cfg["split_by_groups"] is False

    def planned() -> dict[str, int]:
        out = wf("-n", *args)  # the folder's settings (its run_config.yaml)
        return job_stats(out.stdout)

    assert "split_dataset" not in planned()
    stored.write_text(yaml.safe_dump({**cfg, "split_by_groups": True}))
    assert planned().get("split_dataset") == 1
    stored.write_text(yaml.safe_dump(cfg))
    assert "split_dataset" not in planned()


@pytest.mark.slow
def test_the_end_of_the_data_stage_names_a_flagged_dataset_it_kept(wf):
    """With ``leakage: report`` a flagged dataset stays; the last lines of the run name it
    (and its column), after the one-line summary. Slow (a data stage); in the fast suite the
    collect command writes those lines (tests/data/test_data_commands.py::
    test_flagged_datasets_and_near_misses_are_named_in_either_mode) and a run ends on what it
    wrote (tests/workflow/test_smoke_dag.py::test_summary_figures_report_and_data_files)."""
    rng = np.random.default_rng(0)
    code = rng.integers(0, 30, size=800)
    parity = pd.DataFrame({"code": code.astype(float), "x": rng.normal(size=800),
                           "class": code % 2})  # the label is the code's parity
    fx.make_demo_dir(wf.dir / "data" / "demo",
                     {"parity": parity, "honest": fx.synthetic_frame(800)})
    out = wf("data", "--cores", "1", "--config", "suite=[parity,honest]", "sources=[bundled]",
             "min_rows=500", "n_splits=1", "leakage=report")
    lines = (out.stdout + out.stderr).splitlines()
    summary = lines.index("tabbench data: 2 datasets: 2 kept, 0 dropped by filtering, "
                          "0 unavailable")
    assert lines[summary + 1].startswith("tabbench WARNING: the leakage check found one column "
                                         "predicting the label almost alone: flagged, kept "
                                         "(leakage: report): parity (column 'code', 1.0000 "
                                         "held out)"), lines[summary:]
    assert "honest" not in lines[summary + 1]
    table = pd.read_csv(wf.dir / "data" / "datasets.csv").set_index("dataset")
    assert table.loc["parity", ["status", "leakage", "leak_rule"]].tolist() == [
        "kept", "flagged", "values"]
