"""The shared per-epoch recorder: trainers' logits in, rows of docs/design.md §6 out.

Trainers yield :class:`~tabbench.models.base.EpochChunk` s of validation and test logits; the
recorder hands each chunk to the *batched* metrics of :mod:`tabbench.metrics` (one call per chunk,
so temperature scaling is fit for all epochs of the chunk at once) and appends one row per epoch.
It computes no metric itself: the stopping metrics are those of the registry
(:mod:`tabbench.metrics.registry`; the built-ins in one fused call, any other by its own
``batched``), so a new stopping metric never touches the recorder.

Epochs whose logits are not all finite (a diverged network) are not passed to the metrics; their
metric columns are NaN, which selection never picks (docs/design.md §6).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd

from tabbench import metrics as default_metrics
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.base import EpochChunk, SplitData
from tabbench.models.runs_schema import (
    INFO_COLUMNS,
    KEY_COLUMNS,
    TEST_METRIC_IDS,
    column_on_test,
    record_columns,
    val_column,
)

#: dtype of every non-metric column; every other column (metrics, ``fit_seconds``, ``beta``) is
#: float64.
_INT_COLUMNS = ("split", "config", "epoch", "n_train", "n_val", "n_test", "n_classes")
_STR_COLUMNS = ("model", "dataset", "params")


def params_json(params: Mapping[str, Any]) -> str:
    """Canonical JSON of a config (sorted keys) for the ``params`` column; numpy scalars are
    stored as the Python numbers they hold (anything else not JSON-able is an error)."""
    return json.dumps(dict(params), sort_keys=True, default=_json_scalar)


def _json_scalar(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    raise TypeError(f"config value {obj!r} ({type(obj).__name__}) is not JSON-serialisable")


@dataclass(frozen=True)
class RunKey:
    """Which run a record belongs to: one config of one (model, dataset, split)."""

    model: str
    dataset: str
    split: int
    config: int


@dataclass(frozen=True)
class Labels:
    """What the records are measured against: the validation and test labels, and the sizes
    stored on every row."""

    y_val: np.ndarray
    y_test: np.ndarray
    n_train: int
    n_classes: int

    @classmethod
    def of(cls, data: SplitData) -> Labels:
        return cls(data.y_val, data.y_test, len(data.y_train), data.n_classes)


class EpochRecorder:
    """Collect the per-epoch rows of one run (:class:`RunKey`) with ``params``, over
    ``n_epochs`` epochs.

    ``metrics`` is the module providing ``stopping_metrics_batched`` and
    ``metrics_on_test_batched`` (default :mod:`tabbench.metrics`); it is a parameter only so that
    tests can check the recorder's bookkeeping independently of the metric implementations.
    """

    def __init__(self, key: RunKey, params: Mapping[str, Any], labels: Labels, n_epochs: int,
                 metrics: ModuleType | None = None) -> None:
        # the package's kernels load on the first record only
        self._metrics = default_metrics if metrics is None else metrics
        self._const: dict[str, Any] = {
            "model": str(key.model),
            "dataset": str(key.dataset),
            "split": int(key.split),
            "config": int(key.config),
            "params": params_json(params),
            "n_train": int(labels.n_train),
            "n_val": int(len(labels.y_val)),
            "n_test": int(len(labels.y_test)),
            "n_classes": int(labels.n_classes),
        }
        self._y_val = np.asarray(labels.y_val)
        self._y_test = np.asarray(labels.y_test)
        self._n_classes = int(labels.n_classes)
        self.n_epochs = int(n_epochs)
        self.next_epoch = 1
        self._parts: list[pd.DataFrame] = []
        self._last_beta: float | None = None
        self._stopping_ids = stopping_metric_ids()
        self._columns = record_columns()

    def add(self, chunk: EpochChunk) -> pd.DataFrame:
        """Compute the metrics of ``chunk``'s epochs; return (and keep) their rows."""
        E = self._check(chunk)
        val, test = chunk.val_logits, chunk.test_logits
        finite = np.isfinite(val).all(axis=(1, 2)) & np.isfinite(test).all(axis=(1, 2))
        cols: dict[str, np.ndarray] = {}
        names = [val_column(m) for m in self._stopping_ids] + ["beta"]
        for m in TEST_METRIC_IDS:
            names += [column_on_test(m), column_on_test(m, ts=True)]
        for name in names:
            cols[name] = np.full(E, np.nan)
        if finite.any():
            idx = np.flatnonzero(finite)
            v, t = (val, test) if finite.all() else (val[idx], test[idx])
            # warm start: the first TS fits of this chunk start at the previous chunk's last β
            warm = () if self._last_beta is None else (self._last_beta,)  # (beta0,)
            stop = self._metrics.stopping_metrics_batched(v, self._y_val, *warm)
            for m in self._stopping_ids:
                cols[val_column(m)][idx] = stop[m]
            beta = np.asarray(stop["beta"], dtype=np.float64)
            cols["beta"][idx] = beta
            ok = beta[np.isfinite(beta) & (beta > 0)]
            if ok.size:
                self._last_beta = float(ok[-1])
            tm = self._metrics.metrics_on_test_batched(t, self._y_test, beta, len(self._y_val))
            for m in TEST_METRIC_IDS:
                for ts in (False, True):
                    cols[column_on_test(m, ts)][idx] = tm[column_on_test(m, ts)[len("test_"):]]
        epochs = np.arange(chunk.first_epoch, chunk.first_epoch + E, dtype=np.int64)
        frame = pd.DataFrame(
            {
                **{k: np.repeat(v, E) if not isinstance(v, str) else [v] * E
                   for k, v in self._const.items()},
                "epoch": epochs,
                "fit_seconds": np.asarray(chunk.fit_seconds, dtype=np.float64),
                **cols,
            }
        )
        frame = _coerce(frame[self._columns])
        self._parts.append(frame)
        self.next_epoch += E
        return frame

    def frame(self) -> pd.DataFrame:
        """All rows of the run; raises if the trainer stopped before ``n_epochs``."""
        if self.next_epoch != self.n_epochs + 1:
            raise RuntimeError(
                f"trainer yielded {self.next_epoch - 1} epochs, expected {self.n_epochs}"
            )
        return pd.concat(self._parts, ignore_index=True) if self._parts else empty_records()

    def _check(self, chunk: EpochChunk) -> int:
        val, test, fit = chunk.val_logits, chunk.test_logits, np.asarray(chunk.fit_seconds)
        if val.ndim != 3 or test.ndim != 3:
            raise ValueError(f"logits must be (E, N, K); got {val.shape} and {test.shape}")
        E = val.shape[0]
        K = self._n_classes
        if val.shape != (E, len(self._y_val), K) or test.shape != (E, len(self._y_test), K):
            raise ValueError(
                f"chunk logits {val.shape}/{test.shape} do not match "
                f"(E, {len(self._y_val)}, {K})/(E, {len(self._y_test)}, {K})"
            )
        if fit.shape != (E,):
            raise ValueError(f"fit_seconds has shape {fit.shape}, expected ({E},)")
        if chunk.first_epoch != self.next_epoch:
            raise ValueError(
                f"chunk starts at epoch {chunk.first_epoch}, expected {self.next_epoch}"
            )
        if self.next_epoch + E - 1 > self.n_epochs:
            raise ValueError(f"chunk goes past the last epoch {self.n_epochs}")
        return E


