"""benchmarks/restop_cost.py, the command docs/performance.md's re-stop figures come from: its
measuring run (one job per model kept, one metric re-stopped) and its plan (what keeping
would take for a whole study, the same ``plan_keep`` a train job logs) work on a data folder,
and the plan's logits are the exact size a kept job writes."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

from fixtures.data_fixtures import write_toy_data_folder
from fixtures.jobs import train_job

from tabbench.core.layout import restop_artefact
from tabbench.settings.presets import resolve_config

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "restop_cost.py"


def _run(*args: str) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_measuring_run_keeps_each_job_and_restops_one_metric(tmp_path):
    data = write_toy_data_folder(tmp_path / "data", n=400, n_classes=3, n_splits=1)
    out = _run("--data", str(data.root), "--models", "xgboost", "mlp", "--preset", "smoke",
               "--n-configs", "1", "--keep-only", "--metrics", "brier")
    rows = [line.split() for line in out.splitlines() if line.startswith(("xgboost", "mlp"))]
    assert [r[:2] for r in rows] == [["xgboost", "toy"], ["mlp", "toy"]]
    for row in rows:
        assert row[2] == "–" and row[4] == "–"  # nothing trained without keeping
        assert float(row[5].removesuffix("MB")) > 0  # something kept
        assert re.fullmatch(r"\d+\.\d%", row[7])  # the re-stop, as a share of the training
    assert re.search(r"re-stop of brier: [\d.]+s = [\d.]+% of the training", out)


def test_the_plan_is_the_size_a_kept_network_job_writes(tmp_path):
    data = write_toy_data_folder(tmp_path / "data", n=400, n_classes=3, n_splits=1)
    out = _run("--data", str(data.root), "--preset", "smoke", "--plan", "mlp=1", "xgboost=1")
    mlp = next(line for line in out.splitlines() if line.strip().startswith("mlp"))
    assert "logits float32: toy" in mlp and "over 1 jobs" in mlp
    planned = int(re.search(r"(\d+) bytes", mlp).group(1))
    runs = tmp_path / "r" / "split0.parquet"
    train_job("mlp", "toy", 0, data.processed("toy"), data.splits("toy"), runs, n_configs=1,
              epochs=resolve_config({"preset": "smoke"})["epochs"], seed=0,
              keep_for_restop=True, progress=io.StringIO())
    kept = restop_artefact(runs).stat().st_size
    # what the job keeps: the plan's logits exactly, besides file headers the plan bounds
    assert 0 < planned - kept < 4096 * 2 + 1024, (planned, kept)
    xgb = next(line for line in out.splitlines() if line.strip().startswith("xgboost"))
    assert "model: toy" in xgb
