"""Cross-validation fold optima of temperature scaling from a Taylor model, without data passes.

``ts_ref_cv5`` (docs/design.md §4) fits β on each 4/5 of the validation set. Each fold's optimum
b_f = log β_f lies very close to the full-data optimum b* (a fold drops 1/5 of the samples:
|b_f − b*| is typically ~1e-2 for a few thousand samples), so the fold's mean derivative

    G_f(b* + δ) = (1/n_f) Σ_{i in fold's 4/5} dℓ_i/db (b* + δ)

is well described by its Taylor expansion around b*, whose coefficients are fold sums of
per-sample derivatives at b*. Those sums need one pass over the samples *in total* (at b*,
where the full-data fit already evaluated the logits), instead of one evaluation over 4/5 of the
samples *per fold* for a Newton step. The root of the Taylor polynomial is then found with
scalar arithmetic only.

Derivatives in b = log β: with D = d/db = β d/dβ, Faà di Bruno for the exponential map gives
D^k ℓ = Σ_j S(k, j) β^j ℓ^{(j)}(β), S the Stirling numbers of the second kind. Per sample,
T_j = β^j ℓ^{(j)}(β) is (u = β·m the scaled binary margin, p = σ(u) = p_y, q = 1 − p):

* binary: T_1 = −u q, T_2 = u² pq, T_3 = u³ pq (q − p), T_4 = u⁴ pq (1 − 6pq),
  T_5 = u⁵ pq (q − p)(1 − 12pq)  (ℓ(u) = softplus(−u) and the derivatives of σ);
* multiclass: T_1 = β(E_p[z] − z_y) and T_j = κ_j(βz), the cumulants of the scaled logits under
  p = softmax(βz): κ_2, κ_3 = central moments m_2, m_3, κ_4 = m_4 − 3m_2², κ_5 = m_5 − 10 m_3 m_2.

Accuracy guard: the fold optimum is solved on the cubic and on the quartic Taylor model of G_f;
their difference estimates the cubic's truncation error, and the quartic's error is smaller by
another factor ~|δ|. A problem is accepted only if that estimate is below the solver tolerance
``LOG_BETA_TOL`` (and δ is small, inside the bracket); the others (small validation sets,
unstable epochs, optima at the [−16, 16] bounds) are flagged for the exact Newton solver.
"""

from __future__ import annotations

import math

import numpy as np

from tabbench.metrics.ts_kernel import Prepared, SampleStats, Workspace
from tabbench.metrics.ts_solver import LOG_BETA_BOUND, LOG_BETA_TOL

#: Highest derivative order used: T_1..T_5 give the quartic model of G_f.
ORDER = 5
#: Stirling numbers of the second kind S(k, j), k, j = 1..5 (row k: D^k = Σ_j S(k,j) β^j d^j).
STIRLING2 = np.array(
    [
        [1, 0, 0, 0, 0],
        [1, 1, 0, 0, 0],
        [1, 3, 1, 0, 0],
        [1, 7, 6, 1, 0],
        [1, 15, 25, 10, 1],
    ],
    dtype=np.float64,
)
#: Fold optima further than this from b* always go to the exact solver (the Taylor model is
#: meant for the small shifts of dropping 1/5 of a large set).
MAX_SHIFT = 0.25
#: Newton iterations on the Taylor polynomial from δ = 0 (quadratic convergence: the first step
#: is within ~δ² of the root, |δ| ≲ 0.25; six steps reach float64 resolution).
_POLY_NEWTON_ITER = 6
_FACTORIALS = np.array([math.factorial(k) for k in range(ORDER)], dtype=np.float64)


