"""Temperature scaling: optimality, agreement with the paper's bisection, invariances."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError

import tabbench.metrics as M
from tabbench.metrics.temperature import fit_log_beta_prepared
from tabbench.metrics.ts_kernel import prepare
from tabbench.metrics.ts_solver import LOG_BETA_BOUND


def nll_derivative(z: np.ndarray, y: np.ndarray, beta: float) -> float:
    """dNLL/dβ in float64 (independent of the implementation under test)."""
    p = M.softmax(beta * z)
    return float(np.mean((p * z).sum(1) - z[np.arange(len(y)), y]))


CASES = [
    dict(n=300, k=2, scale=0.2),  # under-confident: β > 1
    dict(n=300, k=2, scale=6.0),  # over-confident: β < 1
    dict(n=500, k=3, scale=1.0),
    dict(n=500, k=10, scale=0.05),
    dict(n=2000, k=10, scale=20.0),
    dict(n=400, k=100, scale=2.0, signal=3.0),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['k']}cls-scale{c['scale']}")
def test_beta_is_optimal_derivative_changes_sign(make, case):
    z, y = make(**case, seed=case["k"])
    beta = M.fit_temperature(z, y)
    assert nll_derivative(z, y, beta * (1 - 1e-5)) < 0 < nll_derivative(z, y, beta * (1 + 1e-5))
    # same optimum as the paper's 30-step bisection (precision 32/2^30 in log β)
    assert np.log(beta) == pytest.approx(np.log(M.fit_temperature_bisection(z, y)), abs=1e-6)


def test_batched_beta_matches_single_and_warm_start(make):
    z, y = make(300, 4, n_epochs=12, seed=1)
    betas = M.fit_temperature_batched(z, y)
    single = [M.fit_temperature(z[e], y) for e in range(12)]
    np.testing.assert_allclose(betas, single, rtol=1e-6)
    for beta0 in (betas, 50.0, 1e-3):  # exact, far above, far below
        np.testing.assert_allclose(M.fit_temperature_batched(z, y, beta0=beta0), betas, rtol=1e-6)
    np.testing.assert_allclose(M.fit_temperature_batched(z.astype(np.float32), y), betas, rtol=1e-5)


def test_separable_set_goes_to_upper_bound():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    z = np.zeros((200, 2))
    z[np.arange(200), y] = rng.uniform(0.1, 1.0, 200)  # every sample correct with margin
    beta = M.fit_temperature(z, y)
    assert np.log(beta) == pytest.approx(LOG_BETA_BOUND)
    assert np.log(M.fit_temperature_bisection(z, y)) == pytest.approx(LOG_BETA_BOUND, abs=1e-6)
    assert M.ts_ref(z, y) == pytest.approx(-np.log(200 / 201 + 1 / 402), rel=1e-6)


def test_constant_logits_are_harmless():
    y = np.array([0, 1, 2, 1, 1] * 6)
    z = np.zeros((30, 3))
    beta = M.fit_temperature(z, y)  # flat NLL: any β is optimal; like the bisection, b → 16
    assert np.isfinite(beta)
    assert M.ts_ref(z, y) == pytest.approx(np.log(3))
    res = M.stopping_metrics(z, y)
    assert all(np.isfinite(v) for v in res.values())
    assert res["auroc"] == pytest.approx(0.5)  # all scores tied


def test_cv5_impossible_gives_nan():
    z = np.zeros((4, 2))
    assert np.isnan(M.ts_ref_cv5(z, np.array([0, 1, 0, 1])))  # fewer samples than folds
    out = M.stopping_metrics_batched(z[None], np.array([0, 1, 0, 1]))
    assert np.isnan(out["ts_ref_cv5"][0]) and np.isfinite(out["ts_ref"][0])


def test_temperature_scaling_keeps_accuracy_and_smooths(make):
    z, y = make(500, 5, scale=4.0, seed=3)
    ts = M.TemperatureScaling().fit(z, y)
    assert ts.beta_ == pytest.approx(M.fit_temperature(z, y))
    z_test, _ = make(200, 5, scale=4.0, seed=4)
    p = ts.predict_proba(z_test)
    np.testing.assert_array_equal(p.argmax(1), z_test.argmax(1))  # accuracy invariant
    np.testing.assert_array_equal(ts.predict(z_test), z_test.argmax(1))
    raw = M.TemperatureScaling(smoothing=False).fit(z, y).predict_proba(z_test)
    np.testing.assert_allclose(p, 500 / 501 * raw + 1 / (501 * 5))
    np.testing.assert_allclose(p.sum(1), 1.0)
    with pytest.raises(NotFittedError):
        M.TemperatureScaling().predict_proba(z_test)
    with pytest.raises(ValueError):
        ts.predict_proba(z_test[:, :3])


def test_binary_fast_path_equals_multiclass_path(make):
    z, y = make(400, 2, scale=3.0, n_epochs=5, seed=5)
    fast = prepare(z.astype(np.float32), y)
    general = prepare(z.astype(np.float32), y, force_multiclass=True)
    assert fast.binary and not general.binary
    b_fast, st_fast = fit_log_beta_prepared(fast)
    b_gen, st_gen = fit_log_beta_prepared(general)
    np.testing.assert_allclose(b_fast, b_gen, atol=1e-6)
    for field in ("nll", "other", "other_sq", "pmax"):
        np.testing.assert_allclose(
            getattr(st_fast, field), getattr(st_gen, field), rtol=2e-5, atol=1e-7
        )


def test_binary_equals_two_class_softmax_of_shifted_logits(make):
    """Only logit differences matter: adding a per-row constant changes nothing."""
    z, y = make(300, 2, seed=6)
    shift = np.random.default_rng(6).normal(size=(300, 1)) * 5
    assert M.fit_temperature(z + shift, y) == pytest.approx(M.fit_temperature(z, y), rel=1e-6)
    assert M.ts_ref(z + shift, y) == pytest.approx(M.ts_ref(z, y), rel=1e-9)
