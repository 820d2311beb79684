"""The select/aggregate/figures/report rules on a results folder with no data/ at all.

A workspace in a tmp dir gets the project's rule files (those of the Snakefile's study and
drawing: common, data, train, select, report, diagnostics), a small config and synthetic
per-epoch records (plus cached selections). What must hold (docs/design.md §1, §8):
`snakemake figures` runs only aggregation and plotting — no data, training or (for cached
pairs) selection job — and the report target produces one self-contained HTML with every
figure and caption.

`kept_datasets()` comes from data.smk's checkpoint. Until data.smk and train.smk define their
parts, the wrapper Snakefile includes stand-ins (a checkpoint and a train rule that would fail
if run); once they exist, the real rules are exercised instead.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.synthetic import SyntheticDataset, write_synthetic_results
from workspace import planned_commands

from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS, DIAGNOSTIC_TABLE_FILES
from tabbench.plots import FIGURES
from tabbench.summary.select import write_selected

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "workflow" / "rules"

WRAPPER = f"""
configfile: "config.yaml"


include: "{RULES}/common.smk"
include: "{RULES}/data.smk"
include: "{RULES}/train.smk"


if "kept_datasets" not in globals():

    include: "standin_data.smk"


if not any("/runs/" in str(o) for r in workflow.rules for o in r.output):

    include: "standin_train.smk"


include: "{RULES}/select.smk"
include: "{RULES}/report.smk"
include: "{RULES}/diagnostics.smk"


rule all:
    default_target: True
    input:
        all_targets,
"""

STANDIN_DATA = """
checkpoint standin_kept:
    output:
        f"{DATA}/kept.txt",
    shell:
        "printf 'small_a\\nsmall_b\\nlarge_c\\n' > {output}"


def kept_datasets():
    with open(checkpoints.standin_kept.get().output[0]) as fh:
        return fh.read().split()
"""

STANDIN_TRAIN = """
rule standin_train:
    input:
        f"{DATA}/kept.txt",
    output:
        f"{RESULTS}/runs/{{model}}/{{dataset}}/split{{i}}.parquet",
    shell:
        "echo 'training must not run in these tests'; exit 1"
