"""The examples in examples/ run (with --small, as CI does) and print both stopping rules."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ROW = re.compile(r"^(logloss|ts_ref)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$", re.M)


@pytest.mark.parametrize("library", ["xgboost", "lightgbm", "catboost", "torch", "lightning"])
def test_example_runs(library):
    pytest.importorskip(library)
    script = ROOT / "examples" / f"{library}_refine_then_calibrate.py"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, str(script), "--small", "--threads", "1"],
                         capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    rows = {m.group(1): [float(v) for v in m.groups()[1:]] for m in ROW.finditer(out.stdout)}
    assert set(rows) == {"logloss", "ts_ref"}, out.stdout
    for _best, ll, ll_ts, acc in rows.values():
        assert 0 < ll < 1 and 0 < ll_ts < 1 and 0.5 < acc <= 1, out.stdout
