"""`snakemake restop` (workflow/rules/restop.smk, docs/design.md §16) and the train rule's
re-stopping settings.

- keep_for_restop, restop_max_mb and retry_failed reach every train command but are not rerun
  triggers: changing them on a finished folder plans no train job (a changed epochs setting,
  the control, does).
- On a finished smoke folder, installing a plugin metric and running
  `snakemake restop` adds its column to every runs file with no train job, and its method is
  in summary.parquet.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from fixtures.plugin_dists import METRIC_GROUP, METRIC_ID, METRIC_LABEL, install_example_plugin
from workspace import Workspace, job_stats

from tabbench.models.runs_schema import val_column

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train_rules import FAKE_TABBENCH, _jobs, make_project, snakemake  # noqa: E402


def test_the_restop_settings_reach_the_train_command_and_retrain_nothing(tmp_path, monkeypatch):
    project = make_project(tmp_path / "p", models=["xgboost"], n_splits=1)
    profile = REPO / "profiles" / "default" / "config.yaml"
    triggers = yaml.safe_load(profile.read_text())["rerun-triggers"]
    res = snakemake(project, "-n", "-p")
    cmds = [cmd for _, cmd in _jobs(res)]
    assert len(cmds) == 2 and all(
        " --keep-for-restop true --restop-max-mb 512.0 --retry-failed false" in c for c in cmds)
    fake = tmp_path / "bin" / "tabbench"
    fake.parent.mkdir()
    fake.write_text(FAKE_TABBENCH)
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    assert snakemake(project).returncode == 0

    def planned(*config):
        res = snakemake(project, "-n", "-p", "--rerun-triggers", *triggers,
                        *(["--config", *config] if config else []))
        assert res.returncode == 0, res.stderr + res.stdout
        return [cmd for _, cmd in _jobs(res)]

    assert planned("keep_for_restop=False", "restop_max_mb=1", "retry_failed=True") == []
    stored = project / "results" / "run_config.yaml"
    cfg = yaml.safe_load(stored.read_text())
    stored.write_text(yaml.safe_dump({**cfg, "keep_for_restop": False, "restop_max_mb": 2}))
    assert planned() == []
    stored.write_text(yaml.safe_dump({**cfg, "epochs": {**cfg["epochs"], "xgboost_tuned": 7}}))
    assert len(planned()) == 2  # the control: a setting that changes records retrains


@pytest.mark.slow
def test_snakemake_restop_adds_a_plugin_metric_to_a_finished_smoke_study(tmp_path):
    ws = Workspace(tmp_path / "wf", demo=["segment", "kc1"])
    config = ["--config", "preset=smoke", "models=[xgboost,mlp]"]
    res = ws.snakemake("--cores", "2", *config, timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    results = ws.root / "results"
    runs = sorted((results / "runs").glob("*/*/split*.parquet"))
    assert len(runs) == 2 * 2
    col = val_column(METRIC_ID)
    assert all(col not in pd.read_parquet(p).columns for p in runs)

    site = install_example_plugin(tmp_path / "site", [METRIC_GROUP])
    ws.env["PYTHONPATH"] = os.pathsep.join([str(site), ws.env["PYTHONPATH"]])
    dry = ws.snakemake("-n", "restop")
    assert dry.returncode == 0, dry.stderr
    assert job_stats(dry.stdout + dry.stderr) == {"restop": 1, "total": 1}
    res = ws.snakemake("--cores", "2", "restop", timeout=900)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    assert "rule train" not in res.stdout + res.stderr
    for path in runs:
        df = pd.read_parquet(path)
        assert df[col].notna().all(), path
    log = (results / "logs" / "restop.log").read_text()
    assert "tabbench restop: 4 runs files gained columns" in log
    summary = pd.read_parquet(results / "summary" / "summary.parquet")
    assert f"{METRIC_LABEL}+TS" in set(summary["method"])
    # the study's own command plans no training after it either (selection only)
    after = ws.snakemake("-n", *config)
    assert "train" not in job_stats(after.stdout + after.stderr)
