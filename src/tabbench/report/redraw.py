"""Regenerate summary tables and figures from a results folder, without Snakemake.

The folder may come from anywhere (a colleague's run, a cluster): it is only read, never
written. Which (model, dataset) are used is the one rule of
:func:`tabbench.core.layout.complete_results`
(the one ``snakemake figures`` applies too): every split's runs file present, or a selected
file. Per pair the cached ``selected/{model}/{dataset}.parquet`` is used when it is at least as
new as every runs file (or the runs are not all there); otherwise the selection is recomputed in
memory from the runs, in parallel worker processes. A folder holding only ``selected/`` works
too (the Fig. 1 analogue then says that no per-epoch record is available).

Settings that depend on how the folder was produced (the "large" threshold) are read from the
folder itself (:attr:`tabbench.settings.folder.ResultsFolder.redraw_settings`), so the figures
equal those of ``snakemake figures`` on the same folder.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from tabbench.core.layout import (
    META,
    SUMMARY,
    ResultsLayout,
)
from tabbench.data.class_balance import BALANCE_COLUMNS, class_balance
from tabbench.diagnostics.tables import diagnose, read_diagnostics, write_diagnostics
from tabbench.plots import make_figures
from tabbench.report.drawing_state import discover
from tabbench.report.publish import is_published, read_manifest
from tabbench.report.study_description import write_description
from tabbench.settings.folder import FOLDER, ResultsFolder
from tabbench.settings.presets import default_value, scale_note
from tabbench.summary.aggregate import (
    SUMMARY_FILES,
    aggregate_frames,
    load_selected,
    render_texts,
    write_summary,
)
from tabbench.summary.comparisons import ROPE_PERCENT
from tabbench.summary.select import SELECTED_COLUMNS, lacks_columns, select_files
from tabbench.summary.stopping_rules import rule_choices, selected_choices, with_rule_columns
from tabbench.summary.view import view_from_config


def collect_selected(results: str | Path, jobs: int | None = None, reselect: bool = False,
                     patience: Any = FOLDER) -> tuple[pd.DataFrame, dict[str, int]]:
    """All selected rows of a results folder (module docstring), selected again with the
    folder's tie rule (config ``epoch_ties``) where needed; also counts of (reused,
    recomputed) pairs. ``patience``: the stopping rules' setting
    (:func:`tabbench.summary.stopping_rules.patiences_for`; :data:`FOLDER` = the folder's). A
    cached selected file that holds other rules than the setting asks for is selected again
    from its runs (a redraw with other patiences retrains nothing), and so is one that lacks a
    column of :data:`tabbench.summary.select.LATER_COLUMNS`; without runs (a published
    copy) it is used as it is."""

    settings = ResultsFolder.open(results).redraw_settings
    if patience is FOLDER:
        patience = settings.patience
    select_pair = partial(select_files, epoch_ties=settings.epoch_ties, patience=patience)
    pairs = discover(results)
    reuse = [p for p in pairs if p.selected is not None and not reselect and p.selected_is_fresh()]
    frames = []
    for p in list(reuse):
        cached = load_selected([p.selected])
        if p.runs and (set(selected_choices(cached)) != set(rule_choices(p.model, patience))
                       or lacks_columns(cached)):
            reuse.remove(p)  # other rules than asked for, or a column missing: selected again
        else:
            frames.append(cached)
    redo = [p for p in pairs if p not in reuse and p.runs]
    jobs = jobs or os.cpu_count() or 1
    if redo:
        if jobs > 1 and len(redo) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                frames += list(pool.map(select_pair, [p.runs for p in redo], chunksize=4))
        else:
            frames += [select_pair(p.runs) for p in redo]
    frames = [f for f in frames if len(f)]
    selected = (pd.concat(frames, ignore_index=True) if frames
                else with_rule_columns(pd.DataFrame({c: [] for c in SELECTED_COLUMNS})))
    return selected, {"pairs": len(pairs), "reused": len(reuse), "recomputed": len(redo)}


@dataclass(frozen=True)
class Redraw:
    """The redraw settings one drawing gives over the folder's own: the "large" threshold
    (config ``figures_large_rows``), the ROPE in % (``rope_percent``) and what the summary
    compares (``figures_baseline``, ``figures_methods``, ``comparisons``:
    :mod:`tabbench.summary.view`); None or empty: the folder's. ``patience``: the stopping
    rules' setting (:func:`collect_selected`; :data:`FOLDER`: the folder's, where None is a
    value: each model's default patiences)."""

    large_rows: int | None = None
    rope: float | None = None
    view: Mapping[str, Any] = field(default_factory=dict)
    patience: Any = FOLDER


def folder_balance(results: str | Path, datasets: list[str],
                   data: str | Path | None = None) -> pd.DataFrame:
    """The class balance (:func:`tabbench.data.class_balance.class_balance`) of ``datasets``:
    from the data folder ``data``, else the folder's own (its settings say where:
    :attr:`tabbench.settings.folder.ResultsFolder.data_dir`); for a dataset that folder lacks (a
    published copy has none), what the folder's last ``summary/heterogeneity.parquet`` kept."""
    where = Path(data) if data is not None else ResultsFolder.open(results).data_dir
    found = class_balance(where, datasets)
    kept = Path(ResultsLayout(results).summary(SUMMARY_FILES["heterogeneity"]))
    if kept.is_file():
        old = pd.read_parquet(kept).reindex(columns=BALANCE_COLUMNS).dropna()
        old = old[old["dataset"].isin(set(datasets) - set(found["dataset"]))]
        found = pd.concat([found, old.drop_duplicates("dataset")], ignore_index=True)
    return found


def study_of(results: str | Path) -> dict[str, str | None]:
    """The run a results folder holds, for its summary's ``meta.json`` and claims: its preset
    (None: the folder has no ``run_config.yaml``) and, for a reduced-scale run, why it cannot
    judge the paper (:func:`tabbench.settings.presets.scale_note`)."""
    config = ResultsFolder.open(results).config
    if config is None:
        return {"preset": None, "scale_note": None}
    return {"preset": config.get("preset"), "scale_note": scale_note(config)}


def summary_frames(results: str | Path, selected: pd.DataFrame, redraw: Redraw | None = None,
                   data: str | Path | None = None) -> tuple[dict[str, Any], int]:
    """The summary frames (claims included: :func:`tabbench.summary.aggregate.aggregate_frames`) of
    ``selected`` (:func:`collect_selected` of ``results``) with the folder's own settings
    unless ``redraw`` gives them: the "large" threshold (run_config.yaml, or its last summary's
    meta.json, else the setting's default: :func:`tabbench.settings.presets.default_value`),
    the ROPE (else the settings table's) and the view; and the threshold used. What
    :func:`regenerate` writes, and what the test of docs/reproduction.md recomputes. ``data``:
    the data folder the class balance is read from (:func:`folder_balance`; None: the folder's
    own)."""
    redraw = redraw or Redraw()
    large_rows, rope = redraw.large_rows, redraw.rope
    settings = ResultsFolder.open(results).redraw_settings
    if large_rows is None:  # 0 is a threshold (every dataset is large), not "unset"
        large_rows = (default_value("figures_large_rows") if settings.large_rows is None
                      else settings.large_rows)
    if rope is None:
        rope = ROPE_PERCENT if settings.rope_percent is None else settings.rope_percent
    summary_view = view_from_config({**settings.view, **redraw.view})
    runs_dir = Path(ResultsLayout(results).runs_dir)
    balance = folder_balance(results, sorted(set(selected["dataset"])), data)
    frames = aggregate_frames(selected, runs_dir if runs_dir.is_dir() else None, large_rows,
                              rope, summary_view, balance, study_of(results))
    return frames, int(large_rows)


def regenerate(results: str | Path, out: str | Path, redraw: Redraw | None = None,
               jobs: int | None = None, reselect: bool = False, *,
               figures_dir: str | Path | None = None, draw: bool = True,
               data: str | Path | None = None) -> dict[str, float]:
    """Selection (where needed), summary tables (``out/summary/``), the HTML report's opening
    page (``out/summary/study.rst``: :mod:`tabbench.report.study_description`) and every figure
    (``figures_dir``, default ``out/``; the workflow's regenerate job redraws a results folder
    in place: ``out`` = ``results``, ``figures_dir`` = ``results/figures``) from ``results``,
    the diagnostics included (:func:`regenerate_diagnostics`); returns the
    seconds spent per stage, the pair and replay counts and the "large" threshold used:
    ``redraw``'s settings over the folder's own (:func:`summary_frames`).
    ``draw=False`` writes the same tables and no figure: for a caller that keeps only the
    summary (``tabbench publish --onto`` ships no figure; drawing them is most of the time).
    The stopping rules' patiences are ``redraw``'s too (:func:`collect_selected`); ``data``:
    where the class balance is read (:func:`folder_balance`)."""
    results = ResultsFolder.open(results)  # read once: every step below asks it
    t0 = time.perf_counter()
    patience = FOLDER if redraw is None else redraw.patience
    selected, counts = collect_selected(results, jobs, reselect, patience)
    t1 = time.perf_counter()
    frames, large_rows = summary_frames(results, selected, redraw, data)
    if _keep_published_provenance(results, frames["meta"]):
        render_texts(frames)  # with the study's failure counts
    write_summary(frames, Path(out) / SUMMARY)
    figures_dir = Path(out) if figures_dir is None else Path(figures_dir)
    write_description(results, out, selected, frames, figures_dir)
    t2 = time.perf_counter()
    if draw:
        make_figures(frames, figures_dir)
    t3 = time.perf_counter()
    diag = regenerate_diagnostics(results, out, jobs, figures_dir, draw=draw)
    t4 = time.perf_counter()
    return {"select_s": t1 - t0, "aggregate_s": t2 - t1, "figures_s": t3 - t2,
            "diagnostics_s": t4 - t3, "total_s": t4 - t0, **counts, **diag,
            "large_rows": int(large_rows), "rope_percent": float(frames["meta"]["rope_percent"])}


#: the meta.json keys that a published copy cannot recompute (they come from every runs file)
PROVENANCE_KEYS = ("versions", "mixed_versions", "n_runs_files",
                   "n_runs_files_without_provenance", "failures")


def _keep_published_provenance(results: str | Path, meta: dict) -> bool:
    """A published copy (:mod:`tabbench.report.publish`) holds one runs file, not the study's: its
    ``meta.json`` keeps the provenance and the failure counts of every runs file the study had,
    and says it is a copy. Returns whether ``results`` is such a copy."""
    if not is_published(results):
        return False
    shipped = json.loads(Path(ResultsLayout(results).summary(META)).read_text())
    meta.update({k: shipped[k] for k in PROVENANCE_KEYS if k in shipped})
    manifest = read_manifest(results)
    meta["published_copy"] = {k: manifest.get(k) for k in ("source", "published",
                                                           "published_by_commit")}
    return True


def regenerate_diagnostics(results: str | Path, out: str | Path, jobs: int | None = None,
                           figures_dir: str | Path | None = None, *, draw: bool = True
                           ) -> dict[str, int]:
    """Diagnostic tables (``out/summary/diagnostics``) and figures (``figures_dir``, default
    ``out/``; none with ``draw=False``) from the runs of the complete results
    (:func:`tabbench.report.drawing_state.discover`) and the replay files of ``results``
    (docs/diagnostics.md); replays are never run here: missing or stale ones are counted and
    left out. Returns the replay counts.

    A published copy (:mod:`tabbench.report.publish`) ships neither its runs nor its replays but the
    tables computed from them: those are copied and drawn (``diagnostics_from: published``)."""
    # lazy: matplotlib takes ~1 s to import; the workflow's parse imports this module
    from tabbench.plots.diagnostics import make_diagnostic_figures

    mine, theirs = ResultsLayout(out).diagnostics_dir, ResultsLayout(results).diagnostics_dir
    if is_published(results):
        tables = read_diagnostics(theirs)
        if Path(mine).resolve() != Path(theirs).resolve():
            write_diagnostics(tables, mine)
    else:  # the runs of the complete results, as for the paper's figures
        folder = ResultsFolder.open(results)
        pairs = [f"{r.model}/{r.dataset}" for r in folder.complete_results() if r.runs]
        tables = diagnose(results, mine, pairs, folder.n_splits, jobs=jobs)
    if draw:
        make_diagnostic_figures(tables, out if figures_dir is None else figures_dir)
    counts = {f"replay_{k}": v for k, v in tables["meta"]["replay"].items()}
    return {**counts, "diagnostics_from": "published" if is_published(results) else "runs"}
