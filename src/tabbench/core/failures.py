"""Failed configs of a results folder, counted (docs/design.md §6): a train job records a config
that failed (an exception, a non-finite loss in the first epoch, out of memory) in its
``split<i>.failures.json`` sidecar and goes on; this module reads the sidecars so that the
summary, ``meta.json`` and the report say how many configs failed, where, and why.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tabbench.core.extras import require_extra
from tabbench.core.layout import failures_path, part_configs, part_failure, runs_file
from tabbench.core.markdown import MISSING, markdown_table

require_extra("pipeline", __name__)

import pandas as pd  # noqa: E402  (after the check)

FAILURE_COLUMNS = ["model", "dataset", "split", "config", "error_type", "message",
                   "epochs_done"]


def read_failures(runs_dir: str | os.PathLike[str],
                  pairs: Iterable[tuple[str, str, int]]) -> pd.DataFrame:
    """One row per failed config of the (model, dataset, split) ``pairs`` whose sidecar exists
    (columns :data:`FAILURE_COLUMNS`); a missing or unreadable sidecar counts no failure."""
    rows = []
    for model, dataset, split in pairs:
        path = failures_path(runs_file(runs_dir, model, dataset, split))
        entries = _read_json(path)
        for f in entries if isinstance(entries, list) else []:
            rows.append(_row(model, dataset, split, f))
    return pd.DataFrame(rows, columns=FAILURE_COLUMNS)


def read_part_failures(parts: Mapping[tuple[str, str, int], str | os.PathLike[str]]
                       ) -> pd.DataFrame:
    """The failed configs of jobs not finished yet, from their part folders
    (``(model, dataset, split) -> part folder``, e.g. :func:`tabbench.core.layout.part_folders`), in
    :func:`read_failures`' columns: a job in progress has already failed these."""
    rows = []
    for (model, dataset, split), folder in parts.items():
        for c in part_configs(folder):
            entry = _read_json(part_failure(folder, c))
            if isinstance(entry, dict):
                rows.append(_row(model, dataset, split, {"config": c, **entry}))
    return pd.DataFrame(rows, columns=FAILURE_COLUMNS)


def _read_json(path: str | os.PathLike[str]) -> Any:
    """A sidecar's content; None for a missing or unreadable one (which counts no failure)."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _row(model: str, dataset: str, split: int, f: Mapping[str, Any]) -> dict[str, Any]:
    return {"model": model, "dataset": dataset, "split": int(split),
            "config": int(f.get("config", -1)), "error_type": str(f.get("error_type", "?")),
            "message": str(f.get("message", ""))[:200],
            "epochs_done": int(f.get("epochs_done", 0))}


def failure_counts(failures: pd.DataFrame, recorded: set[tuple[str, str, int]]
                   ) -> dict[str, Any]:
    """For ``meta.json``: the failed configs in all, and per (model, dataset) their number, the
    splits they happened on, the splits where *every* config failed (failures there, and no
    (model, dataset, split) among ``recorded``, the splits with a selection) and the reasons
    (error type -> count)."""
    by = []
    for (model, dataset), g in failures.groupby(["model", "dataset"], sort=True):
        splits = sorted(int(s) for s in g["split"].unique())
        by.append({"model": str(model), "dataset": str(dataset), "n_configs": int(len(g)),
                   "splits": splits,
                   "splits_without_records": [s for s in splits
                                              if (model, dataset, s) not in recorded],
                   "reasons": {str(k): int(v) for k, v in
                               g["error_type"].value_counts().sort_index().items()}})
    return {"configs": int(len(failures)), "by": by}


def failures_markdown(counts: dict[str, Any]) -> list[str]:
    """The summary's section on failed configs (empty when none failed)."""
    if not counts or not counts.get("configs"):
        return []
    lines = ["## Failed configs", "",
             f"{counts['configs']} configs failed and are left out of every selection (their "
             "error and traceback: `runs/<model>/<dataset>/split<i>.failures.json`).", ""]
    rows = [[r["model"], r["dataset"], str(r["n_configs"]), ", ".join(map(str, r["splits"])),
             ", ".join(map(str, r["splits_without_records"])) or MISSING,
             ", ".join(f"{k} × {v}" for k, v in r["reasons"].items())] for r in counts["by"]]
    lines.append(markdown_table(["model", "dataset", "configs", "splits",
                                 "splits without records", "reasons"], rows, align="llrlll"))
    return lines + [""]
