"""Diagnostic tables of a results folder (``tabbench diagnose``; docs/diagnostics.md).

One pass over the splits (:mod:`tabbench.diagnostics.collect`: selection, optimism, regret and
the winner's-curse curve from the runs files; calibrator scores, reliability bins and cost from
the replay files), summaries across datasets (:mod:`tabbench.diagnostics.summaries`) and a
Markdown digest (:mod:`tabbench.diagnostics.digest`), put together and written here.
Everything is read back by :mod:`tabbench.plots.diagnostics`, which never touches ``runs/`` or
``replay/``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.frames import read_frames, write_frames
from tabbench.diagnostics import calibrators as cal
from tabbench.diagnostics.collect import SplitTask, collect, discover_tasks
from tabbench.diagnostics.digest import markdown
from tabbench.diagnostics.paths import DIAGNOSTIC_OTHER_FILES, DIAGNOSTIC_TABLE_FILES
from tabbench.diagnostics.reliability import SUM_COLUMNS
from tabbench.diagnostics.selection_bias import MAIN_TARGET
from tabbench.diagnostics.summaries import (
    empty_frame,
    summarise_calibrators,
    summarise_cost,
    summarise_reliability,
    summarise_selection,
)

#: every file of a diagnostics folder: the tables, the digest and meta.json
FILES: dict[str, str] = {**DIAGNOSTIC_TABLE_FILES, **DIAGNOSTIC_OTHER_FILES}


def diagnostics_frames(tasks: Sequence[SplitTask], jobs: int | None = None) -> dict[str, Any]:
    """Every diagnostic table (``DIAGNOSTIC_TABLE_FILES``), the Markdown digest and ``meta``."""
    raw, status = collect(tasks, jobs)
    return summarised(raw, n_splits=len(tasks), models=sorted({t.model for t in tasks}),
                      n_datasets=len({t.dataset for t in tasks}),
                      replay={k: len(v) for k, v in status.items()}, stale=status["stale"])


def summarised(raw: dict[str, pd.DataFrame], *, n_splits: int, models: list[str],
               n_datasets: int, replay: dict[str, int], stale: list[str]) -> dict[str, Any]:
    """The tables, digest and ``meta`` from the per-split frames of :func:`collect` (``raw``;
    a missing key is an empty table) and the replay counts (``replay``: used/stale/missing,
    ``stale``: the stale ones)."""
    sel = raw.get("selection", pd.DataFrame())
    curve = raw.get("curve", pd.DataFrame())
    scores = raw.get("scores", empty_frame(["model", "dataset", "split", "regime", "stopping",
                                            "calibrator", *cal.SCORES]))
    bins = raw.get("bins", empty_frame(["model", "dataset", "split", "regime", "stopping",
                                        "calibration", "bin", *SUM_COLUMNS]))
    cost = raw.get("cost", empty_frame(["model", "dataset", "split", "replay_seconds",
                                        "study_train_seconds", "recorded_fit_seconds_replayed"]))
    out: dict[str, Any] = {"selection": sel if len(sel) else empty_frame(["model", "dataset"]),
                           "curve": curve if len(curve) else empty_frame(["model", "dataset"]),
                           "scores": scores, "cost": cost}
    out.update(summarise_selection(sel, curve))
    out.update(summarise_calibrators(scores))
    rel, example = summarise_reliability(bins, scores)
    out.update(rel)
    out["cost_summary"] = summarise_cost(cost)
    out["meta"] = {
        "n_splits": n_splits,
        "models": models,
        "n_datasets": n_datasets,
        "replay": replay,
        "stale_replays": stale,
        "example_dataset": example,
        "main_target": MAIN_TARGET,
    }
    out["markdown"] = markdown(out)
    return out


#: the per-split tables a diagnostics folder keeps (the rest are summaries of them)
PER_SPLIT_TABLES = ("selection", "curve", "scores", "cost")


def merged(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """The diagnostics of two folders' disjoint pairs as one (:func:`read_diagnostics` of each;
    a published copy extended by another study's pairs, :mod:`tabbench.report.publish_merge`): their
    per-split tables concatenated and summarised again. Refused (ValueError) when either used
    replays: the reliability bins their diagrams pool are not kept in a diagnostics folder."""
    for tables in (first, second):
        if tables["meta"].get("replay", {}).get("used"):
            raise ValueError("diagnostics computed from replays cannot be merged: the "
                             "reliability bins they pool are not kept in the tables")
    raw = {}
    for key in PER_SPLIT_TABLES:
        parts = [t[key] for t in (first, second) if len(t[key])]
        if parts:
            raw[key] = pd.concat(parts, ignore_index=True)
    ma, mb = first["meta"], second["meta"]
    datasets = set()
    for t in (first, second):
        if "dataset" in t["selection"]:
            datasets |= set(t["selection"]["dataset"])
    return summarised(
        raw, n_splits=int(ma["n_splits"]) + int(mb["n_splits"]),
        models=sorted(set(ma["models"]) | set(mb["models"])), n_datasets=len(datasets),
        replay={k: int(ma["replay"].get(k, 0)) + int(mb["replay"].get(k, 0))
                for k in ("used", "stale", "missing")},
        stale=[*ma.get("stale_replays", []), *mb.get("stale_replays", [])])


def restricted(tables: dict[str, Any], pairs: set[tuple[str, str]],
               default_only: Collection[str] = ()) -> dict[str, Any]:
    """The diagnostics of only the (model, dataset) ``pairs`` of a folder: its per-split tables
    filtered and summarised again (a copy joined to another study for some of its pairs,
    :mod:`tabbench.report.publish_merge`); of the models in ``default_only``, only the default
    regime (rows of another regime, and the curve over tuned configs, are left out). Refused
    like :func:`merged` when it used replays."""
    if tables["meta"].get("replay", {}).get("used"):
        raise ValueError("diagnostics computed from replays cannot be restricted: the "
                         "reliability bins they pool are not kept in the tables")
    raw = {}
    for key in PER_SPLIT_TABLES:
        frame = tables[key]
        if len(frame) and {"model", "dataset"} <= set(frame.columns):
            keep = np.array([(m, d) in pairs for m, d in zip(frame["model"], frame["dataset"],
                                                              strict=True)], dtype=bool)
            only = frame["model"].isin(list(default_only)).to_numpy()
            if "regime" in frame.columns:
                keep &= ~only | (frame["regime"] == "default").to_numpy()
            elif key == "curve":  # the winner's curse over tuned configs: no default regime
                keep &= ~only
            frame = frame[keep].reset_index(drop=True)
        if len(frame):
            raw[key] = frame
    sel = raw.get("selection", pd.DataFrame(columns=["model", "dataset", "split"]))
    return summarised(
        raw, n_splits=len(sel[["model", "dataset", "split"]].drop_duplicates()),
        models=sorted(set(sel["model"])), n_datasets=len(set(sel["dataset"])),
        replay={"used": 0, "stale": 0,
                "missing": len(sel[["model", "dataset", "split"]].drop_duplicates())},
        stale=[])


def write_diagnostics(frames: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write every table, the Markdown and ``meta.json`` into ``out_dir`` atomically."""
    return write_frames(frames, FILES, out_dir)


def read_diagnostics(folder: str | Path) -> dict[str, Any]:
    """What :func:`write_diagnostics` wrote (the diagnostic figures' only input)."""
    return read_frames(FILES, folder)


def diagnose(results: str | Path, out_dir: str | Path, pairs: Sequence[str] | None = None,
             n_splits: int | None = None, jobs: int | None = None) -> dict[str, Any]:
    """Diagnostic tables of ``results`` (module docstring) written to ``out_dir``."""
    frames = diagnostics_frames(discover_tasks(results, pairs, n_splits), jobs)
    write_diagnostics(frames, out_dir)
    return frames
