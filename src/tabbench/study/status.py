"""How far is a study? (``tabbench status --results DIR``): jobs done, running and left per
model, the configs recorded and failed, and when the rest will be done.

A **job** is one (model, dataset, split) train job (docs/design.md §1). Read from the folder
alone, through :mod:`tabbench.core.layout`:

- **planned**: the folder's models (``run_config.yaml``) × the data folder's kept datasets
  (``kept.txt``) × its ``n_splits``, as the workflow's train targets are; the data folder is
  the folder's own (recorded in ``run_config.yaml`` when its run started; for a folder without
  that record, its ``data_dir`` beside the results folder), never the working
  directory's, or ``--data``; a ``run_config.yaml`` that lacks a key reads as its default.
  Without a data folder (or a ``run_config.yaml``) only what is on disk is counted, and the
  output says so; a data folder without its kept list (a study trained target by target never
  runs the data stage's collect step) has no plan either, but its processed reports give the
  finished jobs' sizes;
- **done**: its runs file exists (the train job writes it atomically, at its very end);
- **running**: a part folder without the runs file: a job in progress, *or one that was killed*
  (it resumes from there); the folder cannot tell which;
- **left**: planned, neither done nor running.

**Time left** (:mod:`tabbench.study.cost_model`, fit on this folder's finished jobs): per model, the
predicted wall seconds of every config still to train (all configs of a job left, the configs
of a running job without a part file; the config in progress counts whole) at its dataset's
size (``datasets.csv`` of the data folder), summed, then divided by the number of jobs that ran
at once (:func:`jobs_in_flight`, measured on the latest finished jobs, or ``--workers``). The
measured walls already hold this machine's speed and load. A model with fewer than
:data:`MIN_FIT_JOBS` finished jobs over :data:`MIN_FIT_DATASETS` datasets in a regime it still
has to train gets no prediction ("not enough finished jobs to predict"), and the total says it
leaves that model out.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.core.failures import read_failures, read_part_failures
from tabbench.core.layout import (
    DataLayout,
    PathLike,
    ResultsLayout,
    part_configs,
    part_folders,
    part_records,
    runs_files_by_pair,
)
from tabbench.data.pipeline import read_kept
from tabbench.data.splits import split_sizes
from tabbench.models.registry import n_epochs_for
from tabbench.settings.folder import FolderError, ResultsFolder
from tabbench.settings.presets import n_configs_for
from tabbench.study import cost_model

#: a (model, regime) is predicted from at least this many finished jobs ...
MIN_FIT_JOBS = 3
#: ... over at least this many datasets: one or two say little about size (left one dataset
#: out, benchmarks/cost_model_holdout.py on the bundled study: the networks, fit on one other
#: dataset, missed by up to 6x; the boosters, fit on 9-11, by at most 3.4x per dataset and
#: 0.9-1.3x summed)
MIN_FIT_DATASETS = 3
#: the latest finished jobs whose overlap measures the jobs in flight
RECENT_JOBS = 50

Job = tuple[str, str, int]


class StatusError(ValueError):
    """A results folder that cannot be read (its message is one line)."""


@dataclass
class ModelStatus:
    """One model's progress (module docstring for the words)."""

    model: str
    #: None when not known (no data folder with a kept list, or no run_config.yaml)
    planned: int | None
    done: int
    running: int
    left: int | None
    #: configs with records, in the finished runs files and the part folders
    configs_recorded: int
    configs_failed: int
    #: error type -> failed configs
    failure_reasons: dict[str, int] = field(default_factory=dict)
    #: finished jobs on disk that the settings do not plan (e.g. a dataset excluded since)
    not_planned: int = 0
    #: finished jobs (and their datasets) the prediction was fit on
    fit_jobs: int = 0
    fit_datasets: int = 0
    #: predicted wall seconds of what is left, one job at a time (None: not predicted)
    seconds_left: float | None = None
    #: why there is no prediction (None: predicted, or nothing left)
    no_prediction: str | None = None


