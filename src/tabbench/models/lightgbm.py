"""LightGBM trainer: every boosting round's validation and test logits, incrementally.

Registration (done where the model registry is, not in this module): model name ``"lightgbm"``,
trainer :class:`LightGBMTrainer`, search space :mod:`tabbench.search.lightgbm`, epoch keys
``lightgbm_default`` (config 0) and ``lightgbm_tuned`` (configs >= 1), not a network (CPU only,
never claims a GPU slot).

Training is LightGBM's own loop (``Booster(params, train_set)`` then ``update()`` per round,
which is what ``lightgbm.train`` does; tested to train the same model), driven here so that
logits can be yielded between rounds. No early stopping: every round is recorded.

**Per-round logits, incrementally.** Raw scores are sums of trees, and LightGBM's
``predict(num_iteration=i, raw_score=True)`` adds them in iteration order, in float64, from 0.
The trainer keeps the same float64 running sum per val/test row and adds only the newest
round's trees, so round ``i``'s logits are *bit for bit* ``predict(num_iteration=i,
raw_score=True)`` (tested with exact equality), at O(rounds) cost instead of O(rounds²).

How the newest trees' contributions are obtained:

- ``predict(start_iteration=i, num_iteration=1, raw_score=True)`` every round: LightGBM's C API
  turns every row into a sparse (index, value) vector and back before walking the tree, on
  every call.
- Default here: every ``block_rounds`` rounds, one ``predict(pred_leaf=True)`` gives the leaf
  index of every row in each of the block's new trees (the per-row parse paid once per block),
  and a round's contribution is that tree's leaf values (``Booster.get_leaf_output``, exactly
  the doubles ``predict`` returns for a non-linear tree) gathered by leaf index. The
  contributions are added round by round, in order, so the sums stay exact. Logits are
  computed after the block's rounds, which is fine because a gbdt tree never changes once
  added; the chunk is yielded only after all its rounds are filled. The per-row parse paid
  once per block instead of once per round is why (docs/performance.md, "LightGBM's per-round
  logits", has the measured costs of both).
- LightGBM's own per-valid-set scores (``add_valid``) are incremental too, but it returns them
  only through the objective's link (probabilities), whose inverse is not exact for confident
  rows, so they are not used.

``linear_tree`` models (a leaf's output depends on the row's features) use the per-round raw
prediction instead (``via_leaves=False`` forces it; both paths are tested equal). ``dart``
rescales earlier trees every round and ``rf`` averages them, so neither is a running sum:
those ``boosting`` values are rejected with an error.

A round in which LightGBM can split no leaf adds no tree (LightGBM rolls it back and reports
"no more leaves that meet the split requirements"; ``lightgbm.train`` ignores that and goes on,
as this loop does): its logits repeat the previous round's, which is what
``predict(num_iteration=i)`` returns for ``i`` beyond the model's trees.

**Threads.** ``num_threads`` goes into every ``predict`` call too: a predict call without it
resets LightGBM's (process-wide) OpenMP thread count to the machine's default, and the next
training rounds then run with that many threads, many times slower on a shared machine
(docs/performance.md).

**Determinism.** Seeds come from ``TrainContext.seed`` (LightGBM's ``seed``, from which it derives
its bagging, feature-fraction and data seeds), ``deterministic=True``, and ``force_col_wise=True``:
LightGBM's docs ask for a forced histogram layout with ``deterministic``, since otherwise it picks
one by timing both at start-up; col-wise is their advice for few threads. Tested: the same
logits, bit for bit, on 1 and 2 threads.

**Categoricals** are LightGBM's native ones: the train frame's ``category`` columns are passed as
``categorical_feature`` (all of them, ordered or not, as :attr:`SplitData.cat_columns` says;
``"auto"`` would treat ordered ones as numbers). Val/test rows are coded against *train's*
category list by value, as ``Booster.predict`` does with a pandas frame: a level outside that
list and a missing value are NaN, which LightGBM sends down the "other" side of every
categorical split; a level in the list but absent from the train rows has a code no split
contains, same effect. Columns are given to LightGBM under positional names (``f0``, ``f1``,
...), since LightGBM rejects names with JSON characters (``[``, ``:``, ``"``, ...).

Binary raw scores ``s`` become logits ``[0, s]`` (K = 2, as the XGBoost trainer's
``to_logits``). ``fit_seconds`` includes the per-round logits (as for XGBoost: a block's
prediction time is shared equally among its rounds) and excludes the time the generator is
suspended while the recorder computes metrics.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import lightgbm as lgb
import numpy as np
import pandas as pd

from tabbench.models.base import EpochChunk, SplitData, TrainContext
from tabbench.models.recorder import chunk_length

#: Parameters the trainer owns (canonical name -> LightGBM's aliases for it, from its parameter
#: documentation): a config may set none of them. Seeds, threads, determinism and verbosity
#: come from the run; the objective from the labels; the number of rounds from the ``epochs``
#: config; early stopping would cut the record short; categoricals come from the dtypes.
RESERVED: dict[str, frozenset[str]] = {
    "objective": frozenset({"objective", "objective_type", "app", "application", "loss"}),
    "num_class": frozenset({"num_class", "num_classes"}),
    "num_threads": frozenset({"num_threads", "num_thread", "nthread", "nthreads", "n_jobs"}),
    "seed": frozenset({"seed", "random_seed", "random_state"}),
    "data_random_seed": frozenset({"data_random_seed", "data_seed"}),
    "bagging_seed": frozenset({"bagging_seed", "bagging_fraction_seed"}),
    "feature_fraction_seed": frozenset({"feature_fraction_seed"}),
    "extra_seed": frozenset({"extra_seed"}),
    "drop_seed": frozenset({"drop_seed"}),
    "objective_seed": frozenset({"objective_seed"}),
    "deterministic": frozenset({"deterministic"}),
    "force_col_wise": frozenset({"force_col_wise"}),
    "force_row_wise": frozenset({"force_row_wise"}),
    "verbosity": frozenset({"verbosity", "verbose"}),
    "num_iterations": frozenset({
        "num_iterations", "num_iteration", "n_iter", "num_tree", "num_trees", "num_round",
        "num_rounds", "nrounds", "num_boost_round", "n_estimators", "max_iter"}),
    "early_stopping_round": frozenset({
        "early_stopping_round", "early_stopping_rounds", "early_stopping", "n_iter_no_change"}),
    "device_type": frozenset({"device_type", "device"}),
    "categorical_feature": frozenset({
        "categorical_feature", "cat_feature", "categorical_column", "cat_column",
        "categorical_features"}),
}

_BOOSTING_ALIASES = ("boosting", "boosting_type", "boost")
#: Boosting types whose model is a plain sum of trees that never change once added.
_ADDITIVE_BOOSTING = frozenset({"gbdt", "gbrt", "goss"})
_LINEAR_TREE_ALIASES = ("linear_tree", "linear_trees")


def _is_linear(params: Mapping[str, Any]) -> bool:
    """Linear-tree configs: a leaf's output depends on the row (raw prediction per round)."""
    return any(bool(params.get(a)) for a in _LINEAR_TREE_ALIASES)


