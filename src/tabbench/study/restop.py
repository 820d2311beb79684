"""Re-stop a finished study on stopping metrics registered after it was trained, without
retraining it (``tabbench restop --results DIR``, ``snakemake restop``; docs/design.md §16).

For every runs file of a results folder and every registered stopping metric whose
``val_<id>`` column the file lacks (a metric a package registered after the study ran), the
column is computed from what the train job kept (:mod:`tabbench.study.restop_store`): every epoch's
validation logits, kept as such or recomputed from a kept booster by the trainer's own
per-round code (:class:`~tabbench.models.base.ModelKeepingTrainer`), scored by the same code
the recorder uses (:func:`tabbench.metrics.registry.stopping_metrics_batched`, on the epochs
the recorder scored: those with a finite ``val_logloss``). The runs file is then rewritten
atomically with the new columns at their place in the column contract
(:func:`tabbench.models.runs_schema.record_columns`); every existing column, and the file's
metadata (its provenance), is unchanged. The selected file of every (model, dataset) whose runs
files changed is then written again (:func:`reselect`), so ``selected/`` never lags behind the
runs files; the summary, the figures and the report follow (``snakemake restop`` redraws them).

**Exactness.** RestopStore models and float32 logits give the metric the very logits training gave
the recorder; float16 logits (jobs whose float32 logits were over ``restop_max_mb``) give
values close to them, not equal (measured: docs/performance.md; smooth metrics within ~1e-4
relative, argmax- and rank-based ones up to ~1e-2). Either way each
re-stopped file passes a self-check first: the validation logloss of every scored epoch,
recomputed from the kept logits, must equal the recorded ``val_logloss`` within
:data:`tabbench.study.restop_store.EXACT_RTOL` (float16:
:data:`tabbench.study.restop_store.FLOAT16_RTOL`); a file that
fails it (other data, other code, a damaged artefact) is left as it is and reported.

A runs file that cannot be re-stopped (nothing kept: keeping was off, the job was over the
cap, or it was trained by a tabbench without re-stopping) is reported with the reason: only
retraining it (``snakemake --forcerun``) adds the column there. Selection then leaves the metric
out for that (model, dataset) and says so.
"""

from __future__ import annotations

import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tabbench.core.io import atomic_path, reading, write_json_atomic
from tabbench.core.layout import (
    DataLayout,
    ResultsLayout,
    parse_runs_file,
    restop_artefact,
    restop_sidecar,
)
from tabbench.data.dataset import load_split_data
from tabbench.metrics.losses import log_softmax
from tabbench.metrics.registry import stopping_metric_ids, stopping_metrics_batched
from tabbench.models.base import ModelKeepingTrainer, TrainContext
from tabbench.models.registry import get_trainer
from tabbench.models.runs_schema import VAL_PREFIX, record_columns, val_column
from tabbench.settings.folder import ResultsFolder
from tabbench.study.restop_store import (
    EXACT_RTOL,
    FLOAT16_RTOL,
    LOGITS,
    MODEL,
    RestopStore,
    iter_stored_logits,
    read_restop_store,
)
from tabbench.summary.select import write_selected

ADDED, UP_TO_DATE, NOT_RESTOPPED = "added", "up to date", "not re-stopped"
#: epochs of kept logits scored per metric call (the recorder's chunks are of this order)
CHUNK_EPOCHS = 256


@dataclass
class FileOutcome:
    """What re-stopping did to one runs file."""

    runs: str
    status: str
    added: list[str] = field(default_factory=list)
    reason: str | None = None
    #: the largest relative difference of the self-check (validation logloss)
    check_rel_diff: float | None = None
    #: how the logits were kept: model, logits float32, logits float16
    kept: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: the study's recorded training time of this split (sum over configs of the last
    #: fit_seconds; it leaves out the recording's own metrics)
    recorded_train_seconds: float = 0.0


class _NotRestoppable(Exception):
    """A runs file cannot be re-stopped, for the message's reason."""


