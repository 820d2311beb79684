"""Early-stopping and hyperparameter selection from per-epoch records (docs/design.md §7).

For a stopping metric m (all "lower is better", docs/design.md §4) and every config c of a split:

    e*(c) = argmin_e val_m(c, e)                 first epoch on ties (``epoch_ties``, below);
                                                 non-finite never selected; a config whose
                                                 val_m is all non-finite is skipped
    default: c* = 0
    tuned:   c* = argmin_{c ∈ 1..n} val_m(c, e*(c))   first (lowest id) config on ties

and the reported test metrics are those recorded at (c*, e*(c*)), raw and after TS (``*_ts``).

Why numpy instead of ``groupby().idxmin()``: a full study has ~45M record rows; selection is a
few ``reduceat`` passes over contiguous (split, config) blocks of sorted arrays, i.e. O(rows),
with no Python loop over epochs or configs. Ties are resolved by position in the sorted order
(epoch, then config id), so the rule "first on ties" is explicit rather than an accident of a
sort's stability.

``epoch_ties="last"`` keeps the *last* of tied epochs instead (configs still the lowest id):
what pytabkit's network training does by default (``use_last_best_epoch=True``, "slightly
beneficial for accuracy" by its comment), the paper authors' library. Ties are common where a
metric is a step function (accuracy) or reaches a floor (TS-refinement on a validation part the
model separates: docs/reproduction.md, car and nursery); ``benchmarks/tie_rule_effect.py``
measures what the rule changes on a results folder. The rule is a study setting (config
``epoch_ties``, kept in ``run_config.yaml``; :data:`DEFAULT_EPOCH_TIES` where a folder does not
say): the select rule, a results folder's re-selection, the replay and the winner's-curse
diagnostics all take it from there, so that they choose the same (config, epoch).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from tabbench.core.io import reading, write_parquet_atomic
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.runs_schema import columns_on_test, val_column
from tabbench.settings.table import default

log = logging.getLogger(__name__)

REGIMES: tuple[str, ...] = ("default", "tuned")
DEFAULT_CONFIG = 0

#: size columns copied from the records to every selected row (constant per file)
SIZE_COLUMNS: tuple[str, ...] = ("n_train", "n_val", "n_test", "n_classes")

TEST_COLUMNS: tuple[str, ...] = tuple(columns_on_test())

#: record columns selection always reads (``params`` is read dictionary-encoded: cheap), besides
#: the ``val_<id>`` column of every registered stopping metric the file holds
READ_COLUMNS: tuple[str, ...] = (
    ("model", "dataset", "split", "config", "epoch", "params", "fit_seconds", "beta")
    + SIZE_COLUMNS
    + TEST_COLUMNS
)

#: columns of ``results/selected/{model}/{dataset}.parquet``, in order
SELECTED_COLUMNS: tuple[str, ...] = (
    ("model", "dataset", "split", "regime", "stopping", "config", "epoch", "val",
     "n_candidates", "n_skipped")
    + TEST_COLUMNS
    + ("beta", "fit_seconds", "params")
    + SIZE_COLUMNS
    + ("n_rows",)
)


def _block_starts(split: np.ndarray, config: np.ndarray) -> np.ndarray:
    """Start index of every contiguous (split, config) block of sorted arrays."""
    change = np.ones(len(split), dtype=bool)
    change[1:] = (split[1:] != split[:-1]) | (config[1:] != config[:-1])
    return np.flatnonzero(change)


#: how tied epochs are resolved: the first (the default) or the last of them (pytabkit's)
EPOCH_TIES = ("first", "last")
#: the rule of every selection made before the rule was a setting, and the default since
DEFAULT_EPOCH_TIES = default("epoch_ties")


def first_minima(values: np.ndarray, starts: np.ndarray, ties: str = DEFAULT_EPOCH_TIES
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Per block: (row index of the first minimum, or the last one with ``ties="last"``, the
    minimum); (-1, +inf) for a block with no finite value. ``values`` must be ordered by epoch
    inside each block."""
    if ties not in EPOCH_TIES:
        raise ValueError(f"epoch ties must be one of {EPOCH_TIES}, got {ties!r}")
    n = len(values)
    finite = np.isfinite(values)
    v = np.where(finite, values, np.inf)
    block_min = np.minimum.reduceat(v, starts) if n else np.empty(0)
    lengths = np.diff(np.append(starts, n))
    block_of_row = np.repeat(np.arange(len(starts)), lengths)
    hit = finite & (v == block_min[block_of_row])
    hit_rows = np.flatnonzero(hit)
    if ties == "last":
        hit_rows = hit_rows[::-1]
    # hit_rows in increasing (decreasing) order: the first occurrence of each block id is its
    # first (last) minimum
    blocks_hit, first = np.unique(block_of_row[hit_rows], return_index=True)
    index = np.full(len(starts), -1, dtype=np.int64)
    index[blocks_hit] = hit_rows[first]
    return index, block_min