@dataclass
class StudyStatus:
    """A results folder's progress (:func:`study_status`)."""

    results: str
    data_dir: str | None
    preset: str | None
    n_datasets: int | None
    n_splits: int | None
    models: list[ModelStatus]
    #: jobs that ran at once (None: no finished job to measure it on), and how it was found
    workers: float | None
    workers_from: str
    #: predicted wall seconds until the predicted models are done (None: nothing predicted)
    seconds_left: float | None
    #: models with work left and no prediction (the total leaves them out)
    not_predicted: list[str]
    #: when it was computed (ISO 8601) and the predicted end
    now: str
    ends: str | None
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2)


# --- the data folder ---------------------------------------------------------------------------


def find_data_dir(folder: ResultsFolder, given: PathLike | None = None,
                  on_disk: Iterable[str] = ()) -> tuple[Path | None, list[str]]:
    """The data folder of the results folder ``folder`` and notes on how it was found:
    ``given`` (``--data``), which must hold a kept list, else the folder's own
    (:attr:`tabbench.settings.folder.ResultsFolder.data_dir`: recorded when its run started,
    never the working directory's). None (with a note saying why) where that folder has no
    kept list."""
    if given is not None:
        path = Path(given)
        if not Path(DataLayout(path).kept).is_file():
            raise StatusError(f"--data {given}: no {Path(DataLayout(path).kept).name} there (the "
                              "data stage writes it); give the study's data_dir")
        return path, []
    path = folder.data_dir
    if not Path(DataLayout(path).kept).is_file():
        if path.is_dir():
            return None, [f"data folder {path} has no {Path(DataLayout(path).kept).name} "
                          "(the data stage's collect step has not run there, e.g. a study "
                          "trained target by target): the planned jobs are unknown, only what "
                          "is on disk is counted; `snakemake data` writes it"]
        return None, [f"data folder {path} not found: the planned jobs are unknown, only what "
                      "is on disk is counted; give --data DIR"]
    if not set(on_disk) <= set(read_kept(DataLayout(path).kept)):
        return path, [f"{path} does not keep every dataset on disk: is it this study's data "
                      "folder? (--data DIR to name it)"]
    return path, []


_SIZE_FIELDS = ["rows_final", "n_num", "n_cat", "n_classes"]


def _processed_reports(data_dir: PathLike, skip: Iterable[str]) -> pd.DataFrame:
    """The size fields of each processed dataset's report (``processed/<ds>.json``, the rows
    ``datasets.csv`` is assembled from) for the datasets not in ``skip``: a study run for a few
    targets processes those datasets but never writes the folder-wide table."""
    skip = set(skip)
    rows = []
    for path in sorted(Path(DataLayout(data_dir).processed_dir).glob("*.json")):
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            continue  # a report being written or broken: the data stage says so, not status
        if (isinstance(report, dict) and report.get("kept")
                and str(report.get("dataset")) not in skip):
            rows.append({"dataset": str(report["dataset"]),
                         **{k: report.get(k) for k in _SIZE_FIELDS}})
    return pd.DataFrame(rows, columns=["dataset", *_SIZE_FIELDS])


def dataset_sizes(data_dir: PathLike | None) -> pd.DataFrame:
    """Per kept dataset of a data folder: training rows of a split, features and classes,
    indexed by dataset; empty without a folder. From its ``datasets.csv``, and for the datasets
    that table lacks (or all, when the data stage has not written it) from their processed
    reports, so that a study trained target by target still has its jobs' sizes."""
    columns = ["n_train", "n_features", "n_classes"]
    if data_dir is None:
        return pd.DataFrame(columns=columns, index=pd.Index([], name="dataset"))
    path = Path(DataLayout(data_dir).datasets_csv)
    table = (pd.read_csv(path)[["dataset", *_SIZE_FIELDS]] if path.is_file()
             else pd.DataFrame(columns=["dataset", *_SIZE_FIELDS]))
    reports = _processed_reports(data_dir, table["dataset"].astype(str))
    df = pd.concat([d for d in (table, reports) if len(d)] or [table], ignore_index=True)
    df[_SIZE_FIELDS] = df[_SIZE_FIELDS].apply(pd.to_numeric, errors="coerce")
    df = df.dropna(subset=_SIZE_FIELDS)
    df = df[df["rows_final"] > 0]
    return pd.DataFrame({
        "n_train": [split_sizes(int(n))[0] for n in df["rows_final"]],
        "n_features": (df["n_num"] + df["n_cat"]).clip(lower=1).astype(int).to_numpy(),
        "n_classes": df["n_classes"].astype(int).to_numpy()},
        index=pd.Index(df["dataset"].astype(str), name="dataset"))[columns]