#: what reading a damaged or foreign artefact raises (np.load of a bad zip, a missing array,
#: an array of the wrong shape); the metrics' own errors are bugs and are not caught
_ARTEFACT_ERRORS = (OSError, EOFError, KeyError, IndexError, zipfile.BadZipFile, ValueError)


def missing_metrics(names: Sequence[str]) -> list[str]:
    """The registered stopping metrics (in registry order) without a column in ``names``."""
    have = set(names)
    return [m for m in stopping_metric_ids() if val_column(m) not in have]


def restop_runs_file(runs_path: str | os.PathLike[str], data_dir: str | os.PathLike[str],
                     threads: int = 1, metrics: Sequence[str] | None = None) -> FileOutcome:
    """Add the columns of ``metrics`` (default: every registered one the file lacks) to one
    runs file (module docstring). ``data_dir`` holds the processed data and splits that kept
    models predict on (not read for kept logits)."""
    t0 = time.perf_counter()
    path = Path(runs_path)
    with reading(path):
        names = pq.read_schema(path).names
    todo = missing_metrics(names) if metrics is None else [
        m for m in metrics if val_column(m) not in set(names)]
    out = FileOutcome(os.fspath(path), UP_TO_DATE)
    if not todo:
        return out
    try:
        kept = read_restop_store(path)
        if kept is None:
            raise _NotRestoppable("nothing was kept for re-stopping (trained with "
                                  "keep_for_restop false, or by a tabbench without re-stopping)")
        if not kept.kept:
            raise _NotRestoppable(f"nothing was kept for re-stopping: {kept.reason}")
        parsed = parse_runs_file(path)
        of = tuple(kept.sidecar.get(k) for k in ("model", "dataset", "split"))
        if parsed is not None and of != parsed:
            raise _NotRestoppable(f"{restop_sidecar(path).name} is of {'/'.join(map(str, of))},"
                                  f" not of {'/'.join(map(str, parsed))} (copied over?)")
        with reading(path):
            table = pq.read_table(path)
        columns, worst, kinds, trained = _compute(table, kept, todo, data_dir, threads)
        write_columns(path, table, columns)
    except _NotRestoppable as why:
        out.status, out.reason = NOT_RESTOPPED, str(why)
        out.seconds = time.perf_counter() - t0
        return out
    out.status, out.added = ADDED, [val_column(m) for m in todo]
    out.check_rel_diff, out.kept, out.recorded_train_seconds = worst, kinds, trained
    out.seconds = time.perf_counter() - t0
    return out


