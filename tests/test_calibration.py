"""tabbench.calibration: temperature scaling as scikit-learn estimators."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import cross_val_score
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier

import tabbench.metrics as M
from tabbench.calibration import TemperatureScaledClassifier, TemperatureScaling, proba_to_logits


def _logits(n: int, k: int, scale: float, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    return scale * z, y


# ---------------------------------------------------------------------------------------------
# TemperatureScaling (on logits)
# ---------------------------------------------------------------------------------------------


def test_one_definition():
    assert TemperatureScaling is M.TemperatureScaling


def test_temperature_scaling_is_a_sklearn_estimator():
    ts = TemperatureScaling()
    assert ts.get_params() == {"smoothing": True}
    assert ts.set_params(smoothing=False) is ts and ts.smoothing is False
    z, y = _logits(300, 3, 3.0, 0)
    for method in ("predict_proba", "predict"):
        with pytest.raises(NotFittedError):
            getattr(TemperatureScaling(), method)(z)
    fitted = TemperatureScaling().fit(z, y)
    copy = clone(fitted)
    assert copy.get_params() == fitted.get_params() and not hasattr(copy, "beta_")
    assert fitted.score(z, y) == pytest.approx(np.mean(z.argmax(1) == y))  # ClassifierMixin


@pytest.mark.parametrize("k", [2, 5])
def test_temperature_scaling_fit_and_laplace_smoothing(k):
    z, y = _logits(400, k, 4.0, k)  # over-confident: beta < 1
    ts = TemperatureScaling().fit(z, y)
    assert ts.beta_ == pytest.approx(M.fit_temperature(z, y), rel=1e-12) and ts.beta_ < 1
    assert ts.n_classes_ == k and ts.n_fit_ == 400 and list(ts.classes_) == list(range(k))
    z_new, _ = _logits(100, k, 4.0, 10 + k)
    p = np.exp(ts.beta_ * z_new)
    p /= p.sum(1, keepdims=True)
    np.testing.assert_allclose(ts.predict_proba(z_new), 400 / 401 * p + 1 / (401 * k))
    np.testing.assert_allclose(TemperatureScaling(smoothing=False).fit(z, y).predict_proba(z_new),
                               p)
    np.testing.assert_array_equal(ts.predict(z_new), z_new.argmax(1))


def test_binary_margins_and_log_probabilities_are_logits():
    z, y = _logits(500, 2, 3.0, 1)
    full = TemperatureScaling().fit(z, y)
    margin = TemperatureScaling().fit(z[:, 1] - z[:, 0], y)
    assert margin.beta_ == pytest.approx(full.beta_, rel=1e-9) and margin.n_classes_ == 2
    np.testing.assert_allclose(margin.predict_proba(z[:, 1] - z[:, 0]), full.predict_proba(z),
                               rtol=1e-9)
    # log softmax(z) = z - const per row: the same temperature and probabilities
    zm, ym = _logits(500, 4, 3.0, 2)
    log_p = zm - np.log(np.exp(zm).sum(1, keepdims=True))
    a, b = TemperatureScaling().fit(zm, ym), TemperatureScaling().fit(log_p, ym)
    assert a.beta_ == pytest.approx(b.beta_, rel=1e-6)
    np.testing.assert_allclose(a.predict_proba(zm), b.predict_proba(log_p), rtol=1e-6)


def test_temperature_scaling_rejects_bad_input():
    z, y = _logits(50, 3, 1.0, 3)
    ts = TemperatureScaling().fit(z, y)
    with pytest.raises(ValueError, match="K = 3"):
        ts.predict_proba(z[:, :2])
    with pytest.raises(ValueError, match="NaN or inf"):
        ts.predict_proba(np.full((2, 3), np.inf))
    with pytest.raises(ValueError, match="class codes"):
        TemperatureScaling().fit(z, y + 5)


def test_proba_to_logits_clipping():
    # binary: from P(class 1), margins within ±log(2/eps) of the dtype
    cap32 = np.log(2 / np.finfo(np.float32).eps)
    z = proba_to_logits(np.array([[0.0, 1.0], [1.0, 0.0], [0.5, 0.5]], dtype=np.float32))
    np.testing.assert_allclose(z[:, 1] - z[:, 0], [cap32, -cap32, 0.0], rtol=1e-6)
    p1 = np.array([1.0, 0.0, 0.5], dtype=np.float32)
    np.testing.assert_allclose(proba_to_logits(p1), z, rtol=1e-6)
    # multiclass: log p, zeros at the smallest normal float, or at ``clip``
    p = np.array([[0.0, 0.25, 0.75]])
    np.testing.assert_allclose(proba_to_logits(p)[0, 1:], np.log([0.25, 0.75]))
    assert proba_to_logits(p)[0, 0] == pytest.approx(np.log(np.finfo(np.float64).tiny))
    assert proba_to_logits(p, clip=1e-6)[0, 0] == pytest.approx(np.log(1e-6))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        proba_to_logits(np.array([[-0.5, 1.5]]))


# ---------------------------------------------------------------------------------------------
# TemperatureScaledClassifier (wraps a fitted classifier)
# ---------------------------------------------------------------------------------------------


def _split(k: int, seed: int = 0):
    X, y = make_classification(3000, 20, n_informative=8, n_classes=k, flip_y=0.05,
                               random_state=seed)
    labels = np.array(["cat", "dog", "emu", "fox"])[:k]  # string labels, mapped via classes_
    y = labels[y]
    return (X[:600], y[:600]), (X[600:1800], y[600:1800]), (X[1800:], y[1800:])


@pytest.mark.parametrize("k", [2, 4])
def test_wrapped_classifier_scales_its_logits(k):
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(k)
    # weak regularisation on few samples: over-confident probabilities
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X_tr, y_tr)
    tsc = TemperatureScaledClassifier(lr).fit(X_val, y_val)
    np.testing.assert_array_equal(tsc.classes_, lr.classes_)
    assert tsc.n_classes_ == k and tsc.beta_ < 1
    # log predict_proba = logits up to a row constant: same as scaling decision_function
    codes = np.searchsorted(lr.classes_, y_val)
    on_logits = TemperatureScaling().fit(lr.decision_function(X_val), codes)
    assert tsc.beta_ == pytest.approx(on_logits.beta_, rel=1e-6)
    np.testing.assert_allclose(tsc.predict_proba(X_te),
                               on_logits.predict_proba(lr.decision_function(X_te)), rtol=1e-6)
    via_df = TemperatureScaledClassifier(lr, response_method="decision_function").fit(X_val,
                                                                                     y_val)
    assert via_df.beta_ == pytest.approx(on_logits.beta_, rel=1e-12)
    # never changes the decision; lowers validation log loss (smoothing off: TS minimises it)
    np.testing.assert_array_equal(tsc.predict(X_te), lr.predict(X_te))
    plain = TemperatureScaledClassifier(lr, smoothing=False).fit(X_val, y_val)
    raw_ll = log_loss(y_val, lr.predict_proba(X_val), labels=lr.classes_)
    assert log_loss(y_val, plain.predict_proba(X_val), labels=lr.classes_) < raw_ll - 1e-3
    assert log_loss(y_val, tsc.predict_proba(X_val), labels=lr.classes_) < raw_ll


def test_validation_logloss_never_increases():
    """Even for a model that is already calibrated (beta ~ 1), TS cannot make val worse."""
    (X_tr, y_tr), (X_val, y_val), _ = _split(3, seed=5)
    lr = LogisticRegression(C=1.0, max_iter=2000).fit(X_tr, y_tr)
    for fit_on in (X_val, X_tr):  # also on the training set, where LR is calibrated
        y_fit = y_val if fit_on is X_val else y_tr
        tsc = TemperatureScaledClassifier(lr, smoothing=False).fit(fit_on, y_fit)
        before = log_loss(y_fit, lr.predict_proba(fit_on), labels=lr.classes_)
        assert log_loss(y_fit, tsc.predict_proba(fit_on), labels=lr.classes_) <= before + 1e-12


def test_decision_function_only_and_xgboost():
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(2)
    svm = LinearSVC().fit(X_tr, y_tr)  # binary (N,) margins, no predict_proba
    tsc = TemperatureScaledClassifier(svm).fit(X_val, y_val)
    p = tsc.predict_proba(X_te)
    assert p.shape == (len(X_te), 2)
    np.testing.assert_allclose(p.sum(1), 1.0)
    np.testing.assert_array_equal(tsc.predict(X_te), svm.predict(X_te))
    xgb = pytest.importorskip("xgboost")
    for k in (2, 3):
        (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(k, seed=k)
        codes = {c: i for i, c in enumerate(np.unique(y_tr))}
        to_codes = np.vectorize(codes.get)
        model = xgb.XGBClassifier(n_estimators=50, max_depth=4, n_jobs=1).fit(X_tr,
                                                                           to_codes(y_tr))
        tsc = TemperatureScaledClassifier(model).fit(X_val, to_codes(y_val))
        np.testing.assert_array_equal(tsc.predict(X_te), model.predict(X_te))
        assert tsc.predict_proba(X_te).shape == (len(X_te), k)


def test_exact_zero_probabilities_are_clipped():
    """A fully grown tree outputs p = 0 and 1: the fit stays finite; ``clip`` softens it."""
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(3)
    tree = DecisionTreeClassifier(random_state=0).fit(X_tr, y_tr)
    assert (tree.predict_proba(X_val) == 0).any()
    default = TemperatureScaledClassifier(tree).fit(X_val, y_val)
    soft = TemperatureScaledClassifier(tree, clip=1e-3).fit(X_val, y_val)
    for model in (default, soft):
        assert np.isfinite(model.beta_) and np.isfinite(model.predict_proba(X_te)).all()
    assert soft.beta_ > default.beta_  # a zero on the true class costs less with a larger clip
    before = log_loss(y_val, tree.predict_proba(X_val), labels=tree.classes_)
    assert log_loss(y_val, soft.predict_proba(X_val), labels=tree.classes_) < before


def test_clone_keeps_the_fitted_estimator():
    (X_tr, y_tr), (X_val, y_val), _ = _split(3)
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X_tr, y_tr)
    tsc = TemperatureScaledClassifier(lr, smoothing=False).fit(X_val, y_val)
    copy = clone(tsc)
    assert copy.estimator is lr and copy.get_params(deep=False) == tsc.get_params(deep=False)
    assert "estimator__C" in tsc.get_params()
    with pytest.raises(NotFittedError):
        copy.predict_proba(X_val)
    assert copy.fit(X_val, y_val).beta_ == tsc.beta_
    # so model selection can evaluate the calibration step on held-out validation folds
    scores = cross_val_score(TemperatureScaledClassifier(lr), X_val, y_val, cv=3,
                             scoring="neg_log_loss")
    assert np.isfinite(scores).all()
    assert copy.set_params(smoothing=True).smoothing is True


def test_wrapped_classifier_errors():
    (X_tr, y_tr), (X_val, y_val), _ = _split(3)
    lr = LogisticRegression(max_iter=2000).fit(X_tr, y_tr)
    with pytest.raises(ValueError, match="not fitted on.*zebra"):
        TemperatureScaledClassifier(lr).fit(X_val, np.where(y_val == "cat", "zebra", y_val))
    with pytest.raises(ValueError, match="response_method"):
        TemperatureScaledClassifier(lr, response_method="predict").fit(X_val, y_val)
    with pytest.raises(TypeError, match="fitted classifier"):
        TemperatureScaledClassifier(LogisticRegression()).fit(X_val, y_val)
    with pytest.raises(TypeError, match="no predict_proba"):
        svm = LinearSVC().fit(X_tr, y_tr)
        TemperatureScaledClassifier(svm, response_method="predict_proba").fit(X_val, y_val)
