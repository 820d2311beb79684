"""tabbench.stopping.refinement_scorer: tuning on refinement with scikit-learn's model selection.

The scorer must follow the ``neg_`` convention (greater is better = lower refinement), read
``decision_function`` or ``predict_proba``, map labels through ``classes_``, and make every
search pick the candidate with the lowest cross-validated refinement — checked against the
argmin computed by hand with the float64 definitions of tabbench.metrics.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    HalvingRandomSearchCV,
    ParameterGrid,
    RandomizedSearchCV,
    StratifiedKFold,
    cross_validate,
)
from sklearn.svm import LinearSVC

import tabbench.metrics as M
from tabbench.calibration import TemperatureScaledClassifier
from tabbench.stopping import refinement_scorer


def _data(k: int, n: int = 900, seed: int = 0):
    X, y = make_classification(n, 10, n_informative=5, n_classes=k, flip_y=0.1,
                               random_state=seed)
    return X, y


def _logits(scores: np.ndarray) -> np.ndarray:
    return np.stack([np.zeros_like(scores), scores], 1) if scores.ndim == 1 else scores


@pytest.mark.parametrize("k", [2, 3])
def test_scorer_is_minus_the_refinement_of_either_output(k):
    X, y = _data(k)
    labels = np.array(["ant", "bee", "cow"])[:k][y]  # labels mapped through classes_
    lr = LogisticRegression(C=100, max_iter=2000).fit(X[:600], labels[:600])
    X_te, y_te = X[600:], np.searchsorted(lr.classes_, labels[600:])
    expected = M.ts_ref(_logits(lr.decision_function(X_te)), y_te)
    assert refinement_scorer()(lr, X_te, labels[600:]) == pytest.approx(-expected, rel=1e-6)
    from_proba = refinement_scorer(response_method="predict_proba")(lr, X_te, labels[600:])
    assert from_proba == pytest.approx(-expected, rel=1e-6)  # log p = z − row constant
    brier = refinement_scorer("ts_ref_brier")(lr, X_te, labels[600:])
    assert brier == pytest.approx(-M.ts_ref_brier(_logits(lr.decision_function(X_te)), y_te),
                                  rel=1e-6)
    assert refinement_scorer("logloss")(lr, X_te, labels[600:]) == pytest.approx(
        -M.logloss(_logits(lr.decision_function(X_te)), y_te), rel=1e-6)
    with pytest.raises(ValueError, match="not fitted on"):
        refinement_scorer()(lr, X_te, np.where(labels[600:] == "ant", "elk", labels[600:]))
    with pytest.raises(ValueError, match="unweighted"):
        refinement_scorer()(lr, X_te, labels[600:], sample_weight=np.ones(len(X_te)))
    with pytest.raises(TypeError, match="no predict_proba"):
        refinement_scorer(response_method="predict_proba")(LinearSVC().fit(X, y), X, y)


def test_grid_search_picks_the_lowest_cross_validated_refinement():
    """GridSearchCV(TemperatureScaledClassifier(XGBClassifier()), grid, scoring=...) selects
    the candidate whose refinement, recomputed here by hand per fold, has the lowest mean."""
    xgb = pytest.importorskip("xgboost")
    X, y = _data(3, n=900, seed=1)
    model = TemperatureScaledClassifier(
        xgb.XGBClassifier(n_estimators=20, learning_rate=0.3, n_jobs=1, random_state=0),
        cv=0.25, random_state=0)
    grid = {"estimator__max_depth": [1, 3, 6], "estimator__min_child_weight": [1, 20]}
    folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    search = GridSearchCV(model, grid, scoring=refinement_scorer(), cv=folds).fit(X, y)

    by_hand = []
    for params in ParameterGrid(grid):
        per_fold = []
        for train, test in folds:
            fitted = clone(model).set_params(**params).fit(X[train], y[train])
            per_fold.append(M.ts_ref(fitted.decision_function(X[test]), y[test]))
        by_hand.append(np.mean(per_fold))
    by_hand = np.array(by_hand)
    assert np.ptp(by_hand) > 0.01  # the grid matters: a real choice, not a tie
    np.testing.assert_allclose(-search.cv_results_["mean_test_score"], by_hand, rtol=1e-6)
    assert search.best_index_ == int(np.argmin(by_hand))
    assert search.best_params_ == list(ParameterGrid(grid))[int(np.argmin(by_hand))]


def test_random_and_halving_searches_and_cross_validate_take_it():
    X, y = _data(2, n=600, seed=2)
    model = TemperatureScaledClassifier(LogisticRegression(max_iter=2000), cv=0.3,
                                        random_state=0)
    space = {"estimator__C": [1e-3, 1e-2, 1e-1, 1.0, 10.0]}
    scorer = refinement_scorer()
    for search in (RandomizedSearchCV(model, space, n_iter=4, cv=3, scoring=scorer,
                                      random_state=0),
                   HalvingRandomSearchCV(model, space, n_candidates=5, cv=3, scoring=scorer,
                                         factor=2, min_resources=120, random_state=0)):
        search.fit(X, y)
        scores = search.cv_results_["mean_test_score"]
        assert np.all(scores < 0) and np.isfinite(scores).all()
        best = search.cv_results_["params"][int(np.nanargmax(scores))]
        if isinstance(search, RandomizedSearchCV):
            assert search.best_params_ == best
    out = cross_validate(model, X, y, cv=3,
                         scoring={"ts_ref": scorer, "ts_ref_cv5": refinement_scorer("ts_ref_cv5")})
    assert np.all(out["test_ts_ref"] < 0) and np.all(out["test_ts_ref_cv5"] < 0)
    assert "refinement_scorer(kind='ts_ref'" in repr(scorer)