# --- how many jobs run at once -----------------------------------------------------------------


def jobs_in_flight(intervals: Sequence[tuple[float, float]]) -> float | None:
    """Mean number of jobs running at once over ``intervals`` ((start, end) of each job): their
    summed durations over the time at least one ran (gaps when none ran do not count). None
    without a job of positive length."""
    spans = sorted((a, b) for a, b in intervals if b > a)
    if not spans:
        return None
    busy, covered = sum(b - a for a, b in spans), 0.0
    lo, hi = spans[0]
    for a, b in spans[1:]:
        if a > hi:
            covered += hi - lo
            lo, hi = a, b
        else:
            hi = max(hi, b)
    covered += hi - lo
    return busy / covered


def _job_intervals(meas: pd.DataFrame, runs: Mapping[Job, Path]) -> list[tuple[float, float]]:
    """(start, end) of the latest :data:`RECENT_JOBS` finished jobs: end = when its runs file was
    written (its last act), start = end − its configs' wall seconds."""
    walls = meas.groupby(["model", "dataset", "split"])["wall"].sum()
    ends = sorted(((runs[job].stat().st_mtime, float(w)) for job, w in walls.items()
                   if job in runs), reverse=True)[:RECENT_JOBS]
    return [(end - wall, end) for end, wall in ends]


# --- the status --------------------------------------------------------------------------------


def _open(results: PathLike) -> ResultsFolder:
    try:
        return ResultsFolder.open(results)
    except FolderError as e:
        raise StatusError(str(e)) from None


def _remaining_configs(n_configs: int, done: Iterable[int]) -> list[int]:
    return sorted(set(range(n_configs + 1)) - set(done))


