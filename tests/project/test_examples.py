"""The examples in examples/ run (with --small, as CI does) and print both stopping rules."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.optional import import_optional

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^(logloss|ts_ref)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", re.M)


#: the examples' libraries that are not tabbench's own dependencies, with their extras
EXTRAS = {"catboost": "catboost", "lightning": "lightning"}


@pytest.mark.parametrize("library",
                         ["sklearn", "xgboost", "lightgbm", "catboost", "torch", "lightning"])
def test_example_runs(library):
    if library in EXTRAS:
        import_optional(library, EXTRAS[library])
    script = ROOT / "examples" / f"{library}_refine_then_calibrate.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, str(script), "--small", "--threads", "1"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {m.group(1): [float(v) for v in m.groups()[1:]] for m in ROW.finditer(out.stdout)}
    assert set(rows) == {"logloss", "ts_ref"}, out.stdout
    for _best, ll, ll_ts, acc in rows.values():
        assert 0 < ll < 1 and 0 < ll_ts < 1 and 0.5 < acc <= 1, out.stdout


TRIAL = re.compile(r"^\s*(\d+)\s+(COMPLETE|PRUNED)\s+(\d+)\s+([\d.]+)\s", re.M)
BEST = re.compile(r"^best trial (\d+) \(epoch \d+\): val ts_ref ([\d.]+), test logloss "
                  r"([\d.]+) -> ([\d.]+) after TS", re.M)


def test_optuna_example_reports_every_epoch_and_prunes_on_refinement():
    pytest.importorskip("optuna")
    pytest.importorskip("torch")
    script = ROOT / "examples" / "optuna_tune_on_refinement.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, str(script), "--small", "--threads", "1"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    trials = [(int(n), state, int(epochs), float(v))
              for n, state, epochs, v in TRIAL.findall(out.stdout)]
    assert len(trials) == 8, out.stdout
    pruned = [t for t in trials if t[1] == "PRUNED"]
    assert pruned and all(epochs < 8 for _, _, epochs, _ in pruned), out.stdout
    assert all(epochs >= 1 for _, _, epochs, _ in trials)  # one report per epoch trained
    best = BEST.search(out.stdout)
    assert best, out.stdout
    completed = {n: v for n, state, _, v in trials if state == "COMPLETE"}
    assert int(best.group(1)) == min(completed, key=completed.get)
    assert float(best.group(2)) == pytest.approx(min(completed.values()), abs=1e-4)
    assert 0 < float(best.group(4)) < 1