#: the kept booster's size bound (:meth:`LightGBMTrainer.kept_model_bound`), loose on purpose
KEPT_BYTES_PER_NODE = 32
KEPT_BYTES_PER_TREE = 400


def lgb_params(params: Mapping[str, Any], n_classes: int, ctx: TrainContext) -> dict[str, Any]:
    """LightGBM's parameter dict for a config: config values + objective, threads, seed,
    determinism and silence. Raises ``ValueError`` for a parameter the trainer owns (any alias)
    or a boosting type whose per-round logits are not a running sum of trees."""
    clash = sorted(a for aliases in RESERVED.values() for a in aliases & set(params))
    if clash:
        raise ValueError(f"config may not set {clash} (set by the LightGBM trainer)")
    for key in _BOOSTING_ALIASES:
        if key in params and str(params[key]).lower() not in _ADDITIVE_BOOSTING:
            raise ValueError(
                f"{key}={params[key]!r} is not supported: per-round logits are recorded as a "
                f"running sum of trees, which needs one of {sorted(_ADDITIVE_BOOSTING)} (dart "
                "rescales earlier trees every round, rf averages them)"
            )
    out: dict[str, Any] = dict(params)
    out.update(num_threads=int(ctx.threads), seed=int(ctx.seed), deterministic=True,
               force_col_wise=True, verbosity=-1)
    if n_classes == 2:
        out["objective"] = "binary"
    elif n_classes > 2:
        out.update(objective="multiclass", num_class=int(n_classes))
    else:
        raise ValueError(f"need at least 2 classes, got {n_classes}")
    return out


def to_logits(raw: np.ndarray, n_classes: int) -> np.ndarray:
    """``predict(raw_score=True)`` output -> (..., N, K) logits; binary score s -> [0, s]."""
    if n_classes == 2:
        return np.stack([np.zeros_like(raw), raw], axis=-1)
    return raw


