"""A train job's part folder (``<out>.part/``): each finished config persisted at once, so a
killed job resumes at the first config without one.

A part file is reused only if it matches what the rerun would train: the job's identity
(``job.json``: model, dataset, split, seed, any non-default trainer option, the training path)
and, per config, the same params and number of epochs. File names: :mod:`tabbench.core.layout`.
"""

from __future__ import annotations

import json
import shutil
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from tabbench.core.io import write_json_atomic, write_parquet_atomic
from tabbench.core.layout import (
    PART_IDENTITY,
    PathLike,
    part_configs,
    part_dir,
    part_failure,
    part_records,
)
from tabbench.core.provenance import gather, read_runs_provenance, to_parquet_metadata
from tabbench.models.recorder import check_records, params_json
from tabbench.models.stacked.plan import STACKED

#: config -> (params, epochs): what a job trains
Plan = Mapping[int, tuple[Mapping[str, Any], int]]


def finished_configs(out_path: PathLike) -> list[int]:
    """Configs of a job whose part file (records or failure) is on disk, i.e. done for a
    resume."""
    return part_configs(part_dir(out_path))


def job_identity(model: str, dataset: str, split: int | str, seed: int,
                 changed_options: Mapping[str, Any], path: str) -> dict[str, Any]:
    """A part folder's identity (its ``job.json``): the job's model, dataset, split and seed,
    its non-default trainer options and its training path; absent when at the default or
    sequential, so that a part folder trained at the defaults stays valid whichever options
    exist. Also what :mod:`tabbench.study.retry` writes when it reopens a finished job."""
    identity = {"model": model, "dataset": dataset, "split": int(split), "seed": int(seed)}
    if changed_options:
        identity["trainer_options"] = dict(changed_options)
    if path == STACKED:
        identity["training"] = path
    return identity


def failure_record(config: int, params: Mapping[str, Any], n_epochs: int, done: int,
                   err: BaseException) -> dict[str, Any]:
    """A failed config as its part file and the failures sidecar hold it."""
    return {
        "config": config,
        "params": dict(params),
        "n_epochs": n_epochs,
        "epochs_done": done,
        "error_type": type(err).__name__,
        "message": str(err),
        "traceback": "".join(traceback.format_exception(err)),
    }


class PartFolder:
    """The part folder of the runs file ``out``: the provenance its records are stamped with,
    and what the job keeps there for re-stopping (:class:`tabbench.study.restop_store.KeepPlan`,
    set once
    planned; it changes to "nothing" when keeping is given up)."""

    def __init__(self, out: PathLike, provenance: dict[str, str] | None = None) -> None:
        self.out = Path(out)
        self.path = part_dir(out)
        self.provenance = provenance or {}
        self.keep: Any = None

    def prepare(self, identity: dict[str, Any]) -> None:
        """Create the folder; discard it if it belongs to another job identity; drop the temp
        files of a killed atomic write."""
        job = self.path / PART_IDENTITY
        if job.exists():
            try:
                same = json.loads(job.read_text()) == identity
            except ValueError:
                same = False
            if not same:
                shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        for tmp in self.path.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
        if not job.exists():
            write_json_atomic(identity, job)

    def done(self, config: int, params: Mapping[str, Any], n_epochs: int) -> Any:
        """The finished part of ``config`` (a records frame, or a failure dict) if it matches
        ``params`` and ``n_epochs``; else None (a stale or unreadable part is removed)."""
        ok_file, bad_file = part_records(self.path, config), part_failure(self.path, config)
        if ok_file.exists():
            try:
                df = pd.read_parquet(ok_file)
                check_records(df, {config: n_epochs})
                if (df["params"] == params_json(params)).all():
                    return df
            except Exception:  # unreadable or stale: retrain
                pass
            ok_file.unlink()
        if bad_file.exists():
            try:
                fail = json.loads(bad_file.read_text())
                if fail["params"] == dict(params) and fail["n_epochs"] == n_epochs:
                    return fail
            except (ValueError, KeyError):
                pass
            bad_file.unlink()
        return None

    def forget_failure(self, config: int) -> None:
        """Drop ``config``'s failure, so that it is trained again."""
        part_failure(self.path, config).unlink(missing_ok=True)

    def write_failure(self, config: int, failure: Mapping[str, Any]) -> None:
        write_json_atomic(dict(failure), part_failure(self.path, config))

    def write_records(self, config: int, frame: pd.DataFrame) -> None:
        write_parquet_atomic(frame, part_records(self.path, config), self.provenance)

    def job_provenance(self, plan: Plan) -> dict[str, str]:
        """The runs file's provenance: the one all part files share, or, for a job resumed
        under another environment, every key's values (lists where they differ, named in
        ``mixed``)."""
        provs = []
        for c in plan:
            part = part_records(self.path, c)
            if part.exists():
                provs.append(read_runs_provenance(part))
        known = [p for p in provs if p is not None]
        if not known or all(p == known[0] for p in provs):
            return self.provenance if not known else to_parquet_metadata(known[0])
        summary = gather(provs)
        return to_parquet_metadata({**summary["versions"], "mixed": summary["mixed"]})

    def remove(self) -> None:
        shutil.rmtree(self.path)
