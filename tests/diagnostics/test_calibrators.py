"""Post-hoc calibrators: isotonic against scikit-learn, Platt and vector scaling against a
direct optimisation of the same objective with scipy, hand-computed cases, and ``none``/``ts``
against the records' definitions."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from tabbench import metrics
from tabbench.diagnostics.calibrators import (
    RIDGE,
    IsotonicCalibrator,
    PlattCalibrator,
    VectorScaling,
    calibrate_and_score,
    make_calibrator,
)
from tabbench.metrics import TemperatureScaling, softmax


def logits_and_labels(n: int, k: int, seed: int, scale: float = 2.0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * scale
    # labels drawn from a miscalibrated version of the model (too confident by 2x)
    p = softmax(0.5 * z + rng.normal(size=k) * 0.3)
    y = np.array([rng.choice(k, p=row) for row in p])
    return z.astype(np.float32), y


class Frozen:
    """A fitted 'classifier' whose predict_proba returns given probabilities for row ids."""

    def __init__(self, p: np.ndarray) -> None:
        self.p = p
        self.classes_ = np.arange(p.shape[1])

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        return self.p[np.asarray(X)[:, 0].astype(int)]

    def predict(self, X):
        return self.predict_proba(X).argmax(axis=1)


@pytest.mark.parametrize("k", [2, 4])
def test_isotonic_matches_sklearn_calibrated_classifier(k):
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.frozen import FrozenEstimator

    z_val, y_val = logits_and_labels(400, k, 0)
    z_test, _ = logits_and_labels(300, k, 1)
    p_all = softmax(np.concatenate([z_val, z_test]).astype(np.float64))

    class Model(Frozen, ClassifierMixin, BaseEstimator):
        pass

    X_val = np.arange(400)[:, None]
    X_test = np.arange(400, 700)[:, None]
    ref = CalibratedClassifierCV(FrozenEstimator(Model(p_all)), method="isotonic")
    ref.fit(X_val, y_val)
    ours = IsotonicCalibrator(smoothing=False).fit(z_val, y_val).predict_proba(z_test)
    np.testing.assert_allclose(ours, ref.predict_proba(X_test), rtol=0, atol=1e-12)


def test_isotonic_hand_computed():
    # p1 on val: 0.1, 0.4, 0.6, 0.9 with labels 0, 1, 0, 1: PAV pools the middle pair to 0.5
    p1 = np.array([0.1, 0.4, 0.6, 0.9])
    z = np.stack([np.zeros(4), np.log(p1 / (1 - p1))], axis=1)
    cal = IsotonicCalibrator(smoothing=False).fit(z, np.array([0, 1, 0, 1]))
    q = np.array([0.05, 0.1, 0.5, 0.6, 0.95])
    got = cal.predict_proba(np.stack([np.zeros(5), np.log(q / (1 - q))], axis=1))
    np.testing.assert_allclose(got[:, 1], [0.0, 0.0, 0.5, 0.5, 1.0], atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    # smoothing with n = 4, K = 2: 4/5·p + 1/10
    smooth = IsotonicCalibrator().fit(z, np.array([0, 1, 0, 1])).predict_proba(z[:1])
    np.testing.assert_allclose(smooth[0], [0.9, 0.1])


def test_isotonic_multiclass_all_zero_row_is_uniform():
    # class c is predicted 1 on val only where p_c is its highest value; a test row below
    # every fitted point of every class gets 0 everywhere, then uniform
    z_val = np.log(np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]))
    cal = IsotonicCalibrator(smoothing=False).fit(z_val, np.array([0, 1, 2]))
    got = cal.predict_proba(np.log(np.array([[1 / 3, 1 / 3, 1 / 3]])))
    np.testing.assert_allclose(got, [[1 / 3, 1 / 3, 1 / 3]])


def scipy_platt(m, y, ridge=RIDGE):
    def f(t):
        a, b = t
        s = np.where(y == 1, 1.0, -1.0)
        return np.mean(np.log1p(np.exp(-s * (a * m + b)))) + ridge / 2 * ((a - 1) ** 2 + b**2)

    return minimize(f, x0=[0.3, 0.3], method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}), f


def test_platt_matches_direct_optimisation():
    z, y = logits_and_labels(500, 2, 3)
    cal = PlattCalibrator(smoothing=False).fit(z, y)
    m = (z[:, 1] - z[:, 0]).astype(np.float64)
    ref, f = scipy_platt(m, y)
    assert ref.success
    np.testing.assert_allclose([cal.a_, cal.b_], ref.x, atol=1e-5)
    assert f([cal.a_, cal.b_]) <= ref.fun + 1e-12
    # the data were drawn from σ(0.5 m + const): the fitted slope is far below 1
    assert 0.3 < cal.a_ < 0.7


def test_platt_hand_computed():
    # m = 0 everywhere, 3 of 4 labels positive: σ(b) − 3/4 + ridge·b = 0, i.e. b = logit(3/4)
    # = log 3 less the ridge's pull, to first order ridge·log 3 / σ'(log 3) = ridge·log 3/(3/16);
    # a stays at 1 (only the ridge sees it)
    z = np.zeros((4, 2))
    cal = PlattCalibrator(smoothing=False).fit(z, np.array([1, 1, 1, 0]))
    assert cal.b_ == pytest.approx(np.log(3) - RIDGE * np.log(3) / (3 / 16), abs=1e-10)
    assert cal.a_ == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(cal.predict_proba(z[:1]), [[0.25, 0.75]], atol=2e-6)


def test_platt_on_separable_validation_stays_finite():
    z = np.array([[0.0, -2.0], [0.0, -1.0], [0.0, 1.0], [0.0, 2.0]])
    cal = PlattCalibrator().fit(z, np.array([0, 0, 1, 1]))
    assert np.isfinite([cal.a_, cal.b_]).all() and cal.a_ > 1
    p = cal.predict_proba(np.array([[0.0, -5.0]]))
    assert np.all(p > 0) and np.isfinite(np.log(p)).all()


def test_vector_scaling_matches_direct_optimisation():
    z, y = logits_and_labels(600, 3, 4)
    z64 = z.astype(np.float64)
    cal = VectorScaling(smoothing=False).fit(z, y)

    def f(t):
        w, b = t[:3], t[3:]
        u = z64 * w + b
        nll = np.mean(logsumexp(u, axis=1) - u[np.arange(len(y)), y])
        return nll + RIDGE / 2 * (np.sum((w - 1) ** 2) + np.sum(b**2))

    ref = minimize(f, x0=np.r_[np.full(3, 0.7), np.zeros(3)], method="BFGS",
                   options={"gtol": 1e-10})
    ours = np.r_[cal.w_, cal.b_]
    assert f(ours) <= ref.fun + 1e-10
    assert f(ours) == pytest.approx(ref.fun, abs=1e-9)
    # the scales are identified; the biases up to a common shift that the ridge pins down
    np.testing.assert_allclose(cal.w_, ref.x[:3], atol=1e-4)
    np.testing.assert_allclose(cal.b_ - cal.b_.mean(), ref.x[3:] - ref.x[3:].mean(), atol=1e-4)


def test_vector_scaling_hand_computed():
    # all logits 0: only the biases matter, and softmax(b) = the class frequencies
    y = np.array([0] * 5 + [1] * 3 + [2] * 2)
    cal = VectorScaling(smoothing=False).fit(np.zeros((10, 3)), y)
    np.testing.assert_allclose(cal.predict_proba(np.zeros((1, 3))), [[0.5, 0.3, 0.2]],
                               atol=1e-5)
    np.testing.assert_allclose(cal.b_.sum(), 0.0, atol=1e-6)  # the ridge centres the biases


def test_make_calibrator_platt_for_binary_vector_for_multiclass():
    assert isinstance(make_calibrator("platt_vector", 2), PlattCalibrator)
    assert isinstance(make_calibrator("platt_vector", 5), VectorScaling)
    assert isinstance(make_calibrator("ts", 3), TemperatureScaling)
    with pytest.raises(ValueError, match="unknown calibrator"):
        make_calibrator("beta", 2)


@pytest.mark.parametrize("k", [2, 3])
def test_none_and_ts_scores_equal_the_records_definitions(k):
    z_val, y_val = logits_and_labels(500, k, 5)
    z_test, y_test = logits_and_labels(400, k, 6)
    got = calibrate_and_score(z_val, y_val, z_test, y_test)
    beta = TemperatureScaling().fit(z_val, y_val).beta_
    rec = metrics.metrics_on_test_batched(z_test[None], y_test, np.array([beta]), len(y_val))
    for m in ("logloss", "brier", "ece"):
        assert got["none"][m] == pytest.approx(rec[m][0], rel=1e-6), m
        assert got["ts"][m] == pytest.approx(rec[f"{m}_ts"][0], rel=1e-6), m
    # the data are miscalibrated: every fitted calibrator beats the raw model's log loss
    for name in ("ts", "isotonic", "platt_vector"):
        assert got[name]["logloss"] < got["none"]["logloss"]
