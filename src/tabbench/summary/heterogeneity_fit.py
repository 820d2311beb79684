"""How well each validation-only predictor orders the headline's test gains
(``summary/heterogeneity_fit.parquet``; docs/design.md §7).

Per model, and for ``all`` (every model and regime pooled), over the rows of
:func:`tabbench.summary.heterogeneity.heterogeneity_table` on the large datasets (the headline's
subset) where both the predictor and ``test_gain`` are finite: Spearman's rank correlation of
the predictor with ``test_gain`` (ties share their mean rank) and a percentile bootstrap
interval of it in which *datasets* are resampled with all their rows (a dataset's models and
regimes are not independent evidence), seeded so that a table recomputes to the same numbers.
A correlation is NaN where the predictor or the gain is constant (e.g. ``n_classes`` over
binary datasets only).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabbench.models.registry import order_models
from tabbench.summary.comparisons import BAYES_SEED, BOOTSTRAP_LEVEL, BOOTSTRAP_SAMPLES
from tabbench.summary.heterogeneity import PREDICTORS

#: the pooled row's ``model``
ALL = "all"
FIT_COLUMNS = ["model", "predictor", "spearman", "ci_low", "ci_high", "n", "n_datasets"]


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman's correlation of each row of ``x`` with the same row of ``y`` (2-D, NaN =
    absent: left out of both), average ranks for ties; NaN where a row has fewer than 3 pairs
    or no spread."""
    # lazy: scipy.stats, ~0.4 s that the workflow's parse and the CLI's start would pay
    from scipy.stats import rankdata

    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = np.where(ok, x, np.nan), np.where(ok, y, np.nan)
    rx = rankdata(x, axis=1, nan_policy="omit")
    ry = rankdata(y, axis=1, nan_policy="omit")
    n = ok.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = np.where(ok, rx - np.nanmean(rx, axis=1, keepdims=True), 0.0)
        dy = np.where(ok, ry - np.nanmean(ry, axis=1, keepdims=True), 0.0)
        r = (dx * dy).sum(axis=1) / np.sqrt((dx ** 2).sum(axis=1) * (dy ** 2).sum(axis=1))
    return np.where(n >= 3, r, np.nan)


def bootstrap_spearman(x: np.ndarray, y: np.ndarray, groups: np.ndarray,
                       n_boot: int = BOOTSTRAP_SAMPLES, level: float = BOOTSTRAP_LEVEL,
                       seed: int = BAYES_SEED) -> tuple[float, float, float]:
    """(Spearman of ``x`` with ``y``, percentile interval) where each bootstrap draw resamples
    the ``groups`` (datasets) with replacement and takes every row of each drawn one."""
    x, y, groups = np.asarray(x, float), np.asarray(y, float), np.asarray(groups)
    rho = float(spearman_rows(x[None], y[None])[0])
    labels, inverse = np.unique(groups, return_inverse=True)
    if len(labels) < 2 or not np.isfinite(rho):
        return rho, float("nan"), float("nan")
    members = [np.flatnonzero(inverse == g) for g in range(len(labels))]
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(labels), size=(n_boot, len(labels)))
    rows = [np.concatenate([members[g] for g in draw]) for draw in picks]
    width = max(len(r) for r in rows)
    index = np.full((n_boot, width), -1)
    for b, r in enumerate(rows):
        index[b, :len(r)] = r
    pad = index < 0
    bx = np.where(pad, np.nan, x[np.maximum(index, 0)])
    by = np.where(pad, np.nan, y[np.maximum(index, 0)])
    draws = spearman_rows(bx, by)
    draws = draws[np.isfinite(draws)]
    if len(draws) == 0:
        return rho, float("nan"), float("nan")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(draws, [alpha, 1.0 - alpha])
    return rho, float(lo), float(hi)


def fit_table(table: pd.DataFrame, predictors: tuple[str, ...] = PREDICTORS,
              n_boot: int = BOOTSTRAP_SAMPLES, seed: int = BAYES_SEED) -> pd.DataFrame:
    """Columns :data:`FIT_COLUMNS`: per model (figure order) then :data:`ALL`, and per
    predictor, over the large datasets of ``table`` (module docstring)."""
    large = table[table["large"].astype(bool)] if len(table) else table
    groups = [(m, large[large["model"] == m]) for m in order_models(large["model"].unique())]
    groups.append((ALL, large))
    rows = []
    for model, g in groups:
        for predictor in predictors:
            x = g[predictor].to_numpy(dtype=float) if len(g) else np.array([])
            y = g["test_gain"].to_numpy(dtype=float) if len(g) else np.array([])
            ok = np.isfinite(x) & np.isfinite(y)
            if ok.sum() == 0:
                rho = lo = hi = float("nan")
            else:
                rho, lo, hi = bootstrap_spearman(x[ok], y[ok], g["dataset"].to_numpy()[ok],
                                                 n_boot=n_boot, seed=seed)
            rows.append({"model": model, "predictor": predictor, "spearman": rho,
                         "ci_low": lo, "ci_high": hi, "n": int(ok.sum()),
                         "n_datasets": len(set(g["dataset"].to_numpy()[ok]))})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)
