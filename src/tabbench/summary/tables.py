"""The summary's tables from the selected rows (docs/design.md §7): per-dataset means, every
method's relative difference to the baseline, their statistics over datasets, the mean ranks of
the stopping methods, and the chosen epochs (Fig. G.5). The comparisons themselves (pairing of
splits, relative differences, tests) are :mod:`tabbench.summary.comparisons`'.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabbench.models.runs_schema import TEST_METRIC_IDS
from tabbench.summary import comparisons as cmp
from tabbench.summary.methods import BASELINE, method_names, ts_method_names
from tabbench.summary.select import TEST_COLUMNS

SUBSETS: tuple[str, ...] = ("all", "large")
#: the test metric whose ranks the ranks table and the CD diagrams show (the paper's main one)
RANK_METRIC = "logloss"


def dataset_means(selected: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, regime, stopping): mean over splits of every test metric and of the
    chosen epoch; ``n_splits`` counts the splits that had a selection."""
    keys = ["model", "dataset", "regime", "stopping"]
    g = selected.groupby(keys, sort=True, observed=True)
    out = g[list(TEST_COLUMNS) + ["epoch"]].mean()
    out["n_splits"] = g.size()
    out["n_rows"] = g["n_rows"].max()
    out["n_classes"] = g["n_classes"].max()
    return out.reset_index()


_REL_COLUMNS = ["model", "regime", "metric", "method", "dataset", "value", "baseline",
                "rel_diff", "n_rows", "n_splits", "large"]


def paired_with_baseline(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                         baseline: str = BASELINE) -> pd.DataFrame:
    """Every method beside the baseline, split by split, for every metric
    (:func:`tabbench.summary.comparisons.paired_splits` with a ``metric`` column)."""
    parts = []
    for metric in metrics:
        pairs = cmp.paired_splits(cmp.method_values(selected, metric), baseline)
        if not pairs.empty:
            parts.append(pairs.assign(metric=metric))
    if not parts:
        return pd.DataFrame(columns=[*cmp.PAIR_COLUMNS, "metric"])
    return pd.concat(parts, ignore_index=True)


def relative_differences(selected: pd.DataFrame, large_rows: int,
                         metrics: Sequence[str] = TEST_METRIC_IDS, baseline: str = BASELINE,
                         pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """Every method's relative difference to ``baseline``, per (model, regime, dataset, metric),
    from the selected rows (one per split): both means over the splits they share; ``n_splits``
    counts those. A (method, dataset) without any shared split has no row. ``pairs``: the
    :func:`paired_with_baseline` table, if already built."""
    if pairs is None:
        pairs = paired_with_baseline(selected, metrics, baseline)
    parts = [cmp.dataset_differences(g).assign(metric=metric)
             for metric, g in pairs.groupby("metric", sort=False)]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=_REL_COLUMNS)
    out = pd.concat(parts, ignore_index=True).rename(columns={"other": "baseline"})
    out["large"] = out["n_rows"] >= large_rows
    order = {name: i for i, name in enumerate(method_names())}
    metric_order = {m: i for i, m in enumerate(TEST_METRIC_IDS)}
    out["_o"] = out["method"].map(order)
    out["_m"] = out["metric"].map(metric_order)
    out = out.sort_values(["model", "regime", "_m", "_o", "dataset"], kind="stable")
    return out[_REL_COLUMNS].reset_index(drop=True)


def dropped_splits(selected: pd.DataFrame, metrics: Sequence[str] = TEST_METRIC_IDS,
                   baseline: str = BASELINE, pairs: pd.DataFrame | None = None
                   ) -> dict[str, object]:
    """Splits left out of the comparisons because the method or the baseline has no finite
    value there: ``{"total": n, "by": [{model, regime, metric, method, n}, ...]}`` (non-zero
    counts only), for ``meta.json``."""
    if pairs is None:
        pairs = paired_with_baseline(selected, metrics, baseline)
    by = []
    lost = pairs[~pairs["paired"].astype(bool)]
    order = {m: i for i, m in enumerate(metrics)}
    for (metric, model, regime, method), g in sorted(
            lost.groupby(["metric", "model", "regime", "method"], sort=False),
            key=lambda kv: (order.get(kv[0][0], len(order)), *map(str, kv[0][1:]))):
        by.append({"model": str(model), "regime": str(regime), "metric": metric,
                   "method": str(method), "n": int(len(g))})
    return {"total": int(sum(r["n"] for r in by)), "by": by}


SUMMARY_COLUMNS = ["subset", "model", "regime", "metric", "method", "n", "median", "mean",
                   "q10", "q25", "q75", "q90", "wins", "ties", "losses", "p_wilcoxon",
                   "p_better", "p_equivalent", "p_worse", "se_better", "se_equivalent",
                   "se_worse", "draws", "rope", "median_lo", "median_hi"]


