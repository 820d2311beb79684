"""Winner's curse and regret of each stopping metric, from the per-epoch records alone.

Selection picks, per (regime, stopping metric m), the (config, epoch) with the lowest
``val_m`` (:mod:`tabbench.summary.select`). Two questions about that choice:

**Optimism** (the winner's curse): how much better the chosen model looks on validation than
it is on test, ``optimism = test metric − validation metric`` at the chosen (config, epoch).
Selection takes a minimum over noisy validation scores, so the winner's validation score is
biased low, and more so the more candidates are searched. Each stopping metric is paired with
the test metric that estimates the same quantity (its registration's ``test_counterpart``,
:func:`pairs`); the built-ins':

======================  ===================  =====================================================
stopping metric         validation column    test column (same quantity out of sample)
======================  ===================  =====================================================
logloss                 val_logloss          test_logloss (raw)
brier                   val_brier            test_brier (raw)
error                   val_error            test_error
auroc (1 − AUROC)       val_auroc            test_auroc (1 − AUROC, raw)
ts_ref                  val_ts_ref           test_logloss_ts: TS fit on val, scored on test
ts_ref_brier            val_ts_ref_brier     test_brier_ts
ts_ref_cv5              val_ts_ref_cv5       test_logloss_ts
ir_ref                  val_ir_ref           test_logloss_ts (*not* the same estimator: isotonic
                                             vs TS; flagged ``same_estimator = False``)
======================  ===================  =====================================================

``ts_ref`` is the validation log loss after a TS fit on the validation set itself; its test
counterpart is the test log loss after that same TS: the same calibrated model, scored in and
out of sample. The records hold no isotonic calibration of the test set, so ``ir_ref``'s
optimism also contains isotonic regression's in-sample fit (it is shown dashed).

**Growth with the number of configs searched**: in the tuned regime, the optimism of a search
over a random subset of k of the n tuned configs (k = 1, 2, 4, 8, 16, 30 below n, and n), each
config early-stopped as usual. The average over random subsets is computed *exactly*, as the
average over all C(n, k) subsets: with configs ranked by their best validation value (ties:
lower config id first, as selection breaks them; configs without a finite value last), the
subset's winner is the config of rank r with probability C(n − r, k − 1) / C(n, k). This is
the limit of averaging over seeded random draws (tested against such draws) without their
noise. Subsets whose configs all lack a finite value select nothing and are left out.

**Regret**: ``test metric of the selection − best test metric over all (config, epoch) of the
regime`` (the oracle that sees the test set), for every target metric of
:data:`REGRET_TARGETS` — the paper's target is the test log loss after TS (``logloss_ts``),
the same for every stopping metric; ``rel_regret_<t>`` is 100·regret/oracle (%).

Speed: a full study has ~45M record rows. Each runs file is read with only the needed columns
and reduced with a few vectorised passes (the same ``reduceat`` best-epoch search as
selection); no Python loop over epochs or configs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from tabbench.metrics.registry import get_stopping_metrics
from tabbench.summary.comparisons import relative_regret
from tabbench.summary.select import DEFAULT_CONFIG, DEFAULT_EPOCH_TIES, first_minima


@dataclass(frozen=True)
class Pair:
    """The test column paired with a stopping metric's validation column."""

    stopping: str
    val: str
    test: str
    same_estimator: bool = True


def pairs() -> dict[str, Pair]:
    """Registered stopping metric -> its (validation column, test column) pair, for every
    metric whose registration names a test counterpart (module docstring)."""

    return {m.id: Pair(m.id, f"val_{m.id}", f"test_{m.test_counterpart}",
                       same_estimator=m.counterpart_is_exact)
            for m in get_stopping_metrics().values() if m.test_counterpart is not None}


#: test metrics the regret is measured in (suffixes of ``test_*`` columns)
REGRET_TARGETS: tuple[str, ...] = ("logloss_ts", "brier_ts", "error", "auroc", "logloss",
                                   "brier")
#: the paper's target metric, shown in the regret figure
MAIN_TARGET = "logloss_ts"
#: numbers of configs searched for the winner's-curse curve (capped at those available)
SUBSET_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16, 30)

KEY_COLUMNS: tuple[str, ...] = ("split", "config", "epoch")


def needed_columns(stoppings: Sequence[str] | None = None) -> list[str]:
    """The runs-file columns this module reads."""
    known = pairs()
    chosen = [known[s] for s in (stoppings or known)]
    cols = list(KEY_COLUMNS) + [p.val for p in chosen] + [p.test for p in chosen]
    cols += [f"test_{t}" for t in REGRET_TARGETS]
    return list(dict.fromkeys(cols))


@lru_cache(maxsize=256)
def winner_probabilities(n: int, k: int) -> np.ndarray:
    """P(the winner of a uniformly random k-subset of n ranked items has rank r), r = 1..n:
    C(n − r, k − 1) / C(n, k) (the winner is the best-ranked member of the subset)."""
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")
    total = comb(n, k)
    return np.array([comb(n - r, k - 1) / total for r in range(1, n + 1)])