def _coerce(df: pd.DataFrame) -> pd.DataFrame:
    """Give every column its contract dtype (str / int64 / float64)."""
    out = {}
    for c in df.columns:
        if c in _STR_COLUMNS:
            out[c] = df[c].astype(str)
        elif c in _INT_COLUMNS:
            out[c] = df[c].astype(np.int64)
        else:
            out[c] = df[c].astype(np.float64)
    return pd.DataFrame(out, columns=df.columns)


def chunk_length(target: int, bytes_per_epoch: int, max_bytes: int = 256 * 2**20) -> int:
    """Epochs per chunk for trainers: ``target`` unless the logits buffer would exceed
    ``max_bytes`` (large test sets with many classes), and at least 1."""
    return max(1, min(int(target), int(max_bytes) // max(1, int(bytes_per_epoch))))


def empty_records() -> pd.DataFrame:
    """A record frame with the contract's columns and dtypes and no rows (every config failed)."""
    return _coerce(pd.DataFrame({c: [] for c in record_columns()}))


def check_records(df: pd.DataFrame, expected_epochs: Mapping[int, int] | None = None) -> None:
    """Raise ``ValueError`` unless ``df`` is a valid per-epoch record (docs/design.md §6).

    Checks: exactly :func:`~tabbench.models.runs_schema.record_columns` in order; contract dtypes;
    no
    missing keys or info; one (model, dataset, split); per config, epochs are exactly ``1..E``
    and the params and cumulative ``fit_seconds`` are consistent. With ``expected_epochs``
    (config -> E), the configs present and their epoch counts must match it.
    """
    cols = list(df.columns)
    if cols != record_columns():
        missing = [c for c in record_columns() if c not in cols]
        extra = [c for c in cols if c not in record_columns()]
        raise ValueError(f"record columns differ: missing {missing}, extra {extra}, or order")
    for c in df.columns:
        kind = df[c].dtype
        if c in _STR_COLUMNS:
            ok = pd.api.types.is_string_dtype(kind)
        elif c in _INT_COLUMNS:
            ok = pd.api.types.is_integer_dtype(kind)
        else:
            ok = pd.api.types.is_float_dtype(kind)
        if not ok:
            raise ValueError(f"column {c!r} has dtype {kind}")
    required = list(KEY_COLUMNS) + [c for c in INFO_COLUMNS if c != "beta"]
    nulls = [c for c in required if df[c].isna().any()]
    if nulls:
        raise ValueError(f"missing values in {nulls}")
    for c in ("model", "dataset", "split", "n_train", "n_val", "n_test", "n_classes"):
        if df[c].nunique() > 1:
            raise ValueError(f"one record file holds several values of {c!r}")
    for config, g in df.groupby("config", sort=True):
        epochs = g["epoch"].to_numpy()
        if not np.array_equal(epochs, np.arange(1, len(g) + 1)):
            raise ValueError(f"config {config}: epochs are not 1..{len(g)} in order")
        if g["params"].nunique() != 1:
            raise ValueError(f"config {config}: several params")
        if np.any(np.diff(g["fit_seconds"].to_numpy()) < 0):
            raise ValueError(f"config {config}: fit_seconds is not cumulative")
    if expected_epochs is not None:
        have = df.groupby("config").size().to_dict()
        want = {int(k): int(v) for k, v in expected_epochs.items()}
        if {int(k): int(v) for k, v in have.items()} != want:
            raise ValueError(f"epochs per config {have} differ from expected {want}")