def eval_matrix(X: pd.DataFrame, X_train: pd.DataFrame) -> np.ndarray:
    """The float64 (N, F) matrix LightGBM predicts on for the rows of ``X``: numericals as they
    are, categoricals as codes in *train's* category list matched by value (NaN for missing and
    for levels not in that list) — the values ``Booster.predict`` computes from a pandas frame,
    given once instead of re-converting the frame on every call."""
    if list(X.columns) != list(X_train.columns):
        raise ValueError("val/test columns differ from train's (names or order)")
    out = np.empty((len(X), X.shape[1]), dtype=np.float64)
    for j, name in enumerate(X.columns):
        train_dtype = X_train[name].dtype
        is_cat = isinstance(X[name].dtype, pd.CategoricalDtype)
        if isinstance(train_dtype, pd.CategoricalDtype):
            if not is_cat:
                raise ValueError(f"column {name!r} is categorical in train but not in val/test")
            # by value: a level outside train's list becomes missing (code -1)
            codes = X[name].cat.set_categories(train_dtype.categories).cat.codes.to_numpy()
            col = codes.astype(np.float64)
            col[codes < 0] = np.nan
            out[:, j] = col
        elif is_cat:
            raise ValueError(f"column {name!r} is categorical in val/test but not in train")
        else:
            out[:, j] = X[name].to_numpy(dtype=np.float64)
    return out


class _Scores:
    """Float64 running raw scores of the eval rows, (T, N), T = trees per round (1 for binary,
    K for multiclass), advanced round by round by the newest iteration's trees."""

    def __init__(self, booster: lgb.Booster, X: np.ndarray, threads: int,
                 via_leaves: bool) -> None:
        self.booster, self.X, self.threads, self.via_leaves = booster, X, threads, via_leaves
        self.T = booster.num_model_per_iteration()
        self.sums = np.zeros((self.T, X.shape[0]))
        self.done = 0  # iterations included in ``sums``

    def _predict(self, start: int, num: int, **kind: bool) -> np.ndarray:
        # num_threads on every call: without it LightGBM resets OpenMP's thread count (module
        # docstring); verbosity too, or the call resets LightGBM's log level.
        return self.booster.predict(self.X, start_iteration=start, num_iteration=num,
                                    num_threads=self.threads, verbosity=-1, **kind)

    def fill(self, iterations: list[int], val: np.ndarray, test: np.ndarray) -> None:
        """For each round ``r`` of a block — ``iterations[r]`` = iterations in the model after
        it — add that round's new trees (if any) and write the sums into ``val[r]``,
        ``test[r]`` ((N_val, K) and (N_test, K) float32)."""
        lo, hi = self.done, iterations[-1]
        leaves = None  # (N, trees) leaf indices of iterations lo..hi-1, iteration-major
        if self.via_leaves and hi > lo:
            leaves = self._predict(lo, hi - lo, pred_leaf=True).reshape(self.X.shape[0], -1)
            # leaf values are fetched up to the largest index reached, per tree; one reduction
            # for the block (a strided column per tree is read once more by take(): cheaper
            # than transposing the block)
            n_leaves = leaves.max(axis=0) + 1
        for r, n_iter in enumerate(iterations):
            if n_iter > self.done:
                if n_iter != self.done + 1:  # update() adds at most one iteration
                    raise RuntimeError(f"model went from {self.done} to {n_iter} iterations "
                                       "in one round")
                if leaves is None:  # via_leaves=False, or linear trees
                    raw = self._predict(self.done, 1, raw_score=True)
                    self.sums += raw.reshape(self.X.shape[0], self.T).T
                else:
                    for k in range(self.T):
                        col = (self.done - lo) * self.T + k
                        tree = self.done * self.T + k
                        values = np.array([self.booster.get_leaf_output(tree, leaf)
                                           for leaf in range(int(n_leaves[col]))])
                        np.add(self.sums[k], values.take(leaves[:, col]), out=self.sums[k])
                self.done += 1
            self._write(val[r], test[r])

    def _write(self, val: np.ndarray, test: np.ndarray) -> None:
        """Binary: score s -> [0, s] (column 0 of the fresh buffers stays 0); else K scores."""
        n_val = val.shape[0]
        # a diverged model's scores may exceed float32: inf is what the recorder expects
        with np.errstate(over="ignore"):
            if self.T == 1:
                val[:, 1], test[:, 1] = self.sums[0, :n_val], self.sums[0, n_val:]
            else:
                val[...], test[...] = self.sums[:, :n_val].T, self.sums[:, n_val:].T


