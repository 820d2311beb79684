"""The recorder's speed-ups compute the same numbers: Newton with accepted short steps and
derivative-only evaluations, CV folds solved as one batch, warm starts, packed-key sorting and
sparse tie handling. References here are independent float64 computations (scipy's brentq on
the exact derivative) or the single-epoch definitions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import brentq

import tabbench.metrics as M
import tabbench.metrics.ts_kernel as K
import tabbench.metrics.ts_solver as S
from tabbench.metrics.folds import cv_folds
from tabbench.metrics.ranking import _argsort_rows, auroc_rows, isotonic_rows, sort_rows, unsort
from tabbench.metrics.registry import stopping_metric_ids

RTOL = {"ts_ref_brier": 2e-6, "brier": 2e-6}


def exact_log_beta(z: np.ndarray, y: np.ndarray) -> float:
    """argmin_b NLL(e^b z) in float64 by bracketing the root of dNLL/db (independent)."""

    def grad(b: float) -> float:
        p = M.softmax(np.exp(b) * z)
        return float(np.mean((p * z).sum(1) - z[np.arange(len(y)), y]))

    return brentq(grad, -8.0, 8.0, xtol=1e-13, rtol=1e-15)


def exact_ts_ref_cv5(z: np.ndarray, y: np.ndarray) -> float:
    folds = cv_folds(y)
    nll = np.empty(len(y))
    for f in range(5):
        fit, held = folds != f, folds == f
        beta = np.exp(exact_log_beta(z[fit], y[fit]))
        q = M.laplace_smooth(M.softmax(beta * z[held]), int(fit.sum()))
        nll[held] = -np.log(q[np.arange(int(held.sum())), y[held]])
    return float(nll.mean())


@pytest.mark.parametrize("k, scale", [(2, 0.3), (2, 4.0), (5, 1.0), (26, 2.0)])
def test_fits_are_exact_to_tolerance(make, k, scale):
    """β and the CV-fold fits agree with a bracketing float64 root to ~1e-7 in log β."""
    z, y = make(400, k, scale=scale, n_epochs=3, seed=k)
    out = M.stopping_metrics_batched(z, y)
    for e in range(3):
        assert np.log(out["beta"][e]) == pytest.approx(exact_log_beta(z[e], y), abs=3e-7)
        assert out["ts_ref_cv5"][e] == pytest.approx(exact_ts_ref_cv5(z[e], y), rel=1e-6)


def test_accepted_steps_save_evaluations_not_accuracy(make):
    """The accept rule ends fits one evaluation early at the same optimum as stopping only at
    an evaluated point with a step below the tolerance."""
    z, y = make(500, 3, scale=2.0, n_epochs=6, seed=3)
    prep = K.prepare(z, y)
    results, evals = {}, {}
    for name, kw in {"tol only": dict(accept=0.0, tol=S.LOG_BETA_TOL), "accept": {}}.items():
        count = [0]
        evaluate = K.full_data_evaluator(prep, K.Workspace())

        def counted(beta, idx, evaluate=evaluate, count=count):
            count[0] += idx.size
            return evaluate(beta, idx)

        results[name] = S.solve_log_beta(counted, np.zeros(6), **kw)
        evals[name] = count[0]
    exact = [exact_log_beta(z[e], y) for e in range(6)]
    np.testing.assert_allclose(results["accept"], exact, atol=2e-7)
    np.testing.assert_allclose(results["tol only"], exact, atol=2e-7)
    assert evals["accept"] < evals["tol only"]


@pytest.mark.parametrize("k", [2, 26])
def test_warm_started_fits_equal_cold_fits(make, k):
    z, y = make(300, k, scale=2.0, n_epochs=5, seed=20 + k)
    cold = M.stopping_metrics_batched(z, y)
    for beta0 in (cold["beta"], float(cold["beta"][0]), 40.0, 1e-3):
        warm = M.stopping_metrics_batched(z, y, beta0=beta0)
        for m in cold:
            np.testing.assert_allclose(warm[m], cold[m], rtol=1e-6, err_msg=f"{m} {beta0}")


@pytest.mark.parametrize("k", [2, 26])
def test_fast_path_equals_definitions_with_nan_epoch_and_missing_classes(make, k):
    z, y = make(260, k, scale=1.5, n_epochs=4, seed=30 + k)
    if k > 2:
        y = np.where(y >= k - 3, 0, y)  # the last three classes never occur
    z = z.astype(np.float32)
    z[2, 7, 0] = np.nan
    out = M.stopping_metrics_batched(z, y)
    for e in (0, 1, 3):
        single = M.stopping_metrics(z[e].astype(np.float64), y)
        for m in stopping_metric_ids():
            expected = pytest.approx(single[m], rel=RTOL.get(m, 1e-6), abs=1e-9, nan_ok=True)
            assert out[m][e] == expected, (m, e)
    assert all(np.isnan(v[2]) for v in out.values())


@pytest.mark.parametrize("k", [2, 7])
def test_derivative_sums_equal_per_sample_stats(make, k):
    """The Newton iterations' derivative-only pass equals the full stats' g and h."""
    z, y = make(300, k, scale=2.0, n_epochs=4, seed=40 + k)
    prep = K.prepare(z.astype(np.float32), y)
    beta = np.array([0.3, 1.0, 2.5, 7.0])
    st = K.sample_stats(prep, beta, K.Workspace())
    for cols in (slice(None), slice(0, 90), slice(150, 300)):
        g, h = K.derivative_sums(prep, None, cols, beta, K.Workspace())
        np.testing.assert_allclose(g, st.g[:, cols].sum(1, dtype=np.float64), rtol=1e-5,
                                   atol=1e-4)
        np.testing.assert_allclose(h, st.h[:, cols].sum(1, dtype=np.float64), rtol=1e-4)
        rows = np.array([3, 1])
        g_r, _ = K.derivative_sums(prep, rows, cols, beta[rows], K.Workspace())
        np.testing.assert_allclose(g_r, g[rows], rtol=1e-6, atol=1e-6)


def _sorted_values(x, rows):
    return np.take_along_axis(x, rows.order, axis=1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packed_key_sort_equals_argsort(dtype):
    rng = np.random.default_rng(5)
    cases = [
        rng.normal(size=(4, 500)),
        np.round(rng.normal(size=(4, 500)), 1),  # many ties
        1.0 + rng.integers(0, 4, size=(4, 500)) * 2e-16,  # differ only in the last bits
        np.where(rng.random((4, 500)) < 0.5, -0.0, 0.0),  # signed zeros are equal
        np.asfortranarray(rng.normal(size=(4, 500))),  # any memory layout
    ]
    for x in cases:
        x = x.astype(dtype)
        fast, ref = sort_rows(x), _argsort_rows(x)
        assert np.array_equal(_sorted_values(x, fast), _sorted_values(x, ref))
        assert np.array_equal(fast.new_group, ref.new_group)
        assert (np.sort(fast.order, axis=1) == np.arange(500)).all()
        labels = rng.random(x.shape) < 0.3
        pos_f = np.take_along_axis(labels, fast.order, axis=1)
        pos_r = np.take_along_axis(labels, ref.order, axis=1)
        # any order within ties: identical AUROC and isotonic fits
        np.testing.assert_array_equal(auroc_rows(fast, pos_f), auroc_rows(ref, pos_r))
        np.testing.assert_allclose(unsort(isotonic_rows(fast, pos_f), fast),
                                   unsort(isotonic_rows(ref, pos_r), ref), atol=1e-15)


def test_sparse_ties_equal_dense_midranks():
    """The mid-rank correction on tie groups equals ranking with scipy's mid-ranks."""
    from scipy.stats import rankdata

    rng = np.random.default_rng(6)
    x = np.round(rng.normal(size=(5, 400)), 2)
    x[0] = 1.0  # a row that is one tie group
    labels = rng.random(x.shape) < 0.4
    rows = sort_rows(x)
    auc = auroc_rows(rows, np.take_along_axis(labels, rows.order, axis=1))
    for r in range(5):
        n_pos = labels[r].sum()
        ranks = rankdata(x[r])
        ref = (ranks[labels[r]].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * (400 - n_pos))
        assert auc[r] == pytest.approx(ref, rel=1e-12)
