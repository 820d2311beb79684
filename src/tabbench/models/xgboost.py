"""XGBoost trainer: every boosting round's validation and test logits, incrementally.

Training is XGBoost's own loop (``Booster(params, [dtrain])`` then ``update`` per round, which is
what ``xgboost.train`` does), driven here so that logits can be yielded between rounds.

Per-round margins are incremental through XGBoost's prediction cache: a booster keeps, per
DMatrix it has predicted on, the margins and the number of rounds they include, and a full-range
``predict`` only adds the trees boosted since (gbtree's ``PredictBatch``; the same mechanism
serves the eval sets of ``xgboost.train``). Predicting val and test after every round therefore
costs one tree each, O(rounds) in total instead of O(rounds²) for re-predicting from scratch
(measured: ~0.1 ms per round at round 10 and at round 1000 on 3K rows, vs 26 ms for a fresh
prediction of 1000 trees), and the margins are exactly ``predict(iteration_range=(0, i))``
(tested). Val and test share one DMatrix (rows stacked), since a predict call's fixed cost is
about that of 3K rows; it lives for the whole run so its cache entry does. It is built from a
dense float32 array of the frame's values (:func:`_eval_dmatrix`), which XGBoost predicts
faster than the pandas frame when there are categoricals. Binary margins ``m``
become logits ``[0, m]`` (K = 2), written straight into a fresh pair of (val, test) chunk
buffers (no per-chunk stacking or copying: ~4% of a round at 250-round chunks).

The per-round call goes through :class:`MarginPredictor`, which calls the same C function as
``Booster.predict(output_margin=True)`` with a prebuilt config and copies the margins straight
into the chunk buffer: ``Booster.predict``'s Python wrapper costs ~0.1 ms per call (JSON, array
interface, a class built per call), about 10% of a round of an HPO-like config on 12K rows.

Categoricals are XGBoost's native ones (``enable_categorical``); ``tree_method=hist``.
"""

from __future__ import annotations

import ctypes
import json
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
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


class MarginPredictor:
    """``booster.predict(dmatrix, output_margin=True)`` (all trees, through the prediction cache)
    written into a given float32 buffer, with the fixed per-call cost of the Python wrapper cut.

    Uses ``xgboost.core._LIB.XGBoosterPredictFromDMatrix`` (the function ``Booster.predict``
    calls); when that private handle is unavailable it falls back on ``Booster.predict``. Both
    paths are tested to give identical margins.
    """

    # "type": 1 is the margin prediction (Booster.predict's output_margin=True)
    _CONFIG = json.dumps({"type": 1, "training": False, "iteration_begin": 0,
                          "iteration_end": 0, "strict_shape": False}).encode()

    @staticmethod
    def _config(begin: int, end: int) -> bytes:
        return json.dumps({"type": 1, "training": False, "iteration_begin": int(begin),
                           "iteration_end": int(end), "strict_shape": False}).encode()

    def __init__(self, booster: xgb.Booster, dmatrix: xgb.DMatrix, fast: bool = True) -> None:
        self.booster, self.dmatrix = booster, dmatrix
        self._lib = None
        if fast:
            try:
                # lazy: xgboost's private API, which may be absent (the slower path then)
                from xgboost.core import _LIB, c_bst_ulong

                self._lib, self._ulong = _LIB, c_bst_ulong
                self._fn = _LIB.XGBoosterPredictFromDMatrix
            except (ImportError, AttributeError):
                self._lib = None

    @property
    def fast(self) -> bool:
        return self._lib is not None

    def predict_into(self, out: np.ndarray, rounds: tuple[int, int] = (0, 0)) -> None:
        """Write the margins (N,) or (N, K) into the float32 C-contiguous ``out``: of all trees
        (the default, through the prediction cache), or of the rounds ``[begin, end)``."""
        if self._lib is None:
            out[...] = self.booster.predict(self.dmatrix, output_margin=True,
                                            iteration_range=rounds)
            return
        config = self._CONFIG if rounds == (0, 0) else self._config(*rounds)
        preds = ctypes.POINTER(ctypes.c_float)()
        shape = ctypes.POINTER(self._ulong)()
        dims = self._ulong()
        rc = self._fn(self.booster.handle, self.dmatrix.handle, config,
                      ctypes.byref(shape), ctypes.byref(dims), ctypes.byref(preds))
        if rc != 0:
            raise xgb.core.XGBoostError(self._lib.XGBGetLastError().decode())
        size = 1
        for i in range(dims.value):
            size *= int(shape[i])
        if size != out.size or out.dtype != np.float32 or not out.flags.c_contiguous:
            raise ValueError(f"prediction has {size} values, buffer {out.shape} {out.dtype}")
        ctypes.memmove(out.ctypes.data, preds, out.nbytes)


