"""tabbench.calibration: temperature scaling as scikit-learn estimators."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import (
    GridSearchCV,
    StratifiedKFold,
    cross_val_predict,
    cross_val_score,
    train_test_split,
)
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils._testing import create_memmap_backed_data
from sklearn.utils.estimator_checks import check_estimator

import tabbench.metrics as M
from tabbench.calibration import TemperatureScaledClassifier, TemperatureScaling, proba_to_logits
from tabbench.metrics.temperature_scaling import SKLEARN_CHECKS_NOT_APPLICABLE


def _logits(n: int, k: int, scale: float, seed: int):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    z = rng.normal(size=(n, k))
    z[np.arange(n), y] += 1.5
    return scale * z, y


def _check_estimator_results(estimator, expected_failed: dict[str, str] | None = None):
    """Run scikit-learn's check_estimator; every check must pass, except the declared ones,
    which must fail (so that the declaration cannot go stale), and the array-API check, which
    scikit-learn itself skips unless SCIPY_ARRAY_API is set before scipy is imported."""
    expected_failed = expected_failed or {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, expected_failed_checks=expected_failed,
                                  on_fail=None)
    assert len(results) > 40
    for r in results:
        name, status, exc = r["check_name"], r["status"], r["exception"]
        if name in expected_failed:
            assert status == "xfail", (name, status)
        elif status == "skipped":
            assert name == "check_array_api_input" and "SCIPY_ARRAY_API" in str(exc), (name, exc)
        else:
            assert status == "passed", (name, repr(exc))
    return results


# ---------------------------------------------------------------------------------------------
# TemperatureScaling (on logits)
# ---------------------------------------------------------------------------------------------


def test_one_definition():
    assert TemperatureScaling is M.TemperatureScaling


def test_temperature_scaling_passes_check_estimator():
    results = _check_estimator_results(TemperatureScaling(), SKLEARN_CHECKS_NOT_APPLICABLE)
    for r in results:  # the declared checks fail for the declared reason, nothing else
        if r["check_name"] in SKLEARN_CHECKS_NOT_APPLICABLE:
            assert isinstance(r["exception"], ValueError)
            assert "distinct labels" in str(r["exception"]), r["exception"]


def test_what_the_not_applicable_checks_check_holds_on_logits():
    """The API properties of the checks that need one column per class, on valid logits."""
    z, y = _logits(200, 3, 2.0, 7)
    ts = TemperatureScaling(smoothing=False)
    params = ts.get_params()
    assert ts.fit(z, y) is ts  # fit returns self
    assert ts.get_params() == params  # fit changes no parameter
    z_ro, y_ro = create_memmap_backed_data([z, y])  # read-only memory maps
    assert TemperatureScaling().fit(z_ro, y_ro).beta_ == pytest.approx(ts.beta_, rel=1e-12)
    labels = np.array(["one", "three", "two"])  # sorted labels, one per column
    named = TemperatureScaling().fit(z, labels[y])
    np.testing.assert_array_equal(named.classes_, labels)
    np.testing.assert_array_equal(named.predict(z), labels[z.argmax(1)])


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
    assert fitted.n_features_in_ == 3
    assert pickle.loads(pickle.dumps(fitted)).beta_ == fitted.beta_


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


def test_absent_classes_keep_their_columns():
    """Integer codes are column indices: a validation set may lack a class."""
    z, y = _logits(300, 4, 2.0, 3)
    keep = y != 2
    ts = TemperatureScaling().fit(z[keep], y[keep])
    np.testing.assert_array_equal(ts.classes_, np.arange(4))
    assert ts.predict_proba(z).shape == (300, 4)
    with pytest.raises(ValueError, match="3 distinct labels.*4 columns"):
        TemperatureScaling().fit(z[keep], np.array(["a", "b", "c", "d"])[y[keep]])


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
    with pytest.raises(ValueError, match="Reshape your data"):  # 1-D only for binary fits
        a.predict_proba(zm[0])


def test_temperature_scaling_rejects_bad_input():
    z, y = _logits(50, 3, 1.0, 3)
    ts = TemperatureScaling().fit(z, y)
    with pytest.raises(ValueError, match="3 features"):
        ts.predict_proba(z[:, :2])
    with pytest.raises(ValueError, match="infinity"):
        ts.predict_proba(np.full((2, 3), np.inf))
    y_bad = y.copy()
    y_bad[0] = 7  # not a column index, and 4 labels for 3 columns
    with pytest.raises(ValueError, match="4 distinct labels"):
        TemperatureScaling().fit(z, y_bad)
    # any 3 labels name the 3 columns in sorted order
    np.testing.assert_array_equal(TemperatureScaling().fit(z, y + 5).classes_, [5, 6, 7])
    with pytest.raises(ValueError, match="1 class"):
        TemperatureScaling().fit(z, np.zeros(50, dtype=int))


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
# TemperatureScaledClassifier: a meta-estimator
# ---------------------------------------------------------------------------------------------


def _split(k: int, seed: int = 0):
    X, y = make_classification(3000, 20, n_informative=8, n_classes=k, flip_y=0.05,
                               random_state=seed)
    labels = np.array(["cat", "dog", "emu", "fox"])[:k]  # string labels, mapped via classes_
    y = labels[y]
    return (X[:600], y[:600]), (X[600:1800], y[600:1800]), (X[1800:], y[1800:])


@pytest.mark.parametrize("cv", [None, 0.25])
def test_meta_estimator_passes_check_estimator(cv):
    _check_estimator_results(TemperatureScaledClassifier(LogisticRegression(), cv=cv))


@pytest.mark.parametrize("k", [2, 4])
def test_frozen_classifier_scales_its_logits(k):
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(k)
    # weak regularisation on few samples: over-confident probabilities
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X_tr, y_tr)
    tsc = TemperatureScaledClassifier(FrozenEstimator(lr)).fit(X_val, y_val)
    np.testing.assert_array_equal(tsc.classes_, lr.classes_)
    assert tsc.n_classes_ == k and tsc.beta_ < 1 and tsc.n_features_in_ == 20
    # log predict_proba = logits up to a row constant: same as scaling decision_function
    codes = np.searchsorted(lr.classes_, y_val)
    on_logits = TemperatureScaling().fit(lr.decision_function(X_val), codes)
    assert tsc.beta_ == pytest.approx(on_logits.beta_, rel=1e-6)
    np.testing.assert_allclose(tsc.predict_proba(X_te),
                               on_logits.predict_proba(lr.decision_function(X_te)), rtol=1e-6)
    via_df = TemperatureScaledClassifier(FrozenEstimator(lr), response_method="decision_function"
                                         ).fit(X_val, y_val)
    assert via_df.beta_ == pytest.approx(on_logits.beta_, rel=1e-12)
    # decision_function: the scaled logits (binary: margin), unsmoothed
    np.testing.assert_allclose(via_df.decision_function(X_te),
                               via_df.beta_ * lr.decision_function(X_te), rtol=1e-12)
    # never changes the decision; lowers validation log loss (smoothing off: TS minimises it)
    np.testing.assert_array_equal(tsc.predict(X_te), lr.predict(X_te))
    plain = TemperatureScaledClassifier(FrozenEstimator(lr), smoothing=False).fit(X_val, y_val)
    raw_ll = log_loss(y_val, lr.predict_proba(X_val), labels=lr.classes_)
    assert log_loss(y_val, plain.predict_proba(X_val), labels=lr.classes_) < raw_ll - 1e-3
    assert log_loss(y_val, tsc.predict_proba(X_val), labels=lr.classes_) < raw_ll


def test_cross_fitted_and_held_out_temperatures():
    """cv=int: temperature on cross_val_predict's out-of-fold outputs, model refit on all;
    cv=float: model on the rest, temperature on the held-out fraction."""
    (X, y), _, (X_te, _) = _split(3, seed=4)
    lr = LogisticRegression(C=1e3, max_iter=5000)
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    tsc = TemperatureScaledClassifier(lr, cv=cv, smoothing=False).fit(X, y)
    oof = cross_val_predict(lr, X, y, cv=cv, method="predict_proba")
    codes = np.searchsorted(np.unique(y), y)
    assert tsc.beta_ == pytest.approx(M.fit_temperature(np.log(oof), codes), rel=1e-6)
    full = clone(lr).fit(X, y)
    np.testing.assert_array_equal(tsc.estimator_.coef_, full.coef_)
    assert lr.get_params() == tsc.estimator.get_params() and not hasattr(lr, "coef_")

    held = TemperatureScaledClassifier(lr, cv=0.3, random_state=1, smoothing=False).fit(X, y)
    X_fit, X_cal, y_fit, y_cal = train_test_split(X, y, test_size=0.3, stratify=y,
                                                  random_state=1)
    fit = clone(lr).fit(X_fit, y_fit)
    np.testing.assert_allclose(held.estimator_.coef_, fit.coef_)
    assert held.beta_ == pytest.approx(
        TemperatureScaling().fit(np.log(fit.predict_proba(X_cal)),
                                 np.searchsorted(fit.classes_, y_cal)).beta_, rel=1e-9)
    assert held.predict_proba(X_te).shape == (len(X_te), 3)


def test_meta_estimator_in_model_selection():
    """Cloned and refit like any estimator: params route to the wrapped estimator."""
    (X, y), _, _ = _split(2, seed=2)
    tsc = TemperatureScaledClassifier(make_pipeline(StandardScaler(), LogisticRegression()),
                                      cv=3)
    assert "estimator__logisticregression__C" in tsc.get_params()
    tsc.set_params(estimator__logisticregression__C=0.5)
    assert tsc.estimator.steps[1][1].C == 0.5
    grid = GridSearchCV(tsc, {"estimator__logisticregression__C": [0.01, 1.0]}, cv=3,
                        scoring="neg_log_loss").fit(X, y)
    assert grid.best_estimator_.estimator_.steps[1][1].C == grid.best_params_[
        "estimator__logisticregression__C"]
    scores = cross_val_score(TemperatureScaledClassifier(LogisticRegression(), cv=0.25), X, y,
                             cv=3, scoring="neg_log_loss")
    assert np.isfinite(scores).all()
    fitted = clone(tsc).fit(X, y)
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict_proba(X), fitted.predict_proba(X))


def test_frozen_estimator_survives_clone():
    (X_tr, y_tr), (X_val, y_val), _ = _split(3)
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X_tr, y_tr)
    tsc = TemperatureScaledClassifier(FrozenEstimator(lr), smoothing=False).fit(X_val, y_val)
    copy = clone(tsc)
    assert copy.estimator.estimator is lr
    with pytest.raises(NotFittedError):
        copy.predict_proba(X_val)
    assert copy.fit(X_val, y_val).beta_ == tsc.beta_
    # so model selection can evaluate the calibration step on held-out validation folds
    scores = cross_val_score(TemperatureScaledClassifier(FrozenEstimator(lr)), X_val, y_val,
                             cv=3, scoring="neg_log_loss")
    assert np.isfinite(scores).all()


def test_fitted_estimator_without_frozen_is_deprecated_but_kept():
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(2)
    lr = LogisticRegression(C=1e4, max_iter=5000).fit(X_tr, y_tr)
    frozen = TemperatureScaledClassifier(FrozenEstimator(lr)).fit(X_val, y_val)
    with pytest.warns(FutureWarning, match="FrozenEstimator"):
        old = TemperatureScaledClassifier(lr).fit(X_val, y_val)
    assert old.beta_ == frozen.beta_
    np.testing.assert_array_equal(old.predict_proba(X_te), frozen.predict_proba(X_te))
    np.testing.assert_array_equal(lr.coef_, old.estimator_.coef_)  # not refit


def test_same_temperature_as_sklearn():
    """CalibratedClassifierCV(FrozenEstimator(clf), method="temperature") minimises the same
    unsmoothed NLL over one β (scipy's bounded Brent on log β); where both see the same logits
    the optimum must agree. scikit-learn takes decision_function first and reads a binary
    margin x as the logits (−x, x) — twice the margin — so there β_ours = 2·β_sklearn; for
    predict_proba it uses log(p + 1e-12), which equals our log p when p ≫ 1e-12 (asserted)."""
    for k in (2, 4):
        (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(k, seed=k)
        models = [LogisticRegression(C=1e4, max_iter=5000),
                  MLPClassifier((16,), alpha=1.0, max_iter=300, random_state=0)]
        for model in models:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # MLP convergence
                model.fit(X_tr, y_tr)
            sk = CalibratedClassifierCV(FrozenEstimator(model), method="temperature").fit(
                X_val, y_val)
            beta_sk = float(sk.calibrated_classifiers_[0].calibrators[0].beta_)
            method = "decision_function" if hasattr(model, "decision_function") \
                else "predict_proba"
            if method == "predict_proba":
                assert model.predict_proba(X_val).min() > 1e-8  # log shift < 1e-4
            ours = TemperatureScaledClassifier(FrozenEstimator(model), smoothing=False,
                                               response_method=method).fit(X_val, y_val)
            doubled = k == 2 and method == "decision_function"
            assert ours.beta_ == pytest.approx(2 * beta_sk if doubled else beta_sk, rel=1e-5)
            np.testing.assert_allclose(ours.predict_proba(X_te), sk.predict_proba(X_te),
                                       atol=1e-6)


def test_decision_function_only_and_xgboost():
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(2)
    svm = LinearSVC().fit(X_tr, y_tr)  # binary (N,) margins, no predict_proba
    tsc = TemperatureScaledClassifier(FrozenEstimator(svm)).fit(X_val, y_val)
    p = tsc.predict_proba(X_te)
    assert p.shape == (len(X_te), 2)
    np.testing.assert_allclose(p.sum(1), 1.0)
    np.testing.assert_array_equal(tsc.predict(X_te), svm.predict(X_te))
    xgb = pytest.importorskip("xgboost")
    for k in (2, 3):
        (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(k, seed=k)
        codes = {c: i for i, c in enumerate(np.unique(y_tr))}
        to_codes = np.vectorize(codes.get)
        model = xgb.XGBClassifier(n_estimators=30, max_depth=3, n_jobs=1)
        tsc = TemperatureScaledClassifier(model, cv=0.3, random_state=0).fit(
            np.vstack([X_tr, X_val]), to_codes(np.concatenate([y_tr, y_val])))
        np.testing.assert_array_equal(tsc.predict(X_te), tsc.estimator_.predict(X_te))
        assert tsc.predict_proba(X_te).shape == (len(X_te), k)


def test_exact_zero_probabilities_are_clipped():
    """A fully grown tree outputs p = 0 and 1: the fit stays finite; ``clip`` softens it."""
    (X_tr, y_tr), (X_val, y_val), (X_te, _) = _split(3)
    tree = FrozenEstimator(DecisionTreeClassifier(random_state=0).fit(X_tr, y_tr))
    assert (tree.predict_proba(X_val) == 0).any()
    default = TemperatureScaledClassifier(tree).fit(X_val, y_val)
    soft = TemperatureScaledClassifier(tree, clip=1e-3).fit(X_val, y_val)
    for model in (default, soft):
        assert np.isfinite(model.beta_) and np.isfinite(model.predict_proba(X_te)).all()
    assert soft.beta_ > default.beta_  # a zero on the true class costs less with a larger clip
    before = log_loss(y_val, tree.predict_proba(X_val), labels=tree.classes_)
    assert log_loss(y_val, soft.predict_proba(X_val), labels=tree.classes_) < before


def test_meta_estimator_errors():
    (X_tr, y_tr), (X_val, y_val), _ = _split(3)
    lr = FrozenEstimator(LogisticRegression(max_iter=2000).fit(X_tr, y_tr))
    with pytest.raises(ValueError, match="not fitted on.*zebra"):
        TemperatureScaledClassifier(lr).fit(X_val, np.where(y_val == "cat", "zebra", y_val))
    with pytest.raises(ValueError, match="response_method"):
        TemperatureScaledClassifier(lr, response_method="predict").fit(X_val, y_val)
    with pytest.raises(TypeError, match="no predict_proba"):
        svm = FrozenEstimator(LinearSVC().fit(X_tr, y_tr))
        TemperatureScaledClassifier(svm, response_method="predict_proba").fit(X_val, y_val)
    with pytest.raises(TypeError, match="sample_weight"):
        TemperatureScaledClassifier(LogisticRegression()).fit(X_val, y_val,
                                                              sample_weight=np.ones(len(y_val)))
    with pytest.raises(ValueError, match="held-out fraction"):
        TemperatureScaledClassifier(LogisticRegression(), cv=1.5).fit(X_val, y_val)
    y_rare = y_val.copy()
    y_rare[0] = "fox"  # one sample of a fourth class: some training fold lacks it
    with pytest.raises(ValueError, match="lacks the classes.*fox"):
        TemperatureScaledClassifier(LogisticRegression(), cv=3).fit(X_val, y_rare)
