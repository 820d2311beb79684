"""XGBoost trainer: every boosting round's validation and test logits, incrementally.

Training is XGBoost's own loop (``Booster(params, [dtrain])`` then ``update`` per round, which is
what ``xgboost.train`` does), driven here so that logits can be yielded between rounds. After
round ``i`` the margins of val and test grow by the new tree's contribution only:
``predict(iteration_range=(i-1, i), output_margin=True)`` on matrices whose ``base_margin`` is 0
(so the intercept is not added again), i.e. O(rounds) instead of re-predicting all trees each
round, which would be O(rounds²). The running margin starts at the model's intercept, measured
once on one row. Binary margins ``m`` become logits ``[0, m]`` (K = 2).

Categoricals are XGBoost's native ones (``enable_categorical``); ``tree_method=hist``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd
import xgboost as xgb

from tabbench.models.base import EpochChunk, SplitData, TrainContext
from tabbench.models.recorder import chunk_length

#: Parameters the trainer owns: a config may not set them.
_RESERVED = {"objective", "num_class", "tree_method", "nthread", "seed", "device"}


def xgb_params(params: Mapping[str, Any], n_classes: int, ctx: TrainContext) -> dict[str, Any]:
    """XGBoost's parameter dict for a config: config values + objective, threads and seed."""
    clash = _RESERVED & set(params)
    if clash:
        raise ValueError(f"config may not set {sorted(clash)} (set by the trainer)")
    out: dict[str, Any] = dict(params)
    out.update(tree_method="hist", nthread=int(ctx.threads), seed=int(ctx.seed), verbosity=1)
    if n_classes == 2:
        out["objective"] = "binary:logistic"
    elif n_classes > 2:
        out.update(objective="multi:softprob", num_class=int(n_classes))
    else:
        raise ValueError(f"need at least 2 classes, got {n_classes}")
    return out


def to_logits(margin: np.ndarray, n_classes: int) -> np.ndarray:
    """XGBoost margins -> (..., N, K) logits; binary margin m -> [0, m]."""
    if n_classes == 2:
        return np.stack([np.zeros_like(margin), margin], axis=-1)
    return margin


class XGBoostTrainer:
    """Trains one XGBoost config for ``ctx.n_epochs`` rounds (no early stopping).

    ``chunk_rounds`` rounds of logits are buffered per yielded chunk (fewer if the buffer would
    exceed ``max_chunk_bytes``), so the recorder fits temperatures for many rounds at once.
    After :meth:`train` is exhausted, ``self.booster`` is the trained model (used by tests to
    check the incremental margins against fresh predictions).
    """

    name = "xgboost"

    def __init__(self, chunk_rounds: int = 100, max_chunk_bytes: int = 256 * 2**20) -> None:
        self.chunk_rounds = int(chunk_rounds)
        self.max_chunk_bytes = int(max_chunk_bytes)
        self.booster: xgb.Booster | None = None

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        K = data.n_classes
        t0 = time.perf_counter()
        bparams = xgb_params(params, K, ctx)
        dtrain = _dmatrix(data.X_train, data.y_train, ctx.threads)
        sets = [(data.X_val, data.y_val), (data.X_test, data.y_test)]
        zero = [_dmatrix(X, y, ctx.threads, base_margin=_zeros(len(X), K)) for X, y in sets]
        bst = xgb.Booster(bparams, [dtrain])
        self.booster = bst
        margins = [np.zeros((len(X), K if K > 2 else 1)) for X, _ in sets]
        fit_seconds = time.perf_counter() - t0

        n_rows = sum(len(X) for X, _ in sets)
        chunk = chunk_length(self.chunk_rounds, n_rows * K * 8, self.max_chunk_bytes)
        buf: list[list[np.ndarray]] = [[], []]
        times: list[float] = []
        first = 1
        for i in range(ctx.n_epochs):
            t = time.perf_counter()
            bst.update(dtrain, iteration=i)
            if i == 0:
                intercept = _intercept(bst, data.X_val.iloc[:1], K, ctx.threads)
                for m in margins:
                    m += intercept
            for m, dz in zip(margins, zero, strict=True):
                m += _as_2d(bst.predict(dz, iteration_range=(i, i + 1), output_margin=True))
            for b, m in zip(buf, margins, strict=True):
                b.append(to_logits(m[:, 0], K) if K == 2 else m.copy())
            fit_seconds += time.perf_counter() - t
            times.append(fit_seconds)
            if len(times) == chunk or i == ctx.n_epochs - 1:
                # Time spent while suspended here (the recorder's metrics) is not fit time.
                yield EpochChunk(
                    first_epoch=first,
                    val_logits=np.stack(buf[0]),
                    test_logits=np.stack(buf[1]),
                    fit_seconds=np.asarray(times),
                )
                first += len(times)
                buf, times = [[], []], []


def _dmatrix(
    X: pd.DataFrame, y: np.ndarray, threads: int, base_margin: np.ndarray | None = None
) -> xgb.DMatrix:
    return xgb.DMatrix(
        X, label=y, base_margin=base_margin, enable_categorical=True, nthread=int(threads)
    )


def _zeros(n: int, K: int) -> np.ndarray:
    return np.zeros((n, K) if K > 2 else n, dtype=np.float32)


def _as_2d(pred: np.ndarray) -> np.ndarray:
    return pred.reshape(len(pred), -1)


def _intercept(bst: xgb.Booster, row: pd.DataFrame, K: int, threads: int) -> np.ndarray:
    """The model's intercept in margin space, shape (1, K or 1): the first tree's margin on one
    row with the intercept minus the same without it (base_margin 0)."""
    with_b = bst.predict(_dmatrix(row, np.zeros(1), threads), iteration_range=(0, 1),
                         output_margin=True)
    without = bst.predict(_dmatrix(row, np.zeros(1), threads, base_margin=_zeros(1, K)),
                          iteration_range=(0, 1), output_margin=True)
    return _as_2d(with_b).astype(np.float64) - _as_2d(without)
