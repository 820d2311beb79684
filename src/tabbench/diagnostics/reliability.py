"""Reliability diagrams of the chosen models: accuracy against top-label confidence.

Binning is the ECE's (:func:`tabbench.metrics.losses.ece_proba`): 15 equal-width bins of the
top-label confidence, bin b = [b/15, (b+1)/15) (the last one includes 1). Each split is reduced
to per-bin sums (samples, Σ confidence, Σ correct), from which any pooling is exact:

* one split: accuracy_b = Σ correct / n_b, confidence_b = Σ conf / n_b and
  ECE = Σ_b |Σ correct − Σ conf| / N, which is exactly ``ece_proba``;
* pooled over datasets: every dataset has the same total weight (each of its splits weighs
  1/(n_test · n_splits)), so a 100K-row dataset does not drown the others; the pooled ECE is
  the same formula on the weighted sums (gaps of opposite sign in different datasets can
  cancel in it, which is why the figure's legend gives the *mean per-dataset* ECE instead).

Each bin's accuracy gets a 95% Clopper–Pearson interval (:func:`clopper_pearson`): exact for
the k correct of n samples of one split; for pooled, weighted samples it is evaluated at the
bin's Kish effective size n_eff = (Σw)²/Σw² with k = accuracy·n_eff (equal weights: n_eff = n).
The samples are treated as independent; the test sets of different splits of one dataset
overlap, so pooled bands are if anything too narrow.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabbench.metrics.losses import ECE_BINS

N_BINS = ECE_BINS
#: per-split sums kept for every bin
SUM_COLUMNS: tuple[str, ...] = ("n", "conf_sum", "correct_sum")


def bin_sums(p: np.ndarray, y: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """(n_bins, 3): per bin the number of samples, Σ top-label confidence, Σ correct."""
    p = np.asarray(p, dtype=np.float64)
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == np.asarray(y)).astype(np.float64)
    idx = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    return np.stack([np.bincount(idx, minlength=n_bins).astype(np.float64),
                     np.bincount(idx, weights=conf, minlength=n_bins),
                     np.bincount(idx, weights=correct, minlength=n_bins)], axis=1)


def ece_from_sums(sums: np.ndarray) -> float:
    """ECE of (possibly weighted) bin sums: Σ_b |Σ correct − Σ conf| / Σ n."""
    sums = np.asarray(sums, dtype=np.float64)
    total = sums[:, 0].sum()
    return float(np.abs(sums[:, 2] - sums[:, 1]).sum() / total) if total > 0 else float("nan")


#: two-sided level of the per-bin accuracy intervals
BAND_LEVEL = 0.95


def clopper_pearson(k: np.ndarray, n: np.ndarray, level: float = BAND_LEVEL
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Clopper–Pearson interval of a binomial proportion k/n at ``level`` (exact coverage ≥
    ``level`` for integer k, n): the Beta quantiles B(α/2; k, n−k+1) and B(1−α/2; k+1, n−k),
    0 at k = 0 and 1 at k = n. Non-integer (effective) k, n are accepted; n = 0 gives NaN."""
    # lazy: scipy.stats, ~0.4 s that the workflow's parse and the CLI's start would pay
    from scipy.stats import beta

    k, n = np.asarray(k, dtype=np.float64), np.asarray(n, dtype=np.float64)
    a = (1.0 - level) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        lo = np.where(k <= 0, 0.0, beta.ppf(a, np.maximum(k, 1e-300), n - k + 1))
        hi = np.where(k >= n, 1.0, beta.ppf(1 - a, k + 1, np.maximum(n - k, 1e-300)))
    empty = ~(n > 0)
    return np.where(empty, np.nan, lo), np.where(empty, np.nan, hi)


def pool(bins: pd.DataFrame, keys: list[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pool per-split bin sums with equal weight per dataset (module docstring).

    ``bins``: one row per (``keys``, dataset, split, bin) with :data:`SUM_COLUMNS`. Returns the
    diagram (per ``keys`` and bin: lo, hi, weight = fraction of the pooled mass, confidence,
    accuracy, its interval acc_lo, acc_hi, n = raw samples, n_eff, n_datasets) and the pooled
    ECE (per ``keys``: ece_pooled, n_datasets)."""
    cols = keys + ["bin", "lo", "hi", "weight", "confidence", "accuracy", "acc_lo", "acc_hi",
                   "n", "n_eff", "n_datasets"]
    if bins.empty:
        return (pd.DataFrame(columns=cols),
                pd.DataFrame(columns=keys + ["ece_pooled", "n_datasets"]))
    b = bins.copy()
    per_split = b.groupby(keys + ["dataset", "split"], observed=True)["n"].transform("sum")
    n_splits = b.groupby(keys + ["dataset"], observed=True)["split"].transform("nunique")
    w = 1.0 / (per_split * n_splits)
    for c in SUM_COLUMNS:
        b[f"w_{c}"] = b[c] * w
    b["w2_n"] = b["n"] * w * w  # Σ w² over the bin's samples (one weight per split)
    g = b.groupby(keys + ["bin"], observed=True)
    diag = g[[f"w_{c}" for c in SUM_COLUMNS] + ["n", "w2_n"]].sum()
    diag["n_datasets"] = g["dataset"].nunique()
    diag = diag.reset_index()
    mass = diag.groupby(keys, observed=True)["w_n"].transform("sum")
    with np.errstate(invalid="ignore", divide="ignore"):
        diag["confidence"] = diag["w_conf_sum"] / diag["w_n"]
        diag["accuracy"] = diag["w_correct_sum"] / diag["w_n"]
    diag["weight"] = diag["w_n"] / mass
    with np.errstate(invalid="ignore", divide="ignore"):
        diag["n_eff"] = diag["w_n"] ** 2 / diag["w2_n"]
    diag["acc_lo"], diag["acc_hi"] = clopper_pearson(diag["accuracy"] * diag["n_eff"],
                                                     diag["n_eff"])
    diag["lo"] = diag["bin"] / N_BINS
    diag["hi"] = (diag["bin"] + 1) / N_BINS
    gap = (diag["w_correct_sum"] - diag["w_conf_sum"]).abs()
    ece = (gap.groupby([diag[k] for k in keys], observed=True).sum()
           / diag.groupby(keys, observed=True)["w_n"].sum()).rename("ece_pooled").reset_index()
    ece["n_datasets"] = b.groupby(keys, observed=True)["dataset"].nunique().to_numpy()
    return diag[cols], ece