def study_status(results: PathLike, data_dir: PathLike | None = None,
                 workers: float | None = None,
                 now: _dt.datetime | None = None) -> StudyStatus:
    """The progress of the results folder ``results`` (module docstring); ``data_dir``
    overrides the folder's own, ``workers`` the measured jobs in flight."""
    root = Path(results)
    if not root.is_dir():
        raise StatusError(f"{results}: no such results folder")
    if workers is not None and not workers > 0:
        raise StatusError(f"--workers must be > 0, got {workers}")
    now = now or _dt.datetime.now().astimezone()
    folder = _open(root)
    cfg = folder.config
    notes: list[str] = []
    runs: dict[Job, Path] = {(m, d, s): p for (m, d), by in runs_files_by_pair(root).items()
                             for s, p in by.items()}
    parts = {job: p for job, p in part_folders(root).items() if job not in runs}
    on_disk_datasets = {d for _, d, _ in [*runs, *parts]}

    if cfg is None:
        notes.append(f"no {Path(folder.settings_file).name}: the settings are "
                     "unknown, only what is on disk is counted and nothing is predicted")
        data = None
    else:
        data, found = find_data_dir(folder, data_dir, on_disk_datasets)
        notes += found
    kept = read_kept(DataLayout(data).kept) if data is not None else None
    # without a kept list the plan is unknown, but a data folder's processed reports still give
    # the finished jobs' sizes, so the cost model can be fit and reported
    unlisted = (folder.data_dir
                if data is None and cfg is not None and data_dir is None else None)
    sizes = dataset_sizes(data if data is not None else
                          (unlisted if unlisted is not None and unlisted.is_dir() else None))
    n_splits = int(cfg["n_splits"]) if cfg and cfg.get("n_splits") else None
    models = list(cfg.get("models") or []) if cfg else []
    models += sorted({m for m, _, _ in [*runs, *parts]} - set(models))

    meas = cost_model.measurements(root, sizes["n_features"].to_dict())
    coefs = cost_model.fit_costs(meas) if not meas.empty else {}
    failures = pd.concat([read_failures(ResultsLayout(root).runs_dir, runs),
                          read_part_failures(parts)], ignore_index=True)
    failures_jobs = list(zip(failures["model"], failures["dataset"], failures["split"],
                             strict=True))
    by_job = meas.groupby(["model", "dataset", "split"]).size().to_dict()
    points = cost_model.fit_points(meas) if not meas.empty else meas

    out = []
    for model in models:
        planned_model = cfg is not None and model in (cfg.get("models") or [])
        planned = ({(model, d, s) for d in kept for s in range(n_splits)}
                   if planned_model and kept is not None and n_splits else None)
        done = {j for j in runs if j[0] == model}
        running = {j for j in parts if j[0] == model}
        extra = done - planned if planned is not None else set()
        if planned is not None:
            done, running = done & planned, running & planned
        left = planned - done - running if planned is not None else None
        recorded = sum(by_job.get(j, 0) for j in done)
        recorded += sum(part_records(parts[j], c).exists() for j in running
                        for c in part_configs(parts[j]))
        fails = failures.loc[np.array([j in done or j in running for j in failures_jobs],
                                      dtype=bool)]
        status = ModelStatus(
            model, None if planned is None else len(planned), len(done), len(running),
            None if left is None else len(left), recorded, len(fails),
            {str(k): int(v) for k, v in fails["error_type"].value_counts().sort_index().items()},
            len(extra))
        fit = points[points["model"] == model]
        status.fit_jobs = int(fit[["dataset", "split"]].drop_duplicates().shape[0])
        status.fit_datasets = int(fit["dataset"].nunique())
        if planned_model:
            todo = {j: _remaining_configs(n_configs_for(cfg, model), part_configs(parts[j]))
                    for j in running}
            todo.update({j: _remaining_configs(n_configs_for(cfg, model), ())
                         for j in (left or ())})
            if todo:
                status.seconds_left, status.no_prediction = _predict(
                    model, todo, fit, coefs, sizes, cfg["epochs"], left is None)
            elif left is not None:
                status.seconds_left = 0.0
        out.append(status)

    used, how = _workers(workers, meas, runs)
    predicted = [m.seconds_left for m in out if m.seconds_left is not None]
    not_predicted = [m.model for m in out if m.no_prediction is not None]
    seconds = sum(predicted) / used if predicted and used else None
    ends = (now + _dt.timedelta(seconds=seconds)).isoformat(timespec="minutes") \
        if seconds is not None else None
    return StudyStatus(str(results), None if data is None else str(data),
                       cfg.get("preset") if cfg else None, None if kept is None else len(kept),
                       n_splits, out, used, how, seconds, not_predicted,
                       now.isoformat(timespec="minutes"), ends, notes)


def _workers(given: float | None, meas: pd.DataFrame, runs: Mapping[Job, Path]
             ) -> tuple[float | None, str]:
    """The jobs in flight to divide the job time by, and where the number comes from."""
    if given is not None:
        return float(given), "given (--workers)"
    measured = jobs_in_flight(_job_intervals(meas, runs)) if not meas.empty else None
    if measured is None:
        return None, "no finished job to measure it on (--workers N to set it)"
    return measured, f"measured: the overlap of the latest {min(len(runs), RECENT_JOBS)} " \
                     "finished jobs"