def _first_argmin(values: np.ndarray, groups: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group id in 0..n_groups-1: position (into ``values``) of its first minimum among
    finite values, or -1. Positions are taken in array order (callers sort by config id)."""
    out = np.full(n_groups, -1, dtype=np.int64)
    ok = np.isfinite(values)
    if not ok.any():
        return out
    pos = np.flatnonzero(ok)
    g, v = groups[pos], values[pos]
    gmin = np.full(n_groups, np.inf)
    np.minimum.at(gmin, g, v)
    hit = v == gmin[g]
    hit_pos, hit_g = pos[hit], g[hit]
    found, first = np.unique(hit_g, return_index=True)
    out[found] = hit_pos[first]
    return out


def _sorted_arrays(table: pa.Table) -> dict[str, np.ndarray]:
    """Columns as numpy arrays, rows sorted by (split, config, epoch) if they are not already."""
    split = table.column("split").to_numpy()
    config = table.column("config").to_numpy()
    epoch = table.column("epoch").to_numpy()
    key_sorted = len(split) < 2 or bool(
        np.all(
            (split[1:] > split[:-1])
            | ((split[1:] == split[:-1]) & (config[1:] > config[:-1]))
            | ((split[1:] == split[:-1]) & (config[1:] == config[:-1]) & (epoch[1:] > epoch[:-1]))
        )
    )
    order = None if key_sorted else np.lexsort((epoch, config, split))
    if order is not None:
        dup = (np.diff(split[order]) == 0) & (np.diff(config[order]) == 0) & (
            np.diff(epoch[order]) == 0)
        if dup.any():
            raise ValueError("records hold the same (split, config, epoch) more than once")
    out: dict[str, np.ndarray] = {}
    for name in table.column_names:
        if name in ("model", "dataset", "params"):
            continue
        arr = table.column(name).to_numpy()
        out[name] = arr if order is None else arr[order]
    out["_order"] = np.arange(len(split)) if order is None else order
    return out


def stopping_in(column_names: Sequence[str]) -> list[str]:
    """The registered stopping metrics whose ``val_<id>`` column is among ``column_names``, in
    registry order. A registered metric without its column (a runs file written before the
    package that registers it was installed) is left out with a warning: its selection needs
    the runs to be retrained; the other metrics' selections are still valid."""
    present = set(column_names)
    ids = stopping_metric_ids()
    absent = [m for m in ids if val_column(m) not in present]
    if absent:
        log.warning("records lack the columns of registered stopping metrics %s (written "
                    "before they were registered?): not selected on them; retrain to include "
                    "them", absent)
    return [m for m in ids if m not in absent]


def select_table(table: pa.Table | pd.DataFrame,
                 stopping: Sequence[str] | None = None, epoch_ties: str = DEFAULT_EPOCH_TIES
                 ) -> pd.DataFrame:
    """Selection (module docstring) for the records of one (model, dataset), any number of
    splits. Returns one row per (split, regime, stopping metric) for which a config could be
    selected, in the column order :data:`SELECTED_COLUMNS`. ``stopping``: the stopping metric
    ids to select on; default every registered one whose column the records hold
    (:func:`stopping_in`). ``epoch_ties``: :data:`EPOCH_TIES` (module docstring)."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if stopping is None:
        stopping = stopping_in(table.column_names)
    missing = [c for c in (*READ_COLUMNS, *(val_column(m) for m in stopping))
               if c not in table.column_names]
    if missing:
        raise ValueError(f"records lack columns {missing}")
    if table.num_rows == 0:
        return pd.DataFrame({c: [] for c in SELECTED_COLUMNS})
    for key in ("model", "dataset"):
        values = pc_unique(table.column(key))
        if len(values) != 1:
            raise ValueError(f"records of several {key}s given to one selection: {values}")
    model = str(table.column("model")[0])
    dataset = str(table.column("dataset")[0])
    a = _sorted_arrays(table)
    starts = _block_starts(a["split"], a["config"])
    block_split = a["split"][starts]
    block_config = a["config"][starts]
    splits, block_split_id = np.unique(block_split, return_inverse=True)
    params = table.column("params")

    n_splits = len(splits)
    members = {
        "default": block_config == DEFAULT_CONFIG,
        "tuned": block_config > DEFAULT_CONFIG,
    }
    n_member = {k: np.bincount(block_split_id[v], minlength=n_splits) for k, v in members.items()}
    # one entry per selected (split, regime, metric); the frame is built once at the end
    # (building small DataFrames in the loop would cost more than the selection itself)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in
                                          ("block", "row", "val", "regime", "stop", "cand", "skip")}
    for m in stopping:
        idx, best = first_minima(a[val_column(m)].astype(np.float64, copy=False), starts,
                                 epoch_ties)
        valid = idx >= 0
        for regime in REGIMES:
            cand = members[regime] & valid
            # blocks are sorted by (split, config): the first minimum is the lowest config id
            choice = _first_argmin(np.where(cand, best, np.nan), block_split_id, n_splits)
            chosen = choice[choice >= 0]
            if len(chosen) == 0:
                continue
            n_cand = np.bincount(block_split_id[cand], minlength=n_splits)
            sid = block_split_id[chosen]
            parts["block"].append(chosen)
            parts["row"].append(idx[chosen])
            parts["val"].append(best[chosen])
            parts["regime"].append(np.full(len(chosen), regime, dtype=object))
            parts["stop"].append(np.full(len(chosen), m, dtype=object))
            parts["cand"].append(n_cand[sid])
            parts["skip"].append((n_member[regime] - n_cand)[sid])
    if not parts["row"]:
        return pd.DataFrame({c: [] for c in SELECTED_COLUMNS})
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    blk, r = cat["block"], cat["row"]
    frame: dict[str, object] = {
        "model": model,
        "dataset": dataset,
        "split": block_split[blk].astype(np.int64),
        "regime": cat["regime"],
        "stopping": cat["stop"],
        "config": block_config[blk].astype(np.int64),
        "epoch": a["epoch"][r].astype(np.int64),
        "val": cat["val"],
        "n_candidates": cat["cand"].astype(np.int64),
        "n_skipped": cat["skip"].astype(np.int64),
    }
    for c in TEST_COLUMNS + ("beta", "fit_seconds"):
        frame[c] = a[c][r].astype(np.float64)
    frame["params"] = [str(x) for x in params.take(pa.array(a["_order"][r])).to_pylist()]
    for c in SIZE_COLUMNS:
        frame[c] = a[c][r].astype(np.int64)
    frame["n_rows"] = frame["n_train"] + frame["n_val"] + frame["n_test"]
    out = pd.DataFrame(frame)
    for c in ("model", "dataset", "regime", "stopping", "params"):
        out[c] = out[c].astype(str)
    return out.sort_values(["split", "regime", "stopping"], kind="stable",
                           ignore_index=True)[list(SELECTED_COLUMNS)]


def pc_unique(column: pa.ChunkedArray) -> list:
    import pyarrow.compute as pc

    return pc.unique(column).to_pylist()


def read_records(path: str | Path) -> pa.Table:
    """The columns selection needs from one per-epoch record file: :data:`READ_COLUMNS` and the
    ``val_<id>`` of every registered stopping metric the file holds. ``params`` stays
    dictionary-encoded (31 distinct strings over up to 30K rows): only chosen rows are decoded."""
    with reading(path):  # a damaged file: one line naming it and how to rebuild it
        names = set(pq.read_schema(path).names)
        vals = [c for c in map(val_column, stopping_metric_ids()) if c in names]
        return pq.read_table(path, columns=[*READ_COLUMNS, *vals], read_dictionary=["params"])


def select_files(paths: Sequence[str | Path], epoch_ties: str = DEFAULT_EPOCH_TIES
                 ) -> pd.DataFrame:
    """Selection over the record files (one per split) of one (model, dataset).

    Files are selected one by one (selection never mixes splits) and the rows concatenated."""
    if not paths:
        raise ValueError("no record files given")
    parts = [select_table(read_records(p), epoch_ties=epoch_ties) for p in paths]
    out = pd.concat(parts, ignore_index=True)
    keys = out[["model", "dataset"]].drop_duplicates()
    if len(keys) > 1:
        raise ValueError(f"record files of several (model, dataset): {keys.values.tolist()}")
    dup = out.duplicated(["split", "regime", "stopping"])
    if dup.any():
        raise ValueError(f"split {sorted(set(out.loc[dup, 'split']))} appears in several files")
    return out.sort_values(["split", "regime", "stopping"], kind="stable", ignore_index=True)


def write_selected(paths: Sequence[str | Path], out: str | Path,
                   epoch_ties: str = DEFAULT_EPOCH_TIES) -> pd.DataFrame:
    """Select from ``paths`` and write ``out`` atomically; returns the selection."""
    df = select_files(paths, epoch_ties)
    write_parquet_atomic(df, out)
    return df