def _compute(table: pa.Table, kept: RestopStore, todo: list[str], data_dir: str | os.PathLike[str],
             threads: int) -> tuple[dict[str, np.ndarray], float, list[str], float]:
    """The new columns (id -> values in the table's row order), the self-check's largest
    relative difference, the kinds kept and the recorded training time."""

    n = table.num_rows
    columns = {m: np.full(n, np.nan) for m in todo}
    if n == 0:  # every config failed: the columns exist, with no row
        return columns, 0.0, [], 0.0
    if val_column("logloss") not in table.column_names:
        raise _NotRestoppable("it has no val_logloss column to self-check against")
    config = table.column("config").to_numpy()
    epoch = table.column("epoch").to_numpy()
    logloss = table.column(val_column("logloss")).to_numpy()
    fit = table.column("fit_seconds").to_numpy()
    params = table.column("params").to_pylist()
    y = _read(kept, kept.y_val)
    if int(table.column("n_val")[0].as_py()) != len(y):
        raise _NotRestoppable(f"the kept labels have {len(y)} rows, the records n_val "
                              f"{table.column('n_val')[0].as_py()}")
    worst, kinds, trained, data = 0.0, set(), 0.0, None
    for c in np.unique(config):
        rows = np.flatnonzero(config == c)
        rows = rows[np.argsort(epoch[rows], kind="stable")]
        meta = kept.configs.get(int(c))
        if meta is None:
            raise _NotRestoppable(f"config {c} has records but nothing kept")
        if meta["params"] != params[rows[0]] or int(meta["n_epochs"]) != len(rows):
            raise _NotRestoppable(f"config {c} was kept for other params or epochs than it "
                                  "has records for (retrained since?)")
        rtol = FLOAT16_RTOL if meta.get("dtype") == "float16" else EXACT_RTOL
        kinds.add(meta["kind"] if meta["kind"] == MODEL else f"{LOGITS} {meta['dtype']}")
        trained += float(np.max(fit[rows]))
        if meta["kind"] == MODEL and data is None:
            data = _split_data(table, data_dir, y)
        for first, z in _config_logits(kept, int(c), len(rows), data, threads, table):
            at = rows[first - 1:first - 1 + len(z)]
            scored = np.isfinite(logloss[at])  # the epochs the recorder scored
            finite = np.isfinite(z).all(axis=(1, 2))
            if (scored & ~finite).any():  # e.g. a float16 overflow of logits training scored
                bad = int(epoch[at][scored & ~finite][0])
                raise _NotRestoppable(f"config {c}, epoch {bad}: the kept logits are not finite "
                                      "where the recorded ones were")
            idx = np.flatnonzero(scored)
            if idx.size == 0:
                continue
            zs = z if idx.size == len(z) else z[idx]
            got = stopping_metrics_batched(zs, y, only=todo)
            for m in todo:
                columns[m][at[idx]] = got[m]
            ll = -log_softmax(zs)[:, np.arange(len(y)), y].mean(axis=1)
            rel = np.abs(ll - logloss[at[idx]]) / np.maximum(np.abs(logloss[at[idx]]), 1e-300)
            worst_here = float(np.max(rel))
            if not worst_here <= rtol:
                i = int(np.argmax(rel))
                raise _NotRestoppable(
                    f"self-check failed: config {c}, epoch {int(epoch[at[idx]][i])}: validation "
                    f"logloss of the kept logits {float(ll[i]):.9g} vs recorded "
                    f"{float(logloss[at[idx]][i]):.9g} (relative difference {worst_here:.3g} > "
                    f"{rtol:g}; other data or code than the training's?)")
            worst = max(worst, worst_here)
    return columns, worst, sorted(kinds), trained


def _read(kept: RestopStore, read: Callable[[], Any]) -> Any:
    """``read()`` of the kept artefact; a damaged or foreign one is :class:`_NotRestoppable`."""
    try:
        return read()
    except _ARTEFACT_ERRORS as err:
        raise _NotRestoppable(f"{restop_artefact(kept.runs_path).name} is unreadable or not "
                              f"this file's: {type(err).__name__}: {_first_line(err)}") from err


def _first_line(err: BaseException) -> str:
    """An error's message for a one-line report (XGBoost's carry a whole stack trace)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else ""


def _split_data(table: pa.Table, data_dir: str | os.PathLike[str], y: np.ndarray) -> Any:
    """The split's data that kept models predict on, checked against the kept labels."""

    dataset = str(table.column("dataset")[0].as_py())
    split = int(table.column("split")[0].as_py())
    layout = DataLayout(data_dir)
    processed, splits = layout.processed(dataset), layout.splits(dataset)
    for f in (processed, splits):
        if not Path(f).is_file():
            raise _NotRestoppable(f"kept models predict on the data, and {f} is missing "
                                  "(--data: the study's data_dir)")
    data = load_split_data(processed, splits, split)
    if not np.array_equal(np.asarray(data.y_val), y):
        raise _NotRestoppable(f"the validation labels in {data_dir} differ from the kept ones "
                              "(the data changed since training)")
    return data


