"""Early-stopping and hyperparameter selection from per-epoch records (docs/design.md §7).

For a stopping metric m (all "lower is better", docs/design.md §4) and every config c of a split:

    e*(c) = argmin_e val_m(c, e)                 first epoch on ties (``epoch_ties``, below);
                                                 non-finite never selected; a config whose
                                                 val_m is all non-finite is skipped
    default: c* = 0
    tuned:   c* = argmin_{c ∈ 1..n} val_m(c, e*(c))   first (lowest id) config on ties

and the reported test metrics are those recorded at (c*, e*(c*)), raw and after TS (``*_ts``).

That is the ``best`` stopping rule (the paper's: train the whole run, return its argmin). Every
registered stopping rule with each of its parameters (:mod:`tabbench.summary.stopping_rules`: the
built-in ``patience p`` stops p epochs after the best so far and returns it) replaces e*(c) by
the epoch the rule returns, the rest unchanged; each selected row says its ``rule`` and
``patience`` (empty for ``best``) and ``stop_epoch``, the epoch at which the rule stops training
the chosen config. The compute the rule spends on the regime is ``epochs_trained`` (the stop
epochs summed over the regime's configs of the split) out of ``epochs_recorded`` (their
recorded epochs); ``oracle_logloss_ts`` is the lowest test logloss after TS over every (config,
epoch) of the regime, the oracle of the regret (:mod:`tabbench.diagnostics.selection_bias`).
Every row also keeps ``val_ts_ref``, the validation TS-refinement of its chosen (config, epoch)
whatever metric chose it: how much refining gains on validation (logloss's choice against
TS-refinement's, :mod:`tabbench.summary.heterogeneity`) then needs the selected rows alone,
which a published copy ships, not the runs files, which it does not.
Which patiences: the ``patience`` setting (:func:`tabbench.summary.stopping_rules.rule_choices`).

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
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tabbench.core.io import reading, write_parquet_atomic
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.runs_schema import columns_on_test, val_column

# the tie rule and the whole-run argmin are the stopping rules' (re-exported here, where the
# selection's callers have always found them)
from tabbench.summary.stopping_rules import DEFAULT_EPOCH_TIES as DEFAULT_EPOCH_TIES
from tabbench.summary.stopping_rules import EPOCH_TIES as EPOCH_TIES
from tabbench.summary.stopping_rules import RuleChoice, apply_rule, rule_choices
from tabbench.summary.stopping_rules import first_minima as first_minima

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

#: the validation column every selected row keeps at its chosen (config, epoch), whichever
#: stopping metric chose it (module docstring)
VAL_AT_CHOICE = val_column("ts_ref")

#: columns of ``results/selected/{model}/{dataset}.parquet``, in order
SELECTED_COLUMNS: tuple[str, ...] = (
    ("model", "dataset", "split", "regime", "stopping", "rule", "patience", "config", "epoch",
     "stop_epoch", "val", VAL_AT_CHOICE, "n_candidates", "n_skipped")
    + TEST_COLUMNS
    + ("beta", "fit_seconds", "params")
    + SIZE_COLUMNS
    + ("n_rows", "epochs_trained", "epochs_recorded", "oracle_logloss_ts")
)
#: selected columns a cached file may lack (one selected by a tabbench that did not write them):
#: such a file is selected again from its runs where they are there (:func:`lacks_columns`)
LATER_COLUMNS: tuple[str, ...] = (VAL_AT_CHOICE,)
#: a selected row's key within one (model, dataset)
SELECTED_KEY: tuple[str, ...] = ("split", "regime", "stopping", "rule", "patience")


def _block_starts(split: np.ndarray, config: np.ndarray) -> np.ndarray:
    """Start index of every contiguous (split, config) block of sorted arrays."""
    change = np.ones(len(split), dtype=bool)
    change[1:] = (split[1:] != split[:-1]) | (config[1:] != config[:-1])
    return np.flatnonzero(change)


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
                 stopping: Sequence[str] | None = None, epoch_ties: str = DEFAULT_EPOCH_TIES,
                 patience: Any = None) -> pd.DataFrame:
    """Selection (module docstring) for the records of one (model, dataset), any number of
    splits. Returns one row per (split, regime, stopping metric, rule, parameter) for which a
    config could be selected, in the column order :data:`SELECTED_COLUMNS`. ``stopping``: the
    stopping metric ids to select on; default every registered one whose column the records
    hold (:func:`stopping_in`). ``epoch_ties``: :data:`EPOCH_TIES` (module docstring).
    ``patience``: the ``patience`` setting (:func:`tabbench.summary.stopping_rules.patiences_for`:
    None = the model's defaults, a list, or a mapping model -> list; ``[]`` = ``best`` only)."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    if stopping is None:
        stopping = stopping_in(table.column_names)
    missing = [c for c in (*READ_COLUMNS, *(val_column(m) for m in stopping))
               if c not in table.column_names]
    if missing:
        raise ValueError(f"records lack columns {missing}")
    if table.num_rows == 0:
        return _empty_selection()
    for key in ("model", "dataset"):
        values = pc_unique(table.column(key))
        if len(values) != 1:
            raise ValueError(f"records of several {key}s given to one selection: {values}")
    model = str(table.column("model")[0])
    dataset = str(table.column("dataset")[0])
    choices = rule_choices(model, patience)
    a = _sorted_arrays(table)
    starts = _block_starts(a["split"], a["config"])
    last = np.append(starts[1:], len(a["split"])) - 1
    block_split = a["split"][starts]
    block_config = a["config"][starts]
    splits, block_split_id = np.unique(block_split, return_inverse=True)
    params = table.column("params")
    epoch = a["epoch"]

    n_splits = len(splits)
    members = {
        "default": block_config == DEFAULT_CONFIG,
        "tuned": block_config > DEFAULT_CONFIG,
    }
    n_member = {k: np.bincount(block_split_id[v], minlength=n_splits) for k, v in members.items()}
    recorded = {k: np.bincount(block_split_id[v], weights=epoch[last][v], minlength=n_splits)
                for k, v in members.items()}
    oracle = _regime_oracles(a["test_logloss_ts"], starts, block_split_id, n_splits, members)
    # one entry per selected (split, regime, metric, rule); the frame is built once at the end
    # (building small DataFrames in the loop would cost more than the selection itself)
    parts: dict[str, list[np.ndarray]] = {k: [] for k in (
        "block", "row", "stop_row", "val", "regime", "stop", "rule", "param", "cand", "skip",
        "trained", "recorded", "oracle")}
    for m in stopping:
        values = a[val_column(m)].astype(np.float64, copy=False)
        for choice in choices:
            idx, stop_row = apply_rule(choice, values, epoch, starts, epoch_ties)
            valid = idx >= 0
            best = np.where(valid, values[np.maximum(idx, 0)], np.inf)
            for regime in REGIMES:
                cand = members[regime] & valid
                # blocks are sorted by (split, config): the first minimum is the lowest config id
                choice_ = _first_argmin(np.where(cand, best, np.nan), block_split_id, n_splits)
                chosen = choice_[choice_ >= 0]
                if len(chosen) == 0:
                    continue
                n_cand = np.bincount(block_split_id[cand], minlength=n_splits)
                trained = np.bincount(block_split_id[members[regime]],
                                      weights=epoch[stop_row][members[regime]],
                                      minlength=n_splits)
                sid = block_split_id[chosen]
                k = len(chosen)
                parts["block"].append(chosen)
                parts["row"].append(idx[chosen])
                parts["stop_row"].append(stop_row[chosen])
                parts["val"].append(best[chosen])
                parts["regime"].append(np.full(k, regime, dtype=object))
                parts["stop"].append(np.full(k, m, dtype=object))
                parts["rule"].append(np.full(k, choice.rule, dtype=object))
                parts["param"].append(np.full(k, np.nan if choice.param is None
                                              else float(choice.param)))
                parts["cand"].append(n_cand[sid])
                parts["skip"].append((n_member[regime] - n_cand)[sid])
                parts["trained"].append(trained[sid])
                parts["recorded"].append(recorded[regime][sid])
                parts["oracle"].append(oracle[regime][sid])
    if not parts["row"]:
        return _empty_selection()
    cat = {k: np.concatenate(v) for k, v in parts.items()}
    blk, r = cat["block"], cat["row"]
    frame: dict[str, object] = {
        "model": model,
        "dataset": dataset,
        "split": block_split[blk].astype(np.int64),
        "regime": cat["regime"],
        "stopping": cat["stop"],
        "rule": cat["rule"],
        "patience": pd.array(np.where(np.isnan(cat["param"]), None,
                                      np.nan_to_num(cat["param"]).astype(np.int64)),
                             dtype="Int64"),
        "config": block_config[blk].astype(np.int64),
        "epoch": epoch[r].astype(np.int64),
        "stop_epoch": epoch[cat["stop_row"]].astype(np.int64),
        "val": cat["val"],
        VAL_AT_CHOICE: (a[VAL_AT_CHOICE][r].astype(np.float64) if VAL_AT_CHOICE in a
                        else np.full(len(r), np.nan)),
        "n_candidates": cat["cand"].astype(np.int64),
        "n_skipped": cat["skip"].astype(np.int64),
    }
    for c in TEST_COLUMNS + ("beta", "fit_seconds"):
        frame[c] = a[c][r].astype(np.float64)
    frame["params"] = [str(x) for x in params.take(pa.array(a["_order"][r])).to_pylist()]
    for c in SIZE_COLUMNS:
        frame[c] = a[c][r].astype(np.int64)
    frame["n_rows"] = frame["n_train"] + frame["n_val"] + frame["n_test"]
    frame["epochs_trained"] = cat["trained"].astype(np.int64)
    frame["epochs_recorded"] = cat["recorded"].astype(np.int64)
    frame["oracle_logloss_ts"] = cat["oracle"]
    out = pd.DataFrame(frame)
    for c in ("model", "dataset", "regime", "stopping", "rule", "params"):
        out[c] = out[c].astype(str)
    return _sort_selection(out, choices)[list(SELECTED_COLUMNS)]


def lacks_columns(selected: pd.DataFrame) -> bool:
    """Whether ``selected`` (a cached selected file's rows) lacks one of :data:`LATER_COLUMNS`
    (selected by a tabbench that did not write it): its pair is then selected again where its
    runs are there."""
    return len(selected) > 0 and any(c not in selected.columns for c in LATER_COLUMNS)


def _empty_selection() -> pd.DataFrame:
    out = pd.DataFrame({c: [] for c in SELECTED_COLUMNS})
    out["patience"] = out["patience"].astype("Int64")
    return out


def _regime_oracles(test: np.ndarray, starts: np.ndarray, block_split_id: np.ndarray,
                    n_splits: int, members: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Per regime and split: the lowest finite test value over every (config, epoch) of the
    regime (NaN where there is none)."""
    v = np.where(np.isfinite(test), test, np.inf).astype(np.float64)
    block_min = np.minimum.reduceat(v, starts) if len(v) else np.empty(0)
    out = {}
    for regime, member in members.items():
        low = np.full(n_splits, np.inf)
        np.minimum.at(low, block_split_id[member], block_min[member])
        out[regime] = np.where(np.isfinite(low), low, np.nan)
    return out


def _sort_selection(out: pd.DataFrame, choices: Sequence[RuleChoice] = ()) -> pd.DataFrame:
    """Rows by (split, regime, stopping), then the rules in registry order and increasing
    parameter (``best`` first)."""
    rank = {(c.rule, c.param): i for i, c in enumerate(choices)}
    param = out["patience"].astype("Int64")
    key = [rank.get((r, None if pd.isna(p) else int(p)), len(rank))
           for r, p in zip(out["rule"], param, strict=True)]
    return (out.assign(_rule=key)
            .sort_values(["split", "regime", "stopping", "_rule"], kind="stable",
                         ignore_index=True)
            .drop(columns="_rule"))


def pc_unique(column: pa.ChunkedArray) -> list:
    return pc.unique(column).to_pylist()


def read_records(path: str | Path) -> pa.Table:
    """The columns selection needs from one per-epoch record file: :data:`READ_COLUMNS` and the
    ``val_<id>`` of every registered stopping metric the file holds. ``params`` stays
    dictionary-encoded (31 distinct strings over up to 30K rows): only chosen rows are decoded."""
    with reading(path):  # a damaged file: one line naming it and how to rebuild it
        names = set(pq.read_schema(path).names)
        vals = [c for c in map(val_column, stopping_metric_ids()) if c in names]
        return pq.read_table(path, columns=[*READ_COLUMNS, *vals], read_dictionary=["params"])


def select_files(paths: Sequence[str | Path], epoch_ties: str = DEFAULT_EPOCH_TIES,
                 patience: Any = None) -> pd.DataFrame:
    """Selection over the record files (one per split) of one (model, dataset); ``patience``:
    the setting (:func:`select_table`).

    Files are selected one by one (selection never mixes splits) and the rows concatenated."""
    if not paths:
        raise ValueError("no record files given")
    parts = [select_table(read_records(p), epoch_ties=epoch_ties, patience=patience)
             for p in paths]
    parts = [p for p in parts if len(p)] or parts[:1]
    out = pd.concat(parts, ignore_index=True)
    keys = out[["model", "dataset"]].drop_duplicates()
    if len(keys) > 1:
        raise ValueError(f"record files of several (model, dataset): {keys.values.tolist()}")
    dup = out.duplicated(["split", "regime", "stopping", "rule", "patience"])
    if dup.any():
        raise ValueError(f"split {sorted(set(out.loc[dup, 'split']))} appears in several files")
    choices = rule_choices(str(out["model"].iloc[0]), patience) if len(out) else ()
    return _sort_selection(out, choices)


def write_selected(paths: Sequence[str | Path], out: str | Path,
                   epoch_ties: str = DEFAULT_EPOCH_TIES, patience: Any = None) -> pd.DataFrame:
    """Select from ``paths`` and write ``out`` atomically; returns the selection."""
    df = select_files(paths, epoch_ties, patience)
    write_parquet_atomic(df, out)
    return df
