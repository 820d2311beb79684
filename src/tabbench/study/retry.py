"""Retrain the failed configs of finished train jobs, and only those (``tabbench retry-failed
--results DIR``, then ``snakemake``; config ``retry_failed`` for jobs still in progress).

A train job records a config that fails (an exception, a CUDA out-of-memory) in its failures
sidecar and goes on; Snakemake then sees a finished job and never runs it again. A job that is
still in progress keeps its failures in its part folder, and with ``retry_failed: true`` a
resume trains them again (:func:`tabbench.study.train_job.run_train_job`). For a *finished* job this
module reopens it: the runs file is turned back into the part folder it was made from, minus
the failures, so the next ``snakemake`` run finds the runs file missing, plans its train job,
and that job resumes from the part folder: it retrains the failed configs only, keeps every
recorded one as it is (same records, same provenance), and writes the runs file again (the
selection, summary and figures follow as after any train job).

Reopening is safe to interrupt: the part folder is built under a temporary name and renamed in
place (atomic) before the runs file and its failures sidecar are removed; a job whose part
folder already exists (in progress, or already reopened) is left alone. The part folder's
identity (``job.json``) is the one the train job would write (:func:`tabbench.study.train_job
.job_identity`, with the seed and trainer options of the folder's ``run_config.yaml`` and the
training path of the runs file's provenance), so the resumed job adopts the records; were it
to differ, the job would retrain every config (correct, only slower). What the job kept for
re-stopping (:mod:`tabbench.study.restop_store`) goes back into the part folder too, so the
finished job
still keeps every config whole.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

from tabbench.core.io import read_parquet, write_json_atomic, write_parquet_atomic
from tabbench.core.layout import (
    PART_IDENTITY,
    ResultsLayout,
    failures_path,
    parse_runs_file,
    part_dir,
    part_records,
)
from tabbench.core.provenance import read_runs_provenance, to_parquet_metadata
from tabbench.models.registry import get_model, non_default_options
from tabbench.models.stacked.plan import SEQUENTIAL
from tabbench.settings.folder import FolderError, ResultsFolder
from tabbench.study import restop_store
from tabbench.study.parts import job_identity


class RetryError(Exception):
    """A results folder whose failed jobs cannot be reopened (one-line message)."""


@dataclass
class Reopened:
    """One finished job reopened to retrain its failed configs."""

    runs: str
    failed_configs: list[int]
    errors: list[str]
    recorded_configs: list[int] = field(default_factory=list)


def failed_configs(runs_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The failures sidecar of a finished runs file ([] when none, or no sidecar)."""
    try:
        failures = json.loads(failures_path(runs_path).read_text())
    except FileNotFoundError:
        return []
    except ValueError as err:
        raise RetryError(f"{failures_path(runs_path)} is not valid JSON ({err}); rebuild it with "
                         f"snakemake --forcerun train") from err
    return list(failures or [])


def _identity(runs_path: Path, model: str, dataset: str, split: int,
              settings: Mapping[str, Any]) -> dict[str, Any]:
    """The identity the train job of ``runs_path`` writes (``job.json``)."""

    spec = get_model(model)
    options = {o.name: settings.get(o.config_key(model), o.default) for o in spec.options}
    prov = read_runs_provenance(runs_path) or {}
    path = prov.get("training") if isinstance(prov.get("training"), str) else SEQUENTIAL
    return job_identity(model, dataset, split, int(settings["seed"]),
                        non_default_options(model, options), path)


def reopen_job(runs_path: str | os.PathLike[str], settings: Mapping[str, Any]) -> Reopened | None:
    """Turn a finished runs file with failed configs back into its part folder without the
    failures (module docstring); None when it has no failure or its part folder exists."""
    runs_path = Path(runs_path)
    failures = failed_configs(runs_path)
    parts = part_dir(runs_path)
    if not failures or parts.exists():
        return None
    parsed = parse_runs_file(runs_path)
    if parsed is None:
        raise RetryError(f"{runs_path} is not a runs file (runs/<model>/<dataset>/split<i>"
                         ".parquet)")
    model, dataset, split = parsed
    records = read_parquet(runs_path)
    prov = read_runs_provenance(runs_path)
    tmp = parts.with_name(f".{parts.name}.reopen.tmp")
    shutil.rmtree(tmp, ignore_errors=True)  # a reopening killed before its rename
    tmp.mkdir(parents=True)
    write_json_atomic(_identity(runs_path, model, dataset, split, settings),
                      tmp / PART_IDENTITY)
    configs: dict[int, tuple[str, int]] = {}
    for c, frame in records.groupby("config", sort=True):
        frame = frame.reset_index(drop=True)
        write_parquet_atomic(frame, part_records(tmp, int(c)),
                             None if prov is None else to_parquet_metadata(prov))
        configs[int(c)] = (str(frame["params"].iloc[0]), len(frame))
    restop_store.reopen(runs_path, tmp, configs)
    os.replace(tmp, parts)  # the part folder appears whole, or not at all
    # only now: the next snakemake run sees the runs file missing and resumes from the parts
    failures_path(runs_path).unlink(missing_ok=True)
    runs_path.unlink()
    return Reopened(os.fspath(runs_path), sorted(int(f["config"]) for f in failures),
                    [f"config {f['config']}: {f.get('error_type')}: {f.get('message')}"
                     for f in failures], sorted(configs))


def reopen_failed(results: str | os.PathLike[str], progress: TextIO | None = None
                  ) -> list[Reopened]:
    """Reopen every finished job of ``results`` that recorded failed configs; write the list
    to ``<results>/retry_failed.json`` and return it."""
    stream = sys.stderr if progress is None else progress
    layout = ResultsLayout(results)
    try:
        settings = ResultsFolder.open(results).required_config(
            "the failed configs' job identity (seed, trainer options) comes from it; run "
            "snakemake on this folder once first")
    except FolderError as e:
        raise RetryError(str(e)) from None
    done = []
    for path in sorted(Path(layout.runs_dir).glob("*/*/split*.parquet")):
        if parse_runs_file(path) is None:
            continue
        job = reopen_job(path, settings)
        if job is not None:
            done.append(job)
            print(f"reopened {path}: configs {job.failed_configs} will be retrained "
                  f"({len(job.recorded_configs)} recorded configs kept)", file=stream, flush=True)
    write_json_atomic([asdict(j) for j in done], layout.retry_report)
    return done