def summarise(rel: pd.DataFrame, pairs: pd.DataFrame | None = None,
              rope: float = cmp.ROPE_PERCENT, baseline: str = BASELINE) -> pd.DataFrame:
    """Per (subset, model, regime, metric, method): n datasets, median, mean, quantiles,
    wins/ties/losses against the baseline (win = lower test metric), the Wilcoxon p, and — for
    at least :data:`tabbench.summary.comparisons.N_MIN` datasets — the Bayesian signed-rank
    probabilities within ±``rope`` % with their Monte Carlo standard errors and draws (no verdict
    rests on them here: the test's first draws only) and, with ``pairs``
    (:func:`paired_with_baseline`), the
    bootstrap interval of the median. ``baseline``: the method ``rel`` is relative to (no test
    of it against itself)."""
    rows = []
    for subset in SUBSETS:
        sub = rel if subset == "all" else rel[rel["large"].astype(bool)]
        for key, g in sub.groupby(["model", "regime", "metric", "method"], sort=False):
            r = g["rel_diff"].to_numpy(dtype=float)
            model, regime, metric, method = key
            stats = cmp.describe(r)
            compared = method != baseline
            post = (cmp.bayesian_signed_rank(r, rope) if compared and len(r) >= cmp.N_MIN
                    else cmp.Posterior.unknown())
            lo = hi = np.nan
            if compared and pairs is not None and len(r) >= cmp.N_MIN:
                mine = pairs[(pairs["model"] == model) & (pairs["regime"] == regime)
                             & (pairs["metric"] == metric) & (pairs["method"] == method)
                             & pairs["dataset"].isin(g["dataset"])]
                lo, hi = cmp.bootstrap_median_interval(mine)
            rows.append({
                "subset": subset, "model": model, "regime": regime, "metric": metric,
                "method": method, "n": len(r),
                **{k: stats[k] for k in ("median", "mean", "q10", "q25", "q75", "q90")},
                "wins": int((r < 0).sum()), "ties": int((r == 0).sum()),
                "losses": int((r > 0).sum()),
                "p_wilcoxon": cmp.wilcoxon_p(r) if compared else np.nan,
                "p_better": post.p_better, "p_equivalent": post.p_equivalent,
                "p_worse": post.p_worse, "se_better": post.se_better,
                "se_equivalent": post.se_equivalent, "se_worse": post.se_worse,
                "draws": post.draws or 0, "rope": float(rope),
                "median_lo": lo, "median_hi": hi,
            })
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)


RANK_COLUMNS = ["subset", "model", "regime", "metric", "method", "mean_rank", "n", "cd",
                "p_friedman", "alpha"]


def rank_table(selected: pd.DataFrame, large_rows: int,
               metric: str = RANK_METRIC) -> pd.DataFrame:
    """Mean ranks of the stopping methods (each +TS) over datasets, per (subset, model, regime),
    on ``metric`` averaged over splits (:func:`tabbench.summary.comparisons.mean_ranks`: Friedman's
    test
    and Nemenyi's critical difference); a (model, regime) with fewer than 5 datasets that hold
    every method has no rows."""
    values = cmp.method_values(selected, metric)
    values = values[values["method"].isin(ts_method_names())]
    rows = []
    if values.empty:
        return pd.DataFrame(columns=RANK_COLUMNS)
    means = (values.groupby(["model", "regime", "dataset", "method"], sort=True)
             .agg(value=("value", "mean"), n_rows=("n_rows", "max")).reset_index())
    order = [m for m in ts_method_names() if m in set(means["method"])]
    for (model, regime), g in means.groupby(["model", "regime"], sort=True):
        table = g.pivot(index="dataset", columns="method", values="value")
        table = table[[m for m in order if m in table.columns]]
        sizes = g.groupby("dataset")["n_rows"].max().reindex(table.index)
        for subset in SUBSETS:
            t = table if subset == "all" else table[sizes >= large_rows]
            ranking = cmp.mean_ranks(t)
            if ranking is None:
                continue
            n = int(t.dropna(axis=0, how="any").shape[0])
            for method, rank in ranking.mean_ranks.items():
                rows.append({"subset": subset, "model": model, "regime": regime,
                             "metric": metric, "method": method, "mean_rank": float(rank),
                             "n": n, "cd": ranking.cd, "p_friedman": ranking.p_friedman,
                             "alpha": ranking.alpha})
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


def mean_best_epochs(selected: pd.DataFrame, regime: str = "default") -> pd.DataFrame:
    """Per (model, dataset, stopping): the chosen epoch averaged over splits (paper Fig. G.5)."""
    sub = selected[selected["regime"] == regime]
    g = sub.groupby(["model", "dataset", "stopping"], sort=True)
    out = g["epoch"].mean().rename("epoch").to_frame()
    out["n_splits"] = g.size()
    out["n_rows"] = g["n_rows"].max()
    return out.reset_index()


def summarise_best_epochs(table: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (model, stopping), g in table.groupby(["model", "stopping"], sort=True):
        stats = cmp.describe(g["epoch"].to_numpy(dtype=float))
        rows.append({"model": model, "stopping": stopping, "n": len(g),
                     **{k: stats[k] for k in ("median", "mean", "q10", "q25", "q75", "q90")}})
    return pd.DataFrame(rows, columns=["model", "stopping", "n", "median", "mean", "q10", "q25",
                                       "q75", "q90"])
