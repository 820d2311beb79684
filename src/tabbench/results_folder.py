"""Regenerate summary tables and figures from a results folder, without Snakemake.

The folder may come from anywhere (a colleague's run, a cluster): it is only read, never
written. Which (model, dataset) are used is the one rule of :func:`tabbench.layout.complete_results`
(the one ``snakemake figures`` applies too): every split's runs file present, or a selected
file. Per pair the cached ``selected/{model}/{dataset}.parquet`` is used when it is at least as
new as every runs file (or the runs are not all there); otherwise the selection is recomputed in
memory from the runs, in parallel worker processes. A folder holding only ``selected/`` works
too (the Fig. 1 analogue then says that no per-epoch record is available).

Settings that depend on how the folder was produced (the "large" threshold) are read from the
folder itself (:func:`tabbench.run_config.folder_settings`), so the figures equal those of
``snakemake figures`` on the same folder.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from tabbench.aggregate import LARGE_ROWS, aggregate_frames, load_selected, write_summary
from tabbench.io import check_parquet
from tabbench.layout import SUMMARY, CachedResult, ResultsLayout, complete_results
from tabbench.select import SELECTED_COLUMNS, select_files

#: what a results folder holds for one complete (model, dataset); the old name
Pair = CachedResult


def discover(results: str | Path, n_splits: int | None = None) -> list[CachedResult]:
    """Every complete (model, dataset) under ``results``
    (:func:`tabbench.layout.complete_results`)."""
    return complete_results(results, n_splits)


def _select(paths: list[Path]) -> pd.DataFrame:
    return select_files(paths)


def collect_selected(results: str | Path, jobs: int | None = None, reselect: bool = False
                     ) -> tuple[pd.DataFrame, dict[str, int]]:
    """All selected rows of a results folder (module docstring); also counts of
    (reused, recomputed) pairs."""
    pairs = discover(results)
    reuse = [p for p in pairs if p.selected is not None and not reselect and p.selected_is_fresh()]
    redo = [p for p in pairs if p not in reuse and p.runs]
    # load_selected reads with pandas: check the footers first, so that a damaged selected
    # file ends the command with one line (io.UnreadableFileError), not a pyarrow traceback
    check_parquet(p.selected for p in reuse if p.selected is not None)
    frames = [load_selected([p.selected for p in reuse])] if reuse else []
    jobs = jobs or os.cpu_count() or 1
    if redo:
        if jobs > 1 and len(redo) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                frames += list(pool.map(_select, [p.runs for p in redo], chunksize=4))
        else:
            frames += [_select(p.runs) for p in redo]
    frames = [f for f in frames if len(f)]
    selected = (pd.concat(frames, ignore_index=True) if frames
                else pd.DataFrame({c: [] for c in SELECTED_COLUMNS}))
    return selected, {"pairs": len(pairs), "reused": len(reuse), "recomputed": len(redo)}


def regenerate(results: str | Path, out: str | Path, large_rows: int | None = None,
               jobs: int | None = None, reselect: bool = False) -> dict[str, float]:
    """Selection (where needed), summary tables (``out/summary/``) and every figure (``out/``)
    from ``results``, the diagnostics included (:func:`regenerate_diagnostics`); returns the
    seconds spent per stage, the pair and replay counts and the "large" threshold used:
    ``large_rows``, else the folder's own (run_config.yaml, or its last summary's meta.json),
    else the paper's 10,000."""
    from tabbench.plots import make_figures
    from tabbench.run_config import folder_settings

    t0 = time.perf_counter()
    if large_rows is None:
        large_rows = folder_settings(results).large_rows or LARGE_ROWS
    selected, counts = collect_selected(results, jobs, reselect)
    t1 = time.perf_counter()
    runs_dir = Path(ResultsLayout(results).runs_dir)
    frames = aggregate_frames(selected, runs_dir if runs_dir.is_dir() else None, large_rows)
    write_summary(frames, Path(out) / SUMMARY)
    t2 = time.perf_counter()
    make_figures(frames, out)
    t3 = time.perf_counter()
    diag = regenerate_diagnostics(results, out, jobs)
    t4 = time.perf_counter()
    return {"select_s": t1 - t0, "aggregate_s": t2 - t1, "figures_s": t3 - t2,
            "diagnostics_s": t4 - t3, "total_s": t4 - t0, **counts, **diag,
            "large_rows": int(large_rows)}


def regenerate_diagnostics(results: str | Path, out: str | Path, jobs: int | None = None
                           ) -> dict[str, int]:
    """Diagnostic tables (``out/summary/diagnostics``) and figures (``out/``) from the runs and
    replay files of ``results`` (docs/diagnostics.md); replays are never run here: missing or
    stale ones are counted and left out. Returns the replay counts."""
    from tabbench.diagnostics.paths import diagnostics_dir
    from tabbench.diagnostics.tables import diagnose
    from tabbench.plots.diagnostics import make_diagnostic_figures

    tables = diagnose(results, diagnostics_dir(out), jobs=jobs)
    make_diagnostic_figures(tables, out)
    return {f"replay_{k}": v for k, v in tables["meta"]["replay"].items()}