def derivative_terms(
    prep: Prepared, beta: np.ndarray, stats: SampleStats, ws: Workspace
) -> np.ndarray:
    """T_j = β^j d^jNLL/dβ^j per sample for j = 1..5, (5, E, N) float32, at the β (E,) of
    ``stats`` (which must come from ``sample_stats(prep, beta, derivs=True)``)."""
    shape = (prep.n_epochs, prep.n_samples)
    out = ws.get("taylor_T", (ORDER, *shape))
    t1, t2, t3, t4, t5 = out
    if prep.binary:
        u, r, q = stats.u, stats.pq, stats.other
        w = ws.get("taylor_w", shape)
        np.multiply(q, 2, out=w)
        w -= 1  # q − p
        np.multiply(u, q, out=t1)
        np.negative(t1, out=t1)  # −u q
        # powers applied to r (≥ 0, possibly 0 by underflow) one factor at a time, so that
        # r·u^j never forms u^j alone (which could overflow to inf and give inf·0 = NaN)
        np.multiply(r, u, out=t2)
        t2 *= u  # u² r
        np.multiply(t2, u, out=t3)  # u³ r
        np.multiply(t3, u, out=t4)  # u⁴ r
        np.multiply(t4, u, out=t5)  # u⁵ r
        t3 *= w
        t5 *= w
        f = ws.get("taylor_f", shape)
        np.multiply(r, -6, out=f)
        f += 1
        t4 *= f  # u⁴ r (1 − 6r)
        np.multiply(r, -12, out=f)
        f += 1
        t5 *= f  # u⁵ r w (1 − 12r)
        return out

    beta32 = np.asarray(beta, dtype=np.float32)
    zc = prep.zc
    wk = ws.get("taylor_wk", zc.shape)  # p_k·Z (the argmax's sentinel gives exactly 0)
    np.multiply(beta32[:, None, None], zc, out=wk)
    with np.errstate(over="ignore"):
        np.exp(wk, out=wk)
    inv_z = ws.get("taylor_iz", shape)
    np.sum(wk, axis=1, out=inv_z)
    inv_z += 1
    np.reciprocal(inv_z, out=inv_z)  # 1/Z = p of the argmax class (centred logit 0)
    np.multiply(wk, inv_z[:, None, :], out=wk)  # p_k, k ≠ argmax
    bmu = ws.get("taylor_mu", shape)
    np.add(stats.g, prep.zy, out=bmu)  # E_p[zc] = g + z_y
    bmu *= beta32[:, None]  # β μ
    np.multiply(stats.g, beta32[:, None], out=t1)  # β (E_p[z] − z_y)
    d = ws.get("taylor_d", zc.shape)
    np.multiply(beta32[:, None, None], zc, out=d)
    d -= bmu[:, None, :]  # β(z_k − μ); the sentinel's d is huge but finite, its p exactly 0
    acc = ws.get("taylor_acc", zc.shape)
    np.multiply(wk, d, out=acc)
    dmax = ws.get("taylor_dmax", shape)
    np.negative(bmu, out=dmax)  # the argmax class: β(0 − μ)
    pmax_pow = ws.get("taylor_pp", shape)
    np.multiply(inv_z, dmax, out=pmax_pow)
    for t in (t2, t3, t4, t5):  # central moments m_2..m_5 of βz
        acc *= d
        np.sum(acc, axis=1, out=t)
        pmax_pow *= dmax
        t += pmax_pow
    # cumulants: κ4 = m4 − 3 m2², κ5 = m5 − 10 m3 m2
    tmp = ws.get("taylor_tmp", shape)
    np.multiply(t3, t2, out=tmp)
    tmp *= 10
    t5 -= tmp
    np.multiply(t2, t2, out=tmp)
    tmp *= 3
    t4 -= tmp
    return out


def fold_optima(
    prep: Prepared,
    bounds: np.ndarray,
    b_all: np.ndarray,
    stats: SampleStats,
    ws: Workspace,
    tol: float = LOG_BETA_TOL,
) -> tuple[np.ndarray, np.ndarray]:
    """Fold optima of log β from the Taylor model around the full-data optima ``b_all`` (E,).

    Samples are ordered by fold (fold f = columns bounds[f]:bounds[f+1]); ``stats`` are the
    per-sample statistics at β = exp(b_all) with derivatives. Returns b (F·E,) fold-major
    (problem f·E + e) and ``ok`` (F·E,) bool: accepted; the others must be solved exactly.
    """
    n_ep = prep.n_epochs
    n_folds = len(bounds) - 1
    b0 = np.tile(b_all, n_folds)
    if np.any(np.diff(bounds) <= 0):  # an empty fold (reduceat would misread its bounds)
        return b0, np.zeros(b0.shape, dtype=bool)
    T = derivative_terms(prep, np.exp(b_all), stats, ws)
    held = np.add.reduceat(T, bounds[:-1], axis=2, dtype=np.float64)  # (5, E, F)
    n = prep.n_samples
    n_fit = np.array([n - (bounds[f + 1] - bounds[f]) for f in range(n_folds)], dtype=np.float64)
    fit_T = (held.sum(axis=2, keepdims=True) - held) / n_fit  # (5, E, F) means over the 4/5
    # C_k = mean D^k ℓ over the fold's 4/5: the k-th derivative of its mean loss in b
    C = np.einsum("kj,jef->kfe", STIRLING2, fit_T).reshape(ORDER, n_folds * n_ep)
    cubic = C.copy()
    cubic[ORDER - 1] = 0.0  # the cubic model of G: C_1..C_4
    with np.errstate(all="ignore"):
        roots = _poly_root(np.concatenate([C, cubic], axis=1))  # both models in one batch
    d4, d3 = roots[: C.shape[1]], roots[C.shape[1]:]
    b = b0 + d4
    ok = (
        np.isfinite(d3) & np.isfinite(d4)
        & (np.abs(d4 - d3) < tol)
        & (np.abs(d4) < MAX_SHIFT)
        & (np.abs(b) < LOG_BETA_BOUND - MAX_SHIFT)
        & np.isfinite(C).all(axis=0)
        & (C[1] > 0)
    )
    return np.where(ok, b, b0), ok


def _poly_root(C: np.ndarray) -> np.ndarray:
    """Root near 0 of G(δ) = Σ_{k≥1} C_k δ^{k−1}/(k−1)! (C: (M, P)), by Newton from δ = 0;
    NaN where Newton did not settle (|last step| > 1e-13) or G' ≤ 0 at the root."""
    coef = C / _FACTORIALS[: len(C), None]  # δ^k weights
    delta = np.zeros(C.shape[1])
    step = np.full(C.shape[1], np.inf)
    for _ in range(_POLY_NEWTON_ITER):
        g = np.zeros_like(delta)
        dg = np.zeros_like(delta)
        for k in range(len(coef) - 1, -1, -1):  # Horner for G and G'
            dg = dg * delta + g
            g = g * delta + coef[k]
        step = g / dg
        delta = delta - step
    good = (np.abs(step) < 1e-13) & (dg > 0)
    return np.where(good, delta, np.nan)
