"""The Taylor-model CV fold fits (tabbench.metrics.fold_taylor) against independent float64
computations: per-sample derivatives from the cumulants of the softmax, fold optima from a
bracketing root finder, and the exact Newton path they replace."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

import tabbench.metrics as M
import tabbench.metrics.batched as B
import tabbench.metrics.fold_taylor as FT
import tabbench.metrics.temperature as T
import tabbench.metrics.ts_kernel as K
from tabbench.metrics.folds import cv_folds


def cumulant_terms(z: np.ndarray, y: np.ndarray, beta: float) -> np.ndarray:
    """T_j = β^j d^jNLL/dβ^j (5, N) in float64 from the moments of z under softmax(βz):
    d/dβ = E[z] − z_y, and d^j/dβ^j = κ_j (the j-th cumulant of z) for j ≥ 2."""
    p = M.softmax(beta * z)
    mu = (p * z).sum(1)
    d = z - mu[:, None]
    m = {j: (p * d**j).sum(1) for j in range(2, 6)}
    kappa = {
        1: mu - z[np.arange(len(y)), y],
        2: m[2],
        3: m[3],
        4: m[4] - 3 * m[2] ** 2,
        5: m[5] - 10 * m[3] * m[2],
    }
    return np.stack([beta**j * kappa[j] for j in range(1, 6)])


@pytest.mark.parametrize("k", [2, 4])
def test_derivative_terms_equal_cumulants(make, k):
    z, y = make(500, k, scale=2.0, n_epochs=3, seed=7 + k)
    z = z.astype(np.float32)
    prep = K.prepare(z, y)
    beta = np.array([0.4, 1.3, 3.0])
    ws = K.Workspace()
    stats = K.sample_stats(prep, beta, ws)
    got = FT.derivative_terms(prep, beta, stats, ws)
    for e in range(3):
        want = cumulant_terms(z[e].astype(np.float64), y, beta[e])
        for j in range(5):
            scale = np.abs(want[j]).max()
            np.testing.assert_allclose(got[j, e], want[j], atol=2e-5 * scale, err_msg=f"T{j + 1}")


def test_stirling_assembly_is_the_derivative_in_log_beta(make):
    """D^k ℓ = Σ_j S(k, j) T_j: each order is the b-derivative of the previous one."""
    z, y = make(400, 3, scale=1.5, seed=11)

    def mean_d(b: float) -> np.ndarray:  # mean D^1..D^5 at b
        return FT.STIRLING2 @ cumulant_terms(z, y, np.exp(b)).mean(axis=1)

    b, h = 0.2, 1e-4
    numeric = (mean_d(b + h)[:4] - mean_d(b - h)[:4]) / (2 * h)
    np.testing.assert_allclose(mean_d(b)[1:], numeric, rtol=1e-6)


def exact_fold_log_betas(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    folds = cv_folds(y)
    out = []
    for f in range(5):
        zf, yf = z[folds != f], y[folds != f]

        def grad(b: float, zf=zf, yf=yf) -> float:
            p = M.softmax(np.exp(b) * zf)
            return float(np.mean((p * zf).sum(1) - zf[np.arange(len(yf)), yf]))

        out.append(brentq(grad, -8.0, 8.0, xtol=1e-13, rtol=1e-15))
    return np.array(out)


def _fold_problem(z: np.ndarray, y: np.ndarray):
    folds = cv_folds(y)
    perm = np.argsort(folds, kind="stable")
    bounds = np.searchsorted(folds[perm], np.arange(6))
    prep = K.prepare(np.take(z, perm, axis=1), y[perm])
    ws = K.Workspace()
    b_all, stats = T.fit_log_beta_prepared(prep, None, ws)
    return prep, bounds, b_all, stats, ws


@pytest.mark.parametrize("k, scale", [(2, 1.0), (2, 3.0), (3, 1.0)])
def test_accepted_fold_optima_are_exact_on_large_sets(make, k, scale):
    """With thousands of samples the folds move b by ~1e-2: the model is accepted for most
    problems (those moving ≳ 0.04 here are left to the exact solver) and the accepted optima
    are within the solver tolerance of the exact fold optima."""
    z, y = make(4000, k, scale=scale, n_epochs=2, seed=3 + k)
    prep, bounds, b_all, stats, ws = _fold_problem(z, y)
    b, ok = FT.fold_optima(prep, bounds, b_all, stats, ws)
    assert ok.mean() >= 0.6
    for e in range(2):
        exact = exact_fold_log_betas(z[e], y)
        got = b.reshape(5, 2)[:, e]
        acc = ok.reshape(5, 2)[:, e]
        np.testing.assert_allclose(got[acc], exact[acc], atol=1e-7)


def test_small_sets_fall_back_to_the_exact_solver(make):
    """Few samples: folds move b far, the error estimate rejects the model for some problems,
    and ts_ref_cv5 still equals the exact definition."""
    z, y = make(40, 2, scale=3.0, n_epochs=3, seed=12)
    prep, bounds, b_all, stats, ws = _fold_problem(z, y)
    _, ok = FT.fold_optima(prep, bounds, b_all, stats, ws)
    assert not ok.all()
    out = M.stopping_metrics_batched(z, y)
    for e in range(3):
        assert out["ts_ref_cv5"][e] == pytest.approx(M.ts_ref_cv5(z[e], y), rel=1e-6)


@pytest.mark.parametrize("k", [2, 5])
def test_taylor_path_equals_exact_path(make, k, monkeypatch):
    z, y = make(3000, k, scale=2.0, n_epochs=4, seed=21 + k)
    taylor = M.stopping_metrics_batched(z, y)["ts_ref_cv5"]

    def reject_all(prep, bounds, b_all, stats, ws):
        n = (len(bounds) - 1) * len(b_all)
        return np.tile(b_all, len(bounds) - 1), np.zeros(n, dtype=bool)

    monkeypatch.setattr(B, "fold_optima", reject_all)
    exact = M.stopping_metrics_batched(z, y)["ts_ref_cv5"]
    np.testing.assert_allclose(taylor, exact, rtol=1e-8)


def test_empty_fold_is_never_accepted(make):
    z, y = make(50, 2, n_epochs=1, seed=1)
    prep = K.prepare(z, y)
    ws = K.Workspace()
    b_all, stats = T.fit_log_beta_prepared(prep, None, ws)
    bounds = np.array([0, 10, 10, 30, 40, 50])
    b, ok = FT.fold_optima(prep, bounds, b_all, stats, ws)
    assert not ok.any() and np.array_equal(b, np.tile(b_all, 5))