def expected_over_subsets(best: np.ndarray, values: Mapping[str, np.ndarray], k: int
                          ) -> dict[str, float]:
    """Average of ``values`` at the winner over all k-subsets of the configs, the winner being
    the lowest ``best`` (ties: first position; non-finite never wins; subsets without a finite
    ``best`` are left out). Configs must be given in config-id order."""
    n = len(best)
    finite = np.isfinite(best)
    if not finite.any():
        return {name: float("nan") for name in values}
    key = np.where(finite, best, np.inf)
    order = np.lexsort((np.arange(n), ~finite, key))  # by value, ties by position; NaN last
    prob = winner_probabilities(n, k)[: int(finite.sum())]
    ranked = order[: len(prob)]
    out = {}
    for name, v in values.items():
        x = np.asarray(v, dtype=np.float64)[ranked]
        ok = np.isfinite(x)
        out[name] = float(np.sum(prob[ok] * x[ok]) / np.sum(prob[ok])) if ok.any() else np.nan
    out["p_selection"] = float(prob.sum())
    return out


def _sorted(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    config, epoch = columns["config"], columns["epoch"]
    ok = len(config) < 2 or bool(np.all((config[1:] > config[:-1])
                                        | ((config[1:] == config[:-1]) & (epoch[1:] > epoch[:-1]))))
    if ok:
        return dict(columns)
    order = np.lexsort((epoch, config))
    return {k: np.asarray(v)[order] for k, v in columns.items()}


def split_selection_bias(columns: Mapping[str, np.ndarray], sizes: Sequence[int] = SUBSET_SIZES,
                         stoppings: Sequence[str] | None = None,
                         epoch_ties: str = DEFAULT_EPOCH_TIES
                         ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Selection, optimism and regret (one row per regime × stopping metric) and the
    winner's-curse curve (one row per stopping metric × subset size, tuned regime) of one
    split's records, given as arrays of :func:`needed_columns`.

    The selection is :mod:`tabbench.summary.select`'s rule, ``epoch_ties`` included (the study's);
    the
    first frame's ``config``/``epoch`` are the same as ``select_table``'s (tested)."""
    a = _sorted(columns)
    config = np.asarray(a["config"])
    n_rows = len(config)
    split = int(a["split"][0]) if n_rows else -1
    change = np.ones(n_rows, dtype=bool)
    change[1:] = config[1:] != config[:-1]
    starts = np.flatnonzero(change)
    block_config = config[starts]
    members = {"default": block_config == DEFAULT_CONFIG, "tuned": block_config > DEFAULT_CONFIG}
    row_member = {"default": config == DEFAULT_CONFIG, "tuned": config > DEFAULT_CONFIG}
    oracle = {}
    for regime, rows in row_member.items():
        for t in REGRET_TARGETS:
            v = np.asarray(a[f"test_{t}"], dtype=np.float64)[rows]
            v = v[np.isfinite(v)]
            oracle[(regime, t)] = float(v.min()) if len(v) else np.nan
    sel_rows, curve_rows = [], []
    known = pairs()
    for m in stoppings or known:
        pair = known[m]
        idx, best = first_minima(np.asarray(a[pair.val], dtype=np.float64), starts,
                                 epoch_ties)
        valid = idx >= 0
        safe = np.where(valid, idx, 0)
        val_at = np.where(valid, best, np.nan)
        test_at = np.where(valid, np.asarray(a[pair.test], dtype=np.float64)[safe], np.nan)
        for regime in ("default", "tuned"):
            cand = members[regime] & valid
            if not cand.any():
                continue
            pos = np.flatnonzero(cand)
            pick = pos[np.argmin(best[pos])]  # first minimum = lowest config id
            r = idx[pick]
            row = {"split": split, "regime": regime, "stopping": m,
                   "config": int(block_config[pick]), "epoch": int(a["epoch"][r]),
                   "n_configs": int(members[regime].sum()), "n_candidates": int(len(pos)),
                   "val_metric": pair.val, "test_metric": pair.test,
                   "same_estimator": pair.same_estimator,
                   "val": float(val_at[pick]), "test": float(test_at[pick]),
                   "optimism": float(test_at[pick] - val_at[pick])}
            for t in REGRET_TARGETS:
                got = float(a[f"test_{t}"][r])
                o = oracle[(regime, t)]
                row[f"test_{t}"] = got
                row[f"oracle_{t}"] = o
                row[f"regret_{t}"] = got - o
                row[f"rel_regret_{t}"] = float(relative_regret(got, o))
            sel_rows.append(row)
        tuned = members["tuned"]
        n = int(tuned.sum())
        if n == 0:
            continue
        # only subsets that exist: sizes below n, and n itself (what was trained), so the
        # curve never draws a point beyond the configs trained (a k > n would repeat k = n)
        for k in sorted({int(k) for k in sizes if int(k) < n} | {n}):
            used = k
            e = expected_over_subsets(
                np.where(valid, best, np.nan)[tuned],
                {"val": val_at[tuned], "test": test_at[tuned],
                 "optimism": (test_at - val_at)[tuned]}, used)
            curve_rows.append({"split": split, "stopping": m, "k": int(k), "k_used": used,
                               "n_configs": n, "same_estimator": pair.same_estimator, **e})
    return pd.DataFrame(sel_rows), pd.DataFrame(curve_rows)


def read_columns(path, stoppings: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """The columns of :func:`needed_columns` of one runs file, as numpy arrays."""
    table = pq.read_table(path, columns=needed_columns(stoppings))
    return {name: table.column(name).to_numpy() for name in table.column_names}