class LightGBMTrainer:
    """Trains one LightGBM config for ``ctx.n_epochs`` rounds (no early stopping).

    ``chunk_rounds`` rounds of logits are buffered per yielded chunk (fewer if the buffer would
    exceed ``max_chunk_bytes``); within a chunk, leaf indices are predicted every
    ``block_rounds`` rounds (fewer if LightGBM's leaf-index output would exceed
    ``max_block_bytes``). ``via_leaves=False`` uses one raw-score prediction per round instead
    (slower, same logits). After :meth:`train` is exhausted, ``self.booster`` is the trained
    model (used by tests to check the logits against fresh predictions).
    """

    name = "lightgbm"

    def __init__(self, chunk_rounds: int = 250, block_rounds: int = 32,
                 max_chunk_bytes: int = 256 * 2**20, max_block_bytes: int = 64 * 2**20,
                 via_leaves: bool = True) -> None:
        self.chunk_rounds = int(chunk_rounds)
        self.block_rounds = int(block_rounds)
        self.max_chunk_bytes = int(max_chunk_bytes)
        self.max_block_bytes = int(max_block_bytes)
        self.via_leaves = bool(via_leaves)
        self.booster: lgb.Booster | None = None
        self._iterations: list[int] | None = None
        self._linear = False

    def _booster(self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
                 ) -> tuple[lgb.Booster, np.ndarray]:
        """The untrained booster of a config (train set, positional names, native
        categoricals) and the val+test rows coded against train's categories: shared by
        :meth:`train` and :meth:`logits_at`, so a replay boosts exactly as the record did."""
        bparams = lgb_params(params, data.n_classes, ctx)
        names = [f"f{i}" for i in range(data.X_train.shape[1])]
        cats = set(data.cat_columns)
        cat_idx = [i for i, c in enumerate(data.X_train.columns) if c in cats]
        train_set = lgb.Dataset(data.X_train, label=data.y_train, params=bparams,
                                feature_name=names, categorical_feature=cat_idx)
        bst = lgb.Booster(bparams, train_set)
        self.booster = bst
        X_eval = np.concatenate([eval_matrix(data.X_val, data.X_train),
                                 eval_matrix(data.X_test, data.X_train)])
        return bst, X_eval

    def logits_at(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext,
        rounds: Sequence[int],
    ) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """round -> (val logits, test logits) (float32, (N, K)) of the model after each of
        ``rounds``, for the replay of selected models (:mod:`tabbench.diagnostics.replay`): the same
        boosting as :meth:`train` up to the last wanted round, with no per-round prediction,
        then the per-round sums of :meth:`train` itself (:class:`_Scores`, also what the
        re-stop reads from a kept model), so the logits are the recorded ones bit for bit."""
        rounds = sorted({int(r) for r in rounds})
        if not rounds or rounds[0] < 1 or rounds[-1] > ctx.n_epochs:
            raise ValueError(f"rounds must lie in 1..{ctx.n_epochs}, got {rounds}")
        bst, X_eval = self._booster(params, data, ctx)
        trees_per_round = bst.num_model_per_iteration()
        iterations = []
        for _ in range(rounds[-1]):
            bst.update()
            iterations.append(bst.num_trees() // trees_per_round)
        want, out = set(rounds), {}
        for first, val, test in self._rounds(bst, X_eval, iterations, len(data.y_val),
                                             data.n_classes, int(ctx.threads),
                                             _is_linear(params)):
            for i in range(val.shape[0]):
                if first + i in want:
                    out[first + i] = (val[i], test[i])
        return out

    def _rounds(self, bst: lgb.Booster, X_eval: np.ndarray, iterations: Sequence[int],
                n_val: int, K: int, threads: int, linear: bool
                ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(first round, val logits, test logits) chunks of rounds 1..len(iterations) of a
        trained booster, ``iterations[r - 1]`` being its iterations after round r: the sums
        :meth:`train` builds while boosting, computed afterwards (the rows of ``X_eval`` past
        ``n_val`` are the test part; none for the re-stop)."""
        scores = _Scores(bst, X_eval, threads, self.via_leaves and not linear)
        n_eval = X_eval.shape[0]
        chunk = chunk_length(self.chunk_rounds, n_eval * K * 4, self.max_chunk_bytes)
        block = chunk_length(self.block_rounds, n_eval * scores.T * 12, self.max_block_bytes)
        first, n = 1, len(iterations)
        while first <= n:
            rows = min(chunk, n - first + 1)
            val = np.zeros((rows, n_val, K), dtype=np.float32)  # binary: z_0 stays 0
            test = np.zeros((rows, n_eval - n_val, K), dtype=np.float32)
            for b0 in range(0, rows, block):
                b1 = min(b0 + block, rows)
                scores.fill(list(iterations[first - 1 + b0:first - 1 + b1]), val[b0:b1],
                            test[b0:b1])
            yield first, val, test
            first += rows

    # -- what a train job keeps for re-stopping (tabbench.models.base.ModelKeepingTrainer) --

    def kept_model(self) -> bytes:
        """The booster of the last :meth:`train` as LightGBM's model text (exact doubles)
        after a JSON line with the iterations after each round and whether its trees are
        linear, zlib-compressed (about 21 bytes per tree node)."""
        if self.booster is None or self._iterations is None:
            raise RuntimeError("no booster: train() has not run")
        head = json.dumps({"iterations": self._iterations, "linear": self._linear})
        return zlib.compress((head + "\n" + self.booster.model_to_string()).encode(), 6)

    def kept_model_bound(self, params: Mapping[str, Any], data: SplitData, n_epochs: int
                         ) -> int:
        """Trees of ``num_leaves`` leaves (LightGBM's default 31; fewer when ``max_depth``
        or the training rows bound them), one per class and round, at
        :data:`KEPT_BYTES_PER_NODE` and :data:`KEPT_BYTES_PER_TREE` (measured compressed:
        20–27 bytes per node)."""
        leaves = min(int(params.get("num_leaves", 31)), len(data.y_train))
        depth = int(params.get("max_depth", -1))
        if depth > 0:
            leaves = min(leaves, 2 ** depth)
        trees = int(n_epochs) * (data.n_classes if data.n_classes > 2 else 1)
        return trees * ((2 * leaves - 1) * KEPT_BYTES_PER_NODE + KEPT_BYTES_PER_TREE)

    def kept_val_logits(self, model: bytes, data: SplitData, ctx: TrainContext
                        ) -> Iterator[tuple[int, np.ndarray]]:
        """Every round's validation logits of a :meth:`kept_model`, by the sums of
        :meth:`train` (:meth:`_rounds`): equal to those :meth:`train` yielded."""
        head, _, text = zlib.decompress(model).decode().partition("\n")
        meta = json.loads(head)
        if len(meta["iterations"]) != ctx.n_epochs:
            raise ValueError(f"the kept booster has {len(meta['iterations'])} rounds, the "
                             f"records {ctx.n_epochs}")
        bst = lgb.Booster(model_str=text)
        X_val = eval_matrix(data.X_val, data.X_train)
        for first, val, _ in self._rounds(bst, X_val, meta["iterations"], len(data.y_val),
                                          data.n_classes, int(ctx.threads),
                                          bool(meta["linear"])):
            yield first, val

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        K = data.n_classes
        t0 = time.perf_counter()
        linear = _is_linear(params)
        bst, X_eval = self._booster(params, data, ctx)
        # iterations after each round and the tree kind: what kept_model() needs besides trees
        self._iterations, self._linear = [], linear
        scores = _Scores(bst, X_eval, int(ctx.threads), self.via_leaves and not linear)
        n_val, n_eval = len(data.y_val), X_eval.shape[0]
        chunk = chunk_length(self.chunk_rounds, n_eval * K * 4, self.max_chunk_bytes)
        # pred_leaf output per round: float64 from the C API, then LightGBM's int32 copy
        block = chunk_length(self.block_rounds, n_eval * scores.T * 12, self.max_block_bytes)
        fit_seconds = time.perf_counter() - t0

        first = 1
        while first <= ctx.n_epochs:
            rows = min(chunk, ctx.n_epochs - first + 1)
            # a fresh pair of buffers per chunk: the recorder may keep chunks
            val = np.zeros((rows, n_val, K), dtype=np.float32)  # binary: z_0 stays 0
            test = np.zeros((rows, n_eval - n_val, K), dtype=np.float32)
            times = np.empty(rows)
            for b0 in range(0, rows, block):
                b1 = min(b0 + block, rows)
                spent, iterations = [], []
                for _ in range(b0, b1):
                    t = time.perf_counter()
                    bst.update()
                    iterations.append(bst.num_trees() // scores.T)
                    spent.append(time.perf_counter() - t)
                self._iterations.extend(iterations)
                t = time.perf_counter()
                scores.fill(iterations, val[b0:b1], test[b0:b1])
                share = (time.perf_counter() - t) / (b1 - b0)
                for r in range(b1 - b0):
                    fit_seconds += spent[r] + share
                    times[b0 + r] = fit_seconds
            # Time spent while suspended here (the recorder's metrics) is not fit time.
            yield EpochChunk(first_epoch=first, val_logits=val, test_logits=test,
                             fit_seconds=times)
            first += rows
