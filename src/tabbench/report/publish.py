"""A published copy of a results folder: what redraws its summary, claims and figures without
training, small enough to ship in a repository (``tabbench publish``; docs/results/bundled/).

A study's runs files hold every epoch of every config and are far too large to ship (the bundled
study's are about a gigabyte). Its *selected* files are not: one row per (split, regime,
stopping metric), and every summary table, claim and paper figure is computed from them alone
(docs/design.md §7–§8). So the copy keeps:

* ``run_config.yaml`` (how the study was produced: ``tabbench figures`` reads its "large"
  threshold and its ROPE from it) and ``selected/`` (every complete (model, dataset); where
  the folder's selected file is missing or older than its runs, as mid-study before the
  select job ran, the selection is computed into the copy, as ``tabbench figures`` computes
  it for the summary);
* the runs file of the Fig. 1 analogue (the one run the curve is drawn from), as it is;
* ``summary/`` as the study wrote it (but its report page ``study.rst``, which names the folder it
  was drawn from and is written again by ``tabbench figures``), including ``meta.json`` (provenance:
  code and package versions of every runs file it read) and ``summary/diagnostics/`` — the
  diagnostics computed from the complete pairs' runs files and replays, which a copy without them
  cannot recompute, so ``tabbench figures --results`` on a published copy draws the diagnostic
  figures from these tables (and says so);
* ``datasets.csv``, the data stage's dataset table of the folder's data folder (every dataset
  kept, dropped or unavailable and why, its size and the leakage check's result), where that
  folder is on the publishing machine;
* ``PUBLISHED.json``: what was copied, what was left out and why, the sizes, the commit of
  the code that published it, and the study's progress at that moment (``status``:
  :func:`tabbench.study.status.study_status` of the folder; a copy cannot recompute it, having
  no runs or data).

No path of the publishing machine is in the copy (:mod:`tabbench.report.machine_paths`).

Left out: every other runs file, the part folders, replays, figures and the report page (they
are redrawn) and logs.
The copy must stay under a size budget (default 30 MB); :func:`publish` fails before writing if
it would not, and if a complete pair changed after the summary was computed (redraw first).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from tabbench.core.io import write_json_atomic
from tabbench.core.layout import (
    DIAGNOSTICS,
    SUMMARY,
    PathLike,
    ResultsLayout,
    parse_runs_file,
)
from tabbench.core.provenance import code_commit
from tabbench.report.machine_paths import without_machine_paths
from tabbench.report.study_description import DESCRIPTION_FILE
from tabbench.settings.folder import ResultsFolder
from tabbench.study.status import StatusError, study_status
from tabbench.summary.aggregate import load_selected
from tabbench.summary.select import lacks_columns, write_selected
from tabbench.summary.stopping_rules import rule_choices, selected_choices

#: the data stage's dataset table, at the root of a copy
DATASET_TABLE = "datasets.csv"

#: the default size budget of a published copy (what a repository can carry)
MAX_BYTES = 30 * 2**20

#: the summary's report page, left out of every copy, and why
DESCRIPTION_LEFT_OUT = {
    f"{SUMMARY}/{DESCRIPTION_FILE}": "the report's opening page: it names the folder it was "
    "drawn from; written again by `tabbench figures --results`"}


class PublishError(ValueError):
    """The copy cannot be made (nothing complete to publish, or over its size budget)."""


def is_published(results: PathLike) -> bool:
    """Whether ``results`` is a published copy (it has a ``PUBLISHED.json``)."""
    return Path(ResultsLayout(results).published).is_file()


def read_manifest(results: PathLike) -> dict:
    return json.loads(Path(ResultsLayout(results).published).read_text())


def _newest_input(pair) -> float:
    """The mtime of the newest file the summary reads for ``pair`` (its runs, its selection)."""
    files = [*pair.runs, *([] if pair.selected is None else [pair.selected])]
    return max(Path(f).stat().st_mtime for f in files)


def _plan(results: ResultsFolder) -> tuple[list[tuple[Path, Path]], list[tuple[list[Path], Path]],
                                  dict[str, str]]:
    """(source, relative target) of every file to copy but the settings (written by
    :meth:`tabbench.settings.folder.ResultsFolder.copy_settings`); (runs files, relative
    target) of every
    selection to write into the copy (a complete pair whose selected file is missing or older
    than its runs: what ``tabbench figures`` selects in memory, so the copy holds the rows its
    summary was computed from); and what is left out with why. Refused when a complete pair
    changed after the summary was computed (a study still running completes pairs between the
    redraw and the copy): the copy would ship selections its summary and diagnostics lack."""
    folder = ResultsFolder.open(results)
    layout = folder.layout
    files: list[tuple[Path, Path]] = []
    to_select: list[tuple[list[Path], Path]] = []
    summary = Path(layout.summary_dir)
    if not (summary / "meta.json").is_file():
        raise PublishError(f"{summary}/meta.json is missing: run `snakemake figures` (or the "
                           "study) on the folder before publishing it")
    summarised_at = (summary / "meta.json").stat().st_mtime
    patience = folder.redraw_settings.patience
    for pair in folder.complete_results():
        if _newest_input(pair) > summarised_at:
            raise PublishError(
                f"{pair.model}/{pair.dataset} changed after its summary was computed "
                f"({summary}/meta.json): redraw it first (`tabbench figures --results "
                f"{results} --out {results} --figures-dir {results}/figures`, or `snakemake "
                "figures`), then publish")
        selected = Path(layout.selected(pair.model, pair.dataset))
        if pair.selected_is_fresh() and not _other_rules(pair, patience):
            files.append((selected, selected.relative_to(results)))
        else:
            to_select.append(([Path(r) for r in pair.runs], selected.relative_to(results)))
    for f in sorted(p for p in summary.rglob("*") if p.is_file()):
        if f.relative_to(results).as_posix() not in DESCRIPTION_LEFT_OUT:
            files.append((f, f.relative_to(results)))
    table = _dataset_table(results)
    if table is not None:
        files.append((table, Path(DATASET_TABLE)))
    curve = json.loads((summary / "meta.json").read_text()).get("curve_run")
    where = parse_runs_file(curve) if curve else None  # relative to where it was made
    if where is not None:
        path = Path(layout.runs(*where))
        if path.is_file():
            files.append((path, path.relative_to(results)))
    left_out = {
        "runs/ (all but the Fig. 1 run)": "every epoch of every config: far too large to ship; "
        "the summary, claims and figures need only selected/",
        "runs/**/*.part, replay/": "work in progress and the replayed logits: the diagnostics "
        "they feed are shipped as tables (summary/diagnostics/)",
        "figures/, report.html, logs/": "redrawn by `tabbench figures --results` / not needed",
        **DESCRIPTION_LEFT_OUT,
    }
    return files, to_select, left_out


def _dataset_table(results: Path) -> Path | None:
    """The data stage's ``datasets.csv`` of the folder's data folder, if it is on this
    machine."""
    path = Path(ResultsFolder.open(results).data.datasets_csv)
    return path if path.is_file() else None


def _other_rules(pair, patience: object) -> bool:
    """Whether ``pair``'s selected file holds other stopping rules than the folder's setting
    asks for, or lacks a column of :data:`tabbench.summary.select.LATER_COLUMNS`, while its
    runs are there: the summary then
    selected it again in memory (:func:`tabbench.report.redraw.collect_selected`), and
    so does the copy."""
    if not pair.runs:
        return False
    cached = load_selected([pair.selected])
    return (set(selected_choices(cached)) != set(rule_choices(pair.model, patience))
            or lacks_columns(cached))


def progress(results: PathLike) -> dict:
    """The study's progress now (:func:`tabbench.study.status.study_status`), as the manifest keeps
    it: per model jobs done / running / left and the time left predicted, without the paths of
    the publishing machine; ``{"error": ...}`` if the folder's status cannot be read."""

    try:
        status = json.loads(study_status(results).to_json())
    except StatusError as err:
        return {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - auxiliary: recorded, and the copy is still made
        return {"error": f"{type(err).__name__}: {err}"}
    for path_key in ("results", "data_dir"):
        status.pop(path_key, None)
    return status


def publish(results: PathLike, out: PathLike, max_bytes: int = MAX_BYTES) -> dict:
    """Copy the shippable part of ``results`` into ``out`` (module docstring); returns the
    manifest written to ``out/PUBLISHED.json``. ``out`` is replaced as a whole."""

    results, out = Path(results), Path(out)
    folder = ResultsFolder.open(results)
    files, to_select, left_out = _plan(folder)
    settings_file = Path(folder.settings_file)
    total = sum(src.stat().st_size for src, _ in files) + (
        settings_file.stat().st_size if folder.has_settings else 0)
    if total > max_bytes:
        biggest = sorted(files, key=lambda f: -f[0].stat().st_size)[:5]
        raise PublishError(
            f"the copy would take {total / 2**20:.1f} MB, over the budget of "
            f"{max_bytes / 2**20:.0f} MB; largest: "
            + ", ".join(f"{rel} ({src.stat().st_size / 2**20:.1f} MB)" for src, rel in biggest))
    tmp = out.with_name(f".{out.name}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for src, rel in files:
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    # the settings, every absolute path cut to its name (machine_paths)
    shipped = [settings_file.name] if folder.copy_settings(tmp, without_machine_paths) else []
    settings = folder.redraw_settings  # the study's tie rule and patiences, as its select's
    for runs, rel in to_select:
        write_selected(runs, tmp / rel, settings.epoch_ties, settings.patience)
        total += (tmp / rel).stat().st_size
    manifest = {
        # the study folder's name: its absolute path names the publisher's machine, not the study
        "source": Path(results).resolve().name,
        "published": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "published_by_commit": code_commit(),
        "bytes": int(total),
        "files": sorted([*shipped, *(str(rel) for _, rel in [*files, *to_select])]),
        "left_out": left_out,
        "diagnostics": f"{SUMMARY}/{DIAGNOSTICS}/ as computed from the full folder",
        "status": progress(results),
    }
    write_json_atomic(without_machine_paths(manifest),
                      tmp / Path(ResultsLayout(tmp).published).name)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return manifest
