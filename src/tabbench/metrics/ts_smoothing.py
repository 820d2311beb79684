"""The Laplace-smoothed losses of temperature-scaled probabilities: the TS-refinement kernels.

TS-refinement scores a set at its fitted temperature with q = a·p + c, Laplace-smoothed for a
fit on ``n_fit`` samples (:func:`tabbench.metrics.losses.laplace_coefs`; docs/design.md §4).
Written from the per-sample statistics of :func:`tabbench.metrics.ts_kernel.sample_stats`
(``smoothed_*``) or, for binary problems, from σ(−βm) of the signed margins m
(:func:`smoothed_miss_from_sigma`: computed in one float64 pass by :func:`binary_smoothed_miss`
for the fused metrics' held-out folds, kept from a derivative pass by :mod:`tabbench.stopping`).
Each form keeps full relative precision for confident predictions instead of computing 1 − q_y
by cancellation.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabbench.metrics.losses import laplace_coefs
from tabbench.metrics.ts_kernel import SampleStats


def smoothed_nll(
    stats: SampleStats, n_classes: int, n_fit: int | None, cols: slice = slice(None)
) -> np.ndarray:
    """Per-sample −log q_y (float32) with q = n/(n+1)·p + 1/((n+1)K); ``n_fit=None``: raw p.

    1 − q_y = a(1 − p_y) + c(K − 1) is used when p_y > 1/2 so that confident correct
    predictions keep full relative precision. Averages should be taken in float64.
    """
    if n_fit is None:
        return stats.nll[:, cols]
    a, c = laplace_coefs(n_fit, n_classes)
    other = stats.other[:, cols]
    out = np.float32(a) * other
    out += np.float32(c * (n_classes - 1))  # 1 − q_y
    np.negative(out, out=out)
    with np.errstate(divide="ignore"):
        np.log1p(out, out=out)
        np.negative(out, out=out)
        far = ~(other < 0.5)  # p_y ≤ 1/2 (usually few samples): −log q_y from log p_y
        out[far] = -np.log(np.float32(a) * np.exp(-stats.nll[:, cols][far]) + np.float32(c))
    return out


def smoothed_brier(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """Per-sample Σ_k (q_k − 1[y=k])² = (1 − q_y)² + Σ_{k≠y} q_k² (float32, no cancellation)."""
    other = stats.other
    if n_fit is None:  # a = 1, c = 0 below
        return other * other + stats.other_sq
    a, c = laplace_coefs(n_fit, n_classes)
    a, c = np.float32(a), np.float32(c)
    one_minus_qy = a * other + c * (n_classes - 1)
    rest_sq = a * a * stats.other_sq + (2 * a * c) * other + (n_classes - 1) * c * c
    return one_minus_qy * one_minus_qy + rest_sq


def smoothed_pmax(stats: SampleStats, n_classes: int, n_fit: int | None) -> np.ndarray:
    """max_k q_k (E, N) float32 (a view of the stats when ``n_fit`` is None)."""
    if n_fit is None:
        return stats.pmax
    a, c = laplace_coefs(n_fit, n_classes)
    out = stats.pmax * np.float32(a)
    out += np.float32(c)
    return out


def binary_smoothed_miss(signed_margin: np.ndarray, beta: Any, n_fit: Any,
                         out: np.ndarray | None = None) -> np.ndarray:
    """1 − q_y of binary problems in one float64 pass: q = a·σ(β m) + c Laplace-smoothed for a
    fit on ``n_fit`` samples, from the *signed* margins m (positive towards the true class) at
    inverse temperature ``beta``; ``beta`` and ``n_fit`` broadcast against ``signed_margin``
    (one per sample for held-out folds fit separately). 1 − q_y = a·σ(−βm) + c is accurate at
    both ends (q_y ≥ c keeps 1 − (1 − q_y) to ~1e-12 relative), so −log q_y =
    −log1p(−(1 − q_y)) and the Brier score 2(1 − q_y)² need no branch for confident or wrong
    samples. The fused metrics' held-out folds score through it."""
    out = np.multiply(beta, signed_margin, out=out, dtype=np.float64)  # u = β m
    with np.errstate(over="ignore"):
        np.exp(out, out=out)  # inf for very confident samples: then σ(−u) = 0 exactly
    out += 1
    np.reciprocal(out, out=out)  # σ(−u) = 1 − p_y
    return smoothed_miss_from_sigma(out, n_fit, out=out)


def smoothed_miss_from_sigma(sigma: np.ndarray, n_fit: Any,
                             out: np.ndarray | None = None) -> np.ndarray:
    """1 − q_y = a·σ(−βm) + c (float64) of binary problems from σ(−βm) = 1 − p_y: the one
    binary smoothing, for :func:`binary_smoothed_miss` and for :mod:`tabbench.stopping`, which
    keeps σ(−βm) from its last derivative pass (``n_fit`` broadcasts as there)."""
    n = float(n_fit) if isinstance(n_fit, (int, float)) else np.asarray(n_fit, dtype=np.float64)
    a, c = laplace_coefs(n, 2)  # Python floats for one set: no 0-d array arithmetic
    out = np.multiply(sigma, a, out=out)
    out += c  # 1 − q_y
    return out


def nll_from_miss(miss: np.ndarray) -> np.ndarray:
    """−log q_y from 1 − q_y (:func:`binary_smoothed_miss`), in place."""
    np.negative(miss, out=miss)
    np.log1p(miss, out=miss)
    np.negative(miss, out=miss)
    return miss