"""

SHIM = """#!{python}
import sys
from tabbench import cli
sys.exit(cli.main())
"""

MODELS = ["xgboost", "mlp"]
N_SPLITS = 2
DATASETS = [
    SyntheticDataset("small_a", 1_500, 2),
    SyntheticDataset("small_b", 3_000, 3),
    SyntheticDataset("large_c", 12_000, 2),
]


def _snakemake(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PATH"] = f"{ws / 'bin'}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = f"{REPO / 'src'}{os.pathsep}{env.get('PYTHONPATH', '')}"
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", *args], cwd=ws,
                          env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"snakemake {args} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc


def _planned_jobs(ws: Path, *targets: str) -> dict[str, int]:
    """Rule -> number of jobs `snakemake -n` would run."""
    proc = _snakemake(ws, "-n", *targets)
    text = proc.stdout + proc.stderr
    if "Nothing to be done" in text:
        return {}
    block = text.split("Job stats:", 1)[1].split("total", 1)[0]
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^(\S+)\s+(\d+)\s*$", block, re.MULTILINE)}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "Snakefile").write_text(WRAPPER)
    (ws / "standin_data.smk").write_text(STANDIN_DATA)
    (ws / "standin_train.smk").write_text(STANDIN_TRAIN)
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    cfg.update({"preset": "smoke", "models": MODELS, "n_splits": N_SPLITS, "n_configs": 2,
                "data_dir": "data", "results_dir": "results",
                "suite": [d.name for d in DATASETS]})
    (ws / "config.yaml").write_text(yaml.safe_dump(cfg))
    (ws / "bin").mkdir()
    shim = ws / "bin" / "tabbench"
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    results = ws / "results"
    write_synthetic_results(results, DATASETS, MODELS, N_SPLITS, n_configs=2,
                            epochs={"xgboost": (10, 20), "mlp": (8, 8)})
    for model in MODELS:
        for ds in DATASETS:
            runs = sorted((results / "runs" / model / ds.name).glob("split*.parquet"))
            write_selected(runs, results / "selected" / model / f"{ds.name}.parquet")
    assert not (ws / "data").exists()
    return ws


def _mtimes(folder: Path) -> dict[Path, float]:
    return {p: p.stat().st_mtime_ns for p in folder.rglob("*.parquet")}


def _mid_study(ws: Path) -> None:
    """Add what a folder holds mid-study: runs whose select job has not run (extra_d) and an
    incomplete set of splits (partial_e, a killed training)."""
    extra = SyntheticDataset("extra_d", 2_000, 2)
    write_synthetic_results(ws / "results", [extra], ["mlp"], N_SPLITS, n_configs=2,
                            epochs={"mlp": (8, 8)})
    write_synthetic_results(ws / "results", [SyntheticDataset("partial_e", 2_000, 2)], ["mlp"],
                            1, n_configs=2, epochs={"mlp": (8, 8)})


def test_figures_from_cache_plan_only_the_regenerate_job(workspace: Path):
    """Mid-study, with no data/: `figures` plans the regenerate job and the report, no select
    job for the runs without a selected file and no training for the incomplete pair. What
    that job then summarises (the runs selected in memory, the incomplete pair left out):
    tests/report/test_redraw.py; the real drawing of such a folder:
    test_figures_from_cache_run_only_the_regenerate_job (slow)."""
    _mid_study(workspace)
    assert _planned_jobs(workspace, "figures") == {"regenerate": 1, "report": 1, "figures": 1}
    assert not (workspace / "data").exists()


@pytest.mark.slow
def test_figures_from_cache_run_only_the_regenerate_job(workspace: Path):
    """Slow (a real drawing); its plan in the fast suite:
    test_figures_from_cache_plan_only_the_regenerate_job."""
    ws = workspace
    # runs without a selected file are selected by the regenerate job (in memory), not by a
    # select job; an incomplete set of splits (a killed training) is left out, not trained
    _mid_study(ws)
    assert _planned_jobs(ws, "figures") == {"regenerate": 1, "report": 1, "figures": 1}
    before = _mtimes(ws / "results" / "runs") | _mtimes(ws / "results" / "selected")
    _snakemake(ws, "figures")
    assert not (ws / "data").exists()
    assert _mtimes(ws / "results" / "runs") | _mtimes(ws / "results" / "selected") == before
    for stem in FIGURES:
        for ext in ("pdf", "png"):
            f = ws / "results" / "figures" / f"{stem}.{ext}"
            assert f.exists() and f.stat().st_size > 1000, f
    # the same job draws the diagnostics, from the replay files the folder holds (none): every
    # split of the complete pairs (the study's and extra_d's) is missing its replay
    for stem in DIAGNOSTIC_FIGURE_STEMS:
        for ext in ("pdf", "png"):
            assert (ws / "results" / "figures" / f"{stem}.{ext}").stat().st_size > 1000
    for name in DIAGNOSTIC_TABLE_FILES.values():
        assert (ws / "results" / "summary" / "diagnostics" / name).exists()
    meta = json.loads((ws / "results" / "summary" / "diagnostics" / "meta.json").read_text())
    complete_pairs = len(MODELS) * len(DATASETS) + 1
    assert meta["replay"] == {"used": 0, "stale": 0, "missing": complete_pairs * N_SPLITS}
    means = pd.read_parquet(ws / "results" / "summary" / "dataset_means.parquet")
    assert "extra_d" in set(means["dataset"]) and "partial_e" not in set(means["dataset"])
    assert not (ws / "results" / "selected" / "mlp" / "extra_d.parquet").exists()
    assert _planned_jobs(ws, "figures") == {}  # up to date: nothing reruns


def test_what_the_figures_compare_is_a_redraw_setting_checked_before_any_job(workspace: Path):
    ws = workspace
    # an unknown method is one line before any job, naming the key
    typo = _snakemake(ws, "-n", "figures", "--config", "figures_methods=[Logloss+TS,Nope+TS]",
                      check=False)
    text = typo.stdout + typo.stderr
    assert typo.returncode != 0 and "Job stats" not in text
    assert "tabbench: invalid configuration: config key 'figures_methods': unknown method" in text
    assert "Traceback" not in text
    # another baseline reaches the regenerate job's command, the one job planned. That the
    # summary is then relative to it: tests/summary/test_summary_view.py; that a changed
    # setting reruns the job: tests/jobs/test_triggers.py (the job's recorded params)
    assert _regenerate_command(ws, "figures_baseline=TS-Ref.+TS").count(
        " --figures-baseline TS-Ref.+TS ") == 1


def _regenerate_command(ws: Path, *config: str) -> str:
    """The one `tabbench figures` command that `snakemake -n -p figures --config *config`
    plans."""
    proc = _snakemake(ws, "-n", "-p", "figures", "--config", *config)
    commands = planned_commands(proc.stdout + proc.stderr, "tabbench figures ")
    assert len(commands) == 1, commands
    return commands[0]


def test_a_large_threshold_of_0_reaches_the_regenerate_job_as_0(workspace: Path):
    """``figures_large_rows: 0`` (every dataset large) is a value of the schema, so the
    regenerate job gets 0, not the paper's 10,000 that an unset threshold would get."""
    assert " --large-rows 0 " in _regenerate_command(workspace, "figures_large_rows=0")


@pytest.mark.slow
def test_report_is_one_html_with_every_figure_and_caption(workspace: Path):
    ws = workspace
    _snakemake(ws, "report")
    html = (ws / "results" / "report.html").read_text()
    assert not (ws / "data").exists()
    for stem in FIGURES:
        assert f"filename={stem}.png;base64," in html, stem  # the image itself, embedded
        caption = (REPO / "workflow" / "report" / f"{stem}.rst").read_text()
        first_words = re.sub(r"[*_`]", "", caption.split("\n", 1)[0])[:40]
        assert first_words.split(":")[0] in html, (stem, first_words)
    # it opens on what the study is (summary/study.rst, the workflow's global description)
    assert "The study in this results folder" in html and "Headline claims" in html