def _predict(model: str, todo: Mapping[Job, list[int]], fit: pd.DataFrame,
             coefs: Mapping[tuple[str, str], np.ndarray], sizes: pd.DataFrame,
             epochs: Mapping[str, int], planned_unknown: bool) -> tuple[float | None, str | None]:
    """Predicted wall seconds of the configs ``todo`` (job -> configs), or why not (``fit``:
    the model's :func:`tabbench.study.cost_model.fit_points`)."""
    if planned_unknown:
        return None, "the jobs left are unknown (no kept list of a data folder)"
    needed = {cost_model.regime_of(c) for cs in todo.values() for c in cs}
    for regime in sorted(needed):
        g = fit[fit["regime"] == regime]  # one row per job (cost_model.fit_points)
        jobs, datasets = len(g), g["dataset"].nunique()
        if (model, regime) not in coefs or jobs < MIN_FIT_JOBS or datasets < MIN_FIT_DATASETS:
            return None, (f"not enough finished jobs to predict ({jobs} with {regime} configs "
                          f"over {datasets} datasets; needs {MIN_FIT_JOBS} over "
                          f"{MIN_FIT_DATASETS})")
    missing = sorted({d for _, d, _ in todo} - set(sizes.index))
    if missing:
        return None, f"no size for {', '.join(missing[:3])} in the data folder's datasets.csv"
    try:
        n_epochs = {c: n_epochs_for(model, c, epochs) for cs in todo.values() for c in cs}
    except ValueError as e:  # e.g. a plugin's model, not installed here
        return None, f"its epochs are unknown here: {e}"
    total = 0.0
    for (_, dataset, _), configs in todo.items():
        size = sizes.loc[dataset]
        for c in configs:
            s_epoch = cost_model.seconds_per_epoch(coefs[(model, cost_model.regime_of(c))],
                                                   size["n_train"], size["n_features"],
                                                   size["n_classes"])[0]
            total += float(s_epoch) * n_epochs[c]
    return total, None


# --- the table ---------------------------------------------------------------------------------


def hours_text(seconds: float | None) -> str:
    """A duration as the status prints it: minutes under an hour, else hours; "–" for None."""
    if seconds is None:
        return "–"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def render(status: StudyStatus) -> str:
    """The status as a compact table with its legend and the time left."""
    head = f"{status.results}"
    if status.preset:
        head += f": preset {status.preset}"
    if status.n_datasets is not None and status.n_splits:
        head += f", {status.n_datasets} datasets × {status.n_splits} splits"
    if status.data_dir:
        head += f" (data: {status.data_dir})"
    lines = [head, ""]

    def n(value: int | None) -> str:
        return "?" if value is None else str(value)

    rows = [("model", "done", "running", "left", "planned", "configs", "failed",
             "job time left", "fit on")]
    for m in status.models:
        fit = f"{m.fit_jobs} jobs, {m.fit_datasets} datasets" if m.fit_jobs else "–"
        rows.append((m.model, str(m.done), str(m.running), n(m.left), n(m.planned),
                     str(m.configs_recorded), str(m.configs_failed), hours_text(m.seconds_left),
                     fit))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        lines.append("  ".join(c.ljust(w) if i in (0, 8) else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())
    lines += ["", "running: a part folder without its runs file (a job in progress, or killed: "
              "it resumes there)",
              "configs: recorded in runs and part files; job time: one job at a time, "
              "predicted from the finished jobs (fit on)"]
    for m in status.models:
        if m.failure_reasons:
            reasons = ", ".join(f"{k} × {v}" for k, v in m.failure_reasons.items())
            lines.append(f"{m.model}: {m.configs_failed} configs failed ({reasons}); their "
                         "errors: runs/<model>/<dataset>/split<i>.failures.json")
        if m.not_planned:
            lines.append(f"{m.model}: {m.not_planned} finished jobs on disk that the settings "
                         "do not plan (not counted above)")
        if m.no_prediction:
            lines.append(f"{m.model}: no time predicted: {m.no_prediction}")
    if all(m.left == 0 and m.running == 0 for m in status.models):
        lines.append("nothing left to train")
    elif status.seconds_left is not None:
        which = ""
        if status.not_predicted:
            which = " for " + ", ".join(m.model for m in status.models
                                        if m.seconds_left is not None)
        lines.append(f"time left{which} ≈ {hours_text(status.seconds_left)} at "
                     f"{status.workers:.1f} jobs in flight ({status.workers_from}): done "
                     f"around {status.ends}")
        if status.not_predicted:
            lines.append(f"{', '.join(status.not_predicted)} not predicted: the study ends "
                         "later than that")
    elif status.not_predicted:
        lines.append("time left: not predicted (" + ", ".join(status.not_predicted) + ")")
    lines += status.notes
    return "\n".join(lines)
