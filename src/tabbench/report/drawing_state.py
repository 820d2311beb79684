"""What a drawing of a results folder reads, and whether what is drawn still shows it.

The pairs a drawing uses (:func:`discover`), the files it reads (:func:`regenerate_inputs`:
the workflow's regenerate job declares them), whether there is anything to draw
(:func:`nothing_to_draw`) and whether the summary, figures and report are older than what
they draw (:func:`stale_drawing`). The workflow asks all of this while it parses, so this
module imports no numerical library: the drawing itself is :mod:`tabbench.report.redraw`.
"""

from __future__ import annotations

import os
from pathlib import Path

from tabbench.core.layout import META, CachedResult, ResultsLayout, replay_sidecar
from tabbench.core.suggest import did_you_mean
from tabbench.settings.folder import ResultsFolder


def discover(results: str | Path) -> list[CachedResult]:
    """Every complete (model, dataset) under ``results``
    (:meth:`tabbench.settings.folder.ResultsFolder.complete_results`)."""
    return ResultsFolder.open(results).complete_results()


def regenerate_inputs(results: str | Path) -> list[Path]:
    """Every file :func:`tabbench.report.redraw.regenerate` reads from ``results``: per
    complete (model, dataset) (:func:`discover`) its selected file and runs files, and the
    replay files (with their sidecars) present for those runs. The workflow's regenerate job
    declares them as its inputs, so that Snakemake redraws when one of them changed or the set
    changed, and only then. (``run_config.yaml`` is not among them: the settings the figures
    depend on reach the job as its params.)"""
    layout = ResultsLayout(results)
    out: list[Path] = []
    for r in discover(results):
        out += ([] if r.selected is None else [r.selected]) + r.runs
        for split in range(len(r.runs)):
            npz = Path(layout.replay(r.model, r.dataset, split))
            if npz.is_file() and replay_sidecar(npz).is_file():
                out += [npz, replay_sidecar(npz)]
    return out


def is_results_folder(path: str | Path) -> bool:
    """Whether ``path`` looks like a results folder: it has its settings, runs or selected
    files (:class:`tabbench.core.layout.ResultsLayout`)."""
    folder = ResultsFolder.open(path)
    return folder.has_settings or any(Path(p).exists() for p in (
        folder.layout.runs_dir, folder.root / "selected"))


def nothing_to_draw(results: str | Path) -> str | None:
    """Why ``results`` has nothing to draw figures from, in one line (None: it has complete
    results, :func:`discover`): a folder that does not exist (with the results folders beside
    it whose names are close: a typo shows) or one without a complete (model, dataset)."""
    if discover(results):
        return None
    folder = Path(results)
    start = ("Run the study first (e.g. `snakemake --cores 2 --config preset=demo`), which "
             "draws them at its end")
    if not folder.is_dir():
        parent = folder.parent if str(folder.parent) else Path(".")
        siblings = ([p.name for p in parent.iterdir() if p.is_dir() and is_results_folder(p)]
                    if parent.is_dir() else [])
        return (f"results folder {os.fspath(results)}/ does not exist"
                f"{did_you_mean(folder.name, siblings)}. {start}, or name a results folder "
                "with --config results_dir=DIR")
    return (f"{os.fspath(results)}/ holds no complete results to draw figures from. {start}, "
            "or point results_dir at a results folder")


def redraw_command(results: str | Path) -> str:
    """The command that redraws the summary, claims, figures and report of ``results`` from
    what it holds (``--config results_dir=`` for a folder other than ``results``, as
    :func:`tabbench.core.layout.rebuild_hint` writes it)."""
    root = Path(results)
    other = "" if root == Path("results") else f" --config results_dir={root}"
    return f"snakemake --cores 1 figures{other}"


def stale_drawing(results: str | Path) -> str | None:
    """Why the summary, claims, figures or report of ``results`` do not show what it holds, in
    one line with the command that redraws them (:func:`redraw_command`); None when they do,
    or when there is nothing to draw. A part is stale where a file the drawing reads
    (:func:`regenerate_inputs`: a pair retrained or selected again, a replay) is newer than it,
    or where it is missing: the summary with its claims and figures (``meta.json``, written
    last of the summary), the report (``report.html``, built after the figures)."""
    inputs = regenerate_inputs(results)
    if not inputs:
        return None
    layout = ResultsLayout(results)
    parts = {"summary, claims and figures": Path(layout.summary(META)),
             "report": Path(layout.report)}
    redraw = f"`{redraw_command(results)}` (nothing is trained)"
    if not any(p.is_file() for p in parts.values()):
        return (f"{os.fspath(results)}/ holds {len(discover(results))} complete (model, dataset)"
                f" results and no summary, claims, figures or report yet: draw them with "
                f"{redraw}")
    newest = max(inputs, key=lambda p: p.stat().st_mtime)
    stale = [name for name, p in parts.items()
             if not p.is_file() or p.stat().st_mtime < newest.stat().st_mtime]
    if not stale:
        return None
    verb = "is" if stale == ["report"] else "are"
    return (f"the {' and the '.join(stale)} of {os.fspath(results)}/ {verb} older than "
            f"{os.fspath(newest)} or missing: redraw with {redraw}")