def _config_logits(kept: RestopStore, config: int, n_epochs: int, data: Any, threads: int,
                   table: pa.Table) -> Iterator[tuple[int, np.ndarray]]:
    """(first epoch, float32 validation logits (E, N, K)) chunks of one kept config."""
    if kept.configs[config]["kind"] == LOGITS:
        yield from _read(kept, lambda: list(iter_stored_logits(kept, config, CHUNK_EPOCHS)))
        return

    model = str(table.column("model")[0].as_py())
    trainer = get_trainer(model)
    if not isinstance(trainer, ModelKeepingTrainer):
        raise _NotRestoppable(f"a model was kept, but the trainer of {model!r} cannot read it")
    _, blob = _read(kept, lambda: kept.config_array(config))
    # seed: unused by a prediction; n_epochs: the recorded rounds, which the model must have
    ctx = TrainContext(seed=0, n_epochs=n_epochs, threads=int(threads))
    try:
        yield from trainer.kept_val_logits(blob.tobytes(), data, ctx)
    except Exception as err:  # a damaged or foreign artefact: this file is not re-stopped
        raise _NotRestoppable(f"config {config}: the kept model cannot be read: "
                              f"{type(err).__name__}: {_first_line(err)}") from err


def write_columns(path: Path, table: pa.Table, columns: dict[str, np.ndarray]) -> None:
    """Rewrite the runs file ``path`` (read as ``table``) atomically with the ``val_<id>``
    columns of ``columns`` added where :func:`~tabbench.models.runs_schema.record_columns` puts them
    (after the last stopping-metric column when the file has columns the contract does not
    know). Existing columns and the file's metadata are kept as they are; the pandas metadata
    gains the new columns."""
    names = list(table.column_names)
    new = {val_column(m): v for m, v in columns.items()}
    contract = record_columns()
    if set(names) | set(new) <= set(contract):
        order = [c for c in contract if c in set(names) | set(new)]
    else:
        last_val = max((i for i, c in enumerate(names) if c.startswith(VAL_PREFIX)),
                       default=len(names) - 1)
        order = names[:last_val + 1] + list(new) + names[last_val + 1:]
    arrays, fields = [], []
    for c in order:
        if c in new:
            arrays.append(pa.array(new[c], type=pa.float64()))
            fields.append(pa.field(c, pa.float64()))
        else:
            arrays.append(table.column(c))
            fields.append(table.schema.field(c))
    metadata = dict(table.schema.metadata or {})
    if b"pandas" in metadata:
        metadata[b"pandas"] = _pandas_metadata(metadata[b"pandas"], order, set(new))
    out = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))
    with atomic_path(path) as tmp:
        pq.write_table(out, tmp)


def _pandas_metadata(raw: bytes, order: list[str], new: set[str]) -> bytes:
    """pandas' metadata of the runs file with entries for the new float64 columns, in order."""
    meta = json.loads(raw)
    entries = {e.get("name"): e for e in meta.get("columns", [])}
    cols = []
    for c in order:
        cols.append(entries.get(c) if c not in new else
                    {"name": c, "field_name": c, "pandas_type": "float64",
                     "numpy_type": "float64", "metadata": None})
    index = [e for e in meta.get("columns", []) if e.get("name") not in set(order)]
    meta["columns"] = [e for e in cols if e is not None] + index
    return json.dumps(meta).encode()


# --- a results folder ------------------------------------------------------------------------


def runs_files(results: str | os.PathLike[str]) -> list[Path]:
    """Every runs file of a results folder, sorted."""
    root = Path(ResultsLayout(results).runs_dir)
    return sorted(p for p in root.glob("*/*/split*.parquet")
                  if p.is_file() and parse_runs_file(p) is not None)


def study_data_dir(results: str | os.PathLike[str]) -> str:
    """The data folder of a results folder's study, as ``tabbench status`` finds it
    (:attr:`tabbench.settings.folder.ResultsFolder.data_dir`), whether or not it holds the data
    (a kept model's file then says which data is missing)."""

    return os.fspath(ResultsFolder.open(results).data_dir)