class XGBoostTrainer:
    """Trains one XGBoost config for ``ctx.n_epochs`` rounds (no early stopping).

    ``chunk_rounds`` rounds of logits are buffered per yielded chunk (fewer if the buffer would
    exceed ``max_chunk_bytes``), so the recorder fits temperatures for many rounds at once.
    After :meth:`train` is exhausted, ``self.booster`` is the trained model (used by tests to
    check the incremental margins against fresh predictions).
    """

    name = "xgboost"

    def __init__(
        self, chunk_rounds: int = 250, max_chunk_bytes: int = 256 * 2**20, fast_predict: bool = True
    ) -> None:
        self.chunk_rounds = int(chunk_rounds)
        self.max_chunk_bytes = int(max_chunk_bytes)
        self.fast_predict = bool(fast_predict)
        self.booster: xgb.Booster | None = None

    def _booster(self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext,
                 with_eval: bool = True) -> tuple[xgb.Booster, xgb.DMatrix, xgb.DMatrix | None]:
        """The untrained booster of a config with its training matrix and (``with_eval``) the
        val+test matrix: shared by :meth:`train` and :meth:`logits_at`, so a replay boosts
        exactly as the record did."""
        _check_categories(data)
        dtrain = _dmatrix(data.X_train, data.y_train, ctx.threads)
        deval = (_eval_dmatrix(pd.concat([data.X_val, data.X_test], ignore_index=True),
                               ctx.threads) if with_eval else None)
        bst = xgb.Booster(xgb_params(params, data.n_classes, ctx), [dtrain])
        self.booster = bst
        return bst, dtrain, deval

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        K = data.n_classes
        t0 = time.perf_counter()
        n_val = len(data.y_val)
        bst, dtrain, deval = self._booster(params, data, ctx)
        predictor = MarginPredictor(bst, deval, self.fast_predict)
        n_eval = deval.num_row()
        chunk = chunk_length(self.chunk_rounds, n_eval * K * 4, self.max_chunk_bytes)
        margin = np.empty((n_eval, K) if K > 2 else (n_eval,), dtype=np.float32)
        times = np.empty(chunk)
        fit_seconds = time.perf_counter() - t0

        first, j = 1, 0
        val = test = None
        for i in range(ctx.n_epochs):
            t = time.perf_counter()
            if val is None:  # a fresh pair of buffers per chunk: the recorder may keep chunks
                rows = min(chunk, ctx.n_epochs - i)
                val = np.zeros((rows, n_val, K), dtype=np.float32)  # binary: z_0 stays 0
                test = np.zeros((rows, n_eval - n_val, K), dtype=np.float32)
            bst.update(dtrain, iteration=i)
            # full range = cached margins + the newest tree (see module docstring)
            predictor.predict_into(margin)
            # logits written in place: binary margin m -> [0, m] (as ``to_logits``)
            if K == 2:
                val[j, :, 1], test[j, :, 1] = margin[:n_val], margin[n_val:]
            else:
                val[j], test[j] = margin[:n_val], margin[n_val:]
            j += 1
            if j == val.shape[0]:
                fit_seconds += time.perf_counter() - t
                times[j - 1] = fit_seconds
                # Time spent while suspended here (the recorder's metrics) is not fit time.
                yield EpochChunk(first_epoch=first, val_logits=val, test_logits=test,
                                 fit_seconds=times[:j].copy())
                first, j = first + j, 0
                val = test = None
            else:
                fit_seconds += time.perf_counter() - t
                times[j - 1] = fit_seconds


    def logits_at(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext,
        rounds: Sequence[int],
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """round -> (val logits, test logits) (float32, (N, K)) of the model after each of
        ``rounds``, for the replay of selected models (:mod:`tabbench.diagnostics.replay`).

        The same boosting as :meth:`train` (same params, seed and training DMatrix), up to the
        last wanted round only, with no per-round prediction; then the per-round margins of
        :class:`RoundMargins` (the re-stop's too), which equal the incremental margins
        :meth:`train` records (tested; the replay's self-check compares them again).
        """
        rounds = sorted({int(r) for r in rounds})
        if not rounds or rounds[0] < 1 or rounds[-1] > ctx.n_epochs:
            raise ValueError(f"rounds must lie in 1..{ctx.n_epochs}, got {rounds}")
        K = data.n_classes
        n_val = len(data.y_val)
        bst, dtrain, _ = self._booster(params, data, ctx, with_eval=False)
        for i in range(rounds[-1]):
            bst.update(dtrain, iteration=i)
        margins = RoundMargins(bst, pd.concat([data.X_val, data.X_test], ignore_index=True), K,
                               ctx.threads, self.fast_predict)
        want, out = set(rounds), {}
        for r, margin in enumerate(margins, start=1):
            if r in want:
                logits = to_logits(margin.copy(), K)
                out[r] = (logits[:n_val], logits[n_val:])
        return out

    # -- what a train job keeps for re-stopping (tabbench.models.base.ModelKeepingTrainer) --

    def kept_model(self) -> bytes:
        """The booster of the last :meth:`train` as UBJSON (XGBoost's binary model format),
        zlib-compressed (about 16 bytes per tree node)."""
        if self.booster is None:
            raise RuntimeError("no booster: train() has not run")
        return zlib.compress(bytes(self.booster.save_raw("ubj")), 6)

    def kept_model_bound(self, params: Mapping[str, Any], data: SplitData, n_epochs: int
                         ) -> int:
        """Full trees of ``max_depth`` (XGBoost's default 6), one per class and round, at most
        2·n_train − 1 nodes each, at :data:`KEPT_BYTES_PER_NODE` and
        :data:`KEPT_BYTES_PER_TREE` (measured compressed: 14–19 bytes per node)."""
        depth = int(params.get("max_depth", 6) or 0)
        nodes = 2 * len(data.y_train) - 1
        if depth > 0:
            nodes = min(nodes, 2 ** (depth + 1) - 1)
        trees = int(n_epochs) * (data.n_classes if data.n_classes > 2 else 1)
        return trees * (nodes * KEPT_BYTES_PER_NODE + KEPT_BYTES_PER_TREE)

    def kept_val_logits(self, model: bytes, data: SplitData, ctx: TrainContext
                        ) -> Iterator[tuple[int, np.ndarray]]:
        """Every round's validation logits of a :meth:`kept_model`, by
        :class:`RoundMargins`: equal to those :meth:`train` yielded."""
        bst = xgb.Booster(model_file=bytearray(zlib.decompress(model)))
        bst.set_param({"nthread": int(ctx.threads)})
        if bst.num_boosted_rounds() != ctx.n_epochs:
            raise ValueError(f"the kept booster has {bst.num_boosted_rounds()} rounds, the "
                             f"records {ctx.n_epochs}")
        K, n_val = data.n_classes, len(data.y_val)
        chunk = chunk_length(self.chunk_rounds, n_val * K * 4, self.max_chunk_bytes)
        first, buf = 1, None
        for r, margin in enumerate(RoundMargins(bst, data.X_val, K, ctx.threads,
                                                self.fast_predict), start=1):
            if buf is None:
                buf = np.zeros((min(chunk, ctx.n_epochs - r + 1), n_val, K), np.float32)
            j = r - first
            if K == 2:
                buf[j, :, 1] = margin
            else:
                buf[j] = margin
            if j + 1 == buf.shape[0]:
                yield first, buf
                first, buf = r + 1, None


#: the kept booster's size bound (:meth:`XGBoostTrainer.kept_model_bound`), loose on purpose
KEPT_BYTES_PER_NODE = 24
KEPT_BYTES_PER_TREE = 400


class RoundMargins:
    """The margins of a trained booster after each round 1..n, one round's trees per step:
    what the replay (:meth:`XGBoostTrainer.logits_at`) and the re-stop
    (:meth:`XGBoostTrainer.kept_val_logits`) read per-round logits from.

    They are the margins training recorded, bit for bit: XGBoost's predictor starts a row at
    the base margin and adds each tree's float32 leaf value in tree order, from scratch
    (``predict(iteration_range=(0, r))``) or through the prediction cache alike. Round 1 is
    predicted as such; round r > 1 adds round r's trees alone, predicted on a copy of the rows
    whose base margin is 0 (so that prediction is exactly their leaf values): the same float32
    additions in the same order (tested against the recorded logits). One small prediction per
    round: O(rounds) work, where predicting every prefix would be O(rounds²). Needs one tree
    per class and round (a ``num_parallel_tree`` forest's trees of one round would be summed
    before being added, or a dart booster's rescaled): anything else is refused.
    """

    def __init__(self, booster: xgb.Booster, X: pd.DataFrame, n_classes: int, threads: int,
                 fast: bool = True) -> None:
        gbm = json.loads(booster.save_config())["learner"]["gradient_booster"]
        parallel = int(gbm.get("gbtree_model_param", {}).get("num_parallel_tree", 1))
        if gbm.get("name") != "gbtree" or parallel != 1:
            raise ValueError(f"per-round margins need a gbtree booster with one tree per class "
                             f"and round, got {gbm.get('name')} with num_parallel_tree "
                             f"{parallel}")
        self.booster = booster
        self.shape = (len(X), n_classes) if n_classes > 2 else (len(X),)
        full, zero = _eval_dmatrix(X, threads), _eval_dmatrix(X, threads)
        zero.set_base_margin(np.zeros(self.shape, np.float32))
        self._full = MarginPredictor(booster, full, fast)
        self._zero = MarginPredictor(booster, zero, fast)

    def __iter__(self) -> Iterator[np.ndarray]:
        """The margins after rounds 1, 2, ...: one buffer updated in place (copy what you
        keep)."""
        margin = np.empty(self.shape, np.float32)
        step = np.empty(self.shape, np.float32)
        for r in range(1, self.booster.num_boosted_rounds() + 1):
            if r == 1:
                self._full.predict_into(margin, (0, 1))
            else:
                self._zero.predict_into(step, (r - 1, r))
                np.add(margin, step, out=margin)
            yield margin


def _check_categories(data: SplitData) -> None:
    """XGBoost reads pandas categoricals by their codes: val/test must share train's categories
    (same list, same order), or a code would silently mean another category."""
    for c in data.cat_columns:
        want = list(data.X_train[c].cat.categories)
        for name, X in (("val", data.X_val), ("test", data.X_test)):
            # (unordered CategoricalDtype equality ignores the order, so compare the lists)
            got = X[c].cat.categories if isinstance(X[c].dtype, pd.CategoricalDtype) else None
            if got is None or list(got) != want:
                raise ValueError(f"categorical column {c!r}: {name} categories differ from train")


def feature_names(n: int) -> list[str]:
    """Positional feature names ``f0, f1, ...``: XGBoost rejects names containing ``[``, ``]``
    or ``<`` (which real datasets' columns do contain), and the names carry no information the
    model needs, since val/test columns are aligned with train's by the data layer."""
    return [f"f{i}" for i in range(n)]


def positional(X: pd.DataFrame) -> pd.DataFrame:
    """``X`` with the trainer's :func:`feature_names` (a relabelled frame; the data is not
    copied): what to build a DMatrix from to predict with a booster this trainer trained."""
    return X.set_axis(feature_names(X.shape[1]), axis=1)


def _dmatrix(X: pd.DataFrame, y: np.ndarray, threads: int) -> xgb.DMatrix:
    return xgb.DMatrix(positional(X), label=y, enable_categorical=True, nthread=int(threads))


def _eval_dmatrix(X: pd.DataFrame, threads: int) -> xgb.DMatrix:
    """The val+test DMatrix, predicted after every round: the same values XGBoost reads from the
    pandas frame (float32 numericals, categorical codes, NaN = missing) given as one dense
    float32 array with the frame's feature names and types.

    Why not the frame itself: with categoricals, a DMatrix built from pandas predicts ~25%
    slower per row than this one (adult, 8 categoricals: 0.87 vs 0.64 ms per round for 17.6K
    rows, identical margins); that is a quarter of an HPO-like round's training time.
    """
    types, columns = [], []
    for name in X.columns:
        col = X[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            codes = col.cat.codes.to_numpy().astype(np.float32)
            codes[codes < 0] = np.nan  # pandas' code −1 = missing
            columns.append(codes)
            types.append("c")
        else:
            columns.append(col.to_numpy(dtype=np.float32))
            types.append("q")
    values = np.stack(columns, axis=1) if columns else np.empty((len(X), 0), np.float32)
    return xgb.DMatrix(values, feature_names=feature_names(X.shape[1]), feature_types=types,
                       enable_categorical=True, nthread=int(threads))
