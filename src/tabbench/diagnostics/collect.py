"""The per-split part of the diagnostics: one task per runs file, reduced to small frames.

Each split is reduced in a worker process (:func:`collect`):

* from the runs file (only the columns of :func:`selection_bias.needed_columns`): selection,
  optimism and regret of every (regime, stopping metric), and the winner's-curse curve;
* from the replay file, when there is one and it matches the selection recomputed from the
  runs file (a replay older than a rerun training is *stale* and left out, with a count in
  ``meta.json``): the test scores of every post-hoc calibrator and the reliability-bin sums
  raw and after TS, computed once per distinct selected (config, epoch);
* from the replay sidecar: the replay's cost.

Why a module of its own: this is the only part that reads ``runs/`` and ``replay/`` (and the
only one worth a process pool); :mod:`tabbench.diagnostics.summaries` works on its frames alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.layout import ResultsLayout, replay_sidecar, runs_splits
from tabbench.diagnostics import calibrators as cal
from tabbench.diagnostics.paths import logits_key, replay_key
from tabbench.diagnostics.reliability import SUM_COLUMNS, bin_sums
from tabbench.diagnostics.replay import read_replay
from tabbench.diagnostics.selection_bias import read_columns, split_selection_bias
from tabbench.settings.folder import ResultsFolder
from tabbench.summary.select import DEFAULT_EPOCH_TIES

CALIBRATIONS = {"none": "raw", "ts": "ts"}  # calibrators drawn in the reliability diagrams


@dataclass(frozen=True)
class SplitTask:
    model: str
    dataset: str
    split: int
    runs: Path
    replay: Path | None
    #: the study's tie rule (config ``epoch_ties``): the selection its replay must match
    epoch_ties: str = DEFAULT_EPOCH_TIES


def discover_tasks(results: str | Path, pairs: Sequence[str] | None = None,
                   n_splits: int | None = None) -> list[SplitTask]:
    """One task per runs file of ``results`` (only ``pairs`` "model/dataset" if given, only
    splits ``0..n_splits-1`` if given), with its replay file when one exists and the folder's
    tie rule."""

    ties = ResultsFolder.open(results).redraw_settings.epoch_ties
    layout = ResultsLayout(results)
    root = Path(layout.runs_dir)
    if pairs is None:
        pairs = sorted(f"{p.parent.name}/{p.name}" for p in root.glob("*/*") if p.is_dir())
    tasks = []
    for pair in pairs:
        model, _, dataset = pair.partition("/")
        if not dataset:
            raise ValueError(f"pairs are model/dataset, got {pair!r}")
        splits = runs_splits(layout.runs_dir, model, dataset)
        if n_splits is not None:
            splits = [s for s in splits if s < n_splits]
        for s in splits:
            npz = Path(layout.replay(model, dataset, s))
            ok = npz.exists() and replay_sidecar(npz).exists()
            tasks.append(SplitTask(model, dataset, s, Path(layout.runs(model, dataset, s)),
                                   npz if ok else None, ties))
    return tasks


def _tag(df: pd.DataFrame, model: str, dataset: str) -> pd.DataFrame:
    if df.empty:
        return df
    df.insert(0, "dataset", dataset)
    df.insert(0, "model", model)
    return df


def _replay_frames(task: SplitTask, sel: pd.DataFrame) -> tuple[dict[str, pd.DataFrame], str]:
    """Calibrator scores, reliability sums and cost of one replay file; status "used" or why
    not ("stale": its selections differ from the records')."""

    arrays, side = read_replay(task.replay)
    want = {replay_key(r.regime, r.stopping): (int(r.config), int(r.epoch))
            for r in sel.itertuples()}
    have = {k: (int(v["config"]), int(v["epoch"])) for k, v in side["selections"].items()}
    if want != have:
        return {}, "stale"
    y_val, y_test = arrays["y_val"], arrays["y_test"]
    done: dict[tuple[int, int], tuple[dict, dict]] = {}
    score_rows, bin_rows = [], []
    for entry in side["selections"].values():
        regime, stopping = entry["regime"], entry["stopping"]
        ce = (int(entry["config"]), int(entry["epoch"]))
        if ce not in done:
            val = arrays[logits_key("val", regime, stopping)]
            test = arrays[logits_key("test", regime, stopping)]
            if not (np.isfinite(val).all() and np.isfinite(test).all()):
                continue
            proba = cal.calibrated_test_proba(val, y_val, test)
            done[ce] = (cal.score_calibrated(proba, test, y_test),
                        {c: bin_sums(proba[name], y_test) for name, c in CALIBRATIONS.items()})
        sc, bins = done[ce]
        for name, s in sc.items():
            score_rows.append({"split": task.split, "regime": regime, "stopping": stopping,
                               "config": ce[0], "epoch": ce[1], "calibrator": name, **s})
        for c, sums in bins.items():
            for b in range(len(sums)):
                bin_rows.append({"split": task.split, "regime": regime, "stopping": stopping,
                                 "calibration": c, "bin": b,
                                 **dict(zip(SUM_COLUMNS, sums[b], strict=True))})
    cost = {"split": task.split, **side["cost"], "device": side.get("device"),
            "n_test": int(len(y_test)), "n_classes": int(side.get("n_classes", 0))}
    frames = {"scores": pd.DataFrame(score_rows), "bins": pd.DataFrame(bin_rows),
              "cost": pd.DataFrame([cost])}
    return frames, "used"


def diagnose_split(task: SplitTask) -> dict[str, Any]:
    """Every per-split frame of one task (module docstring) and the replay's status."""
    sel, curve = split_selection_bias(read_columns(task.runs), epoch_ties=task.epoch_ties)
    out: dict[str, Any] = {"selection": sel, "curve": curve}
    status = "missing"
    if task.replay is not None:
        frames, status = _replay_frames(task, sel)
        out.update(frames)
    for key, df in out.items():
        out[key] = _tag(df, task.model, task.dataset)
    out["status"] = status
    out["task"] = f"{task.model}/{task.dataset}/split{task.split}"
    return out


def collect(tasks: Sequence[SplitTask], jobs: int | None = None
            ) -> tuple[dict[str, pd.DataFrame], dict[str, list[str]]]:
    """Per-split frames of all ``tasks`` concatenated; replay status -> tasks."""
    jobs = jobs or os.cpu_count() or 1
    if jobs > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool_:
            results = list(pool_.map(diagnose_split, tasks, chunksize=8))
    else:
        results = [diagnose_split(t) for t in tasks]
    frames: dict[str, list[pd.DataFrame]] = {}
    status: dict[str, list[str]] = {"used": [], "stale": [], "missing": []}
    for r in results:
        status[r["status"]].append(r["task"])
        for key in ("selection", "curve", "scores", "bins", "cost"):
            if key in r and len(r[key]):
                frames.setdefault(key, []).append(r[key])
    return {k: pd.concat(v, ignore_index=True) for k, v in frames.items()}, status