def restop_folder(results: str | os.PathLike[str], data_dir: str | os.PathLike[str] | None = None,
                  threads: int = 1, report: str | os.PathLike[str] | None = None,
                  progress: TextIO | None = None, jobs: int = 1) -> dict[str, Any]:
    """Re-stop every runs file of ``results`` (module docstring); write the report (default
    ``<results>/restop.json``) and return it. ``jobs``: runs files re-stopped at once, in as
    many processes (each file is independent; ``threads`` per kept-model prediction)."""
    if int(jobs) < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    stream = progress if progress is not None else sys.stderr
    data_dir = study_data_dir(results) if data_dir is None else os.fspath(data_dir)
    t0 = time.perf_counter()
    outcomes = []
    paths = runs_files(results)
    for path, o in zip(paths, _map_files(paths, data_dir, threads, int(jobs)), strict=True):
        outcomes.append(o)
        model, dataset, split = parse_runs_file(path)  # type: ignore[misc]
        where = f"{model}/{dataset}/split{split}"
        if o.status == ADDED:
            share = (f" ({100 * o.seconds / o.recorded_train_seconds:.1f}% of its recorded "
                     "training time)" if o.recorded_train_seconds > 0 else "")
            print(f"[{where}] added {', '.join(o.added)} in {o.seconds:.2f}s{share}; kept "
                  f"{', '.join(o.kept) or 'nothing (no records)'}, self-check "
                  f"{o.check_rel_diff:.1e}", file=stream, flush=True)
        elif o.status == NOT_RESTOPPED:
            print(f"[{where}] NOT re-stopped: {o.reason}", file=stream, flush=True)
    counts = {s: sum(o.status == s for o in outcomes) for s in (ADDED, UP_TO_DATE, NOT_RESTOPPED)}
    seconds = time.perf_counter() - t0
    trained = sum(o.recorded_train_seconds for o in outcomes)
    result = {
        "metrics": list(stopping_metric_ids()),
        "data_dir": data_dir,
        "counts": counts,
        "seconds": seconds,
        "recorded_train_seconds_restopped": trained,
        "files": [asdict(o) for o in outcomes],
    }
    result["reselected"] = reselect(results, int(jobs))
    write_json_atomic(result, ResultsLayout(results).restop_report if report is None else report)
    print(summary_line(result), file=stream, flush=True)
    return result


def reselect(results: str | os.PathLike[str], jobs: int = 1) -> int:
    """Write the selected file of every complete (model, dataset) of ``results`` whose runs
    files are newer than it (their re-stop added columns) again, as the select rule writes it
    (:func:`tabbench.summary.select.write_selected`, the folder's tie rule and stopping rules);
    returns how many.

    A re-stop changes runs files in place, so without this the selected files would lag behind
    them: every reader that trusts ``selected/`` would miss the new metric, and the next
    ``snakemake`` would plan a select job per pair."""
    folder = ResultsFolder.open(results)
    stale = [r for r in folder.complete_results()
             if r.selected is not None and r.runs and not r.selected_is_fresh()]
    settings = folder.redraw_settings
    write = partial(write_selected, epoch_ties=settings.epoch_ties, patience=settings.patience)
    if jobs == 1 or len(stale) < 2:
        for r in stale:
            write(r.runs, r.selected)
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(stale))) as pool:
            list(pool.map(write, [r.runs for r in stale], [r.selected for r in stale]))
    return len(stale)


def _map_files(paths: list[Path], data_dir: str, threads: int, jobs: int
               ) -> Iterator[FileOutcome]:
    """:func:`restop_runs_file` of each path, in order; in ``jobs`` processes when > 1."""
    if jobs == 1 or len(paths) < 2:
        for path in paths:
            yield restop_runs_file(path, data_dir, threads)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(paths))) as pool:
        yield from pool.map(partial(restop_runs_file, data_dir=data_dir, threads=threads),
                            paths)


def summary_line(result: dict[str, Any]) -> str:
    """One line on what a re-stop did, naming what still needs retraining."""
    c = result["counts"]
    line = (f"tabbench restop: {c[ADDED]} runs files gained columns, {c[UP_TO_DATE]} were up to "
            f"date, {c[NOT_RESTOPPED]} could not be re-stopped ({result['seconds']:.1f}s); "
            f"{result.get('reselected', 0)} selected files written again")
    left = [f["runs"] for f in result["files"] if f["status"] == NOT_RESTOPPED]
    if left:
        shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
        line += (f"; only retraining adds the columns to {shown} (reasons: "
                 "restop.json)")
    return line
