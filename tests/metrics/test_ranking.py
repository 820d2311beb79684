"""Row-wise AUROC and isotonic regression, and ir_ref against sklearn's calibrator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.calibration import CalibratedClassifierCV
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import roc_auc_score

import tabbench.metrics as M
from tabbench.metrics.losses import laplace_smooth, logloss_proba
from tabbench.metrics.ranking import auroc_rows, isotonic_rows, sort_rows, unsort


def test_rows_match_sklearn_with_ties():
    rng = np.random.default_rng(0)
    scores = np.round(rng.normal(size=(6, 300)), 1)  # many ties
    labels = rng.random((6, 300)) < np.linspace(0.1, 0.9, 6)[:, None]
    rows = sort_rows(scores)
    assert rows.has_ties
    sorted_pos = np.take_along_axis(labels, rows.order, axis=1)
    auc = auroc_rows(rows, sorted_pos)
    fitted = unsort(isotonic_rows(rows, sorted_pos), rows)
    for r in range(6):
        assert auc[r] == pytest.approx(roc_auc_score(labels[r], scores[r]), rel=1e-12)
        iso = IsotonicRegression(out_of_bounds="clip").fit(scores[r], labels[r])
        np.testing.assert_allclose(fitted[r], iso.predict(scores[r]), atol=1e-12)


def test_rows_without_ties_and_degenerate_rows():
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(3, 50))
    labels = np.stack([rng.random(50) < 0.5, np.ones(50, bool), np.zeros(50, bool)])
    rows = sort_rows(scores)
    assert not rows.has_ties
    sorted_pos = np.take_along_axis(labels, rows.order, axis=1)
    auc = auroc_rows(rows, sorted_pos)
    assert auc[0] == pytest.approx(roc_auc_score(labels[0], scores[0]))
    assert np.isnan(auc[1]) and np.isnan(auc[2])
    fitted = isotonic_rows(rows, sorted_pos)
    assert (fitted[1] == 1).all() and (fitted[2] == 0).all()  # rows never pool together


def sklearn_ir_ref(z: np.ndarray, y: np.ndarray) -> float:
    """ir_ref by its definition, with sklearn's calibrator (classes absent from y: the
    present classes' renormalised probabilities are calibrated, as probmetrics does)."""
    from sklearn.base import BaseEstimator, ClassifierMixin
    from sklearn.frozen import FrozenEstimator

    n, k = z.shape
    present = np.unique(y)
    if len(present) == 1:  # sklearn refuses a single class; the calibrated p_y is 1
        return -np.log(n / (n + 1) + 1 / ((n + 1) * k))

    class Fixed(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.arange(len(present))
            return self

        def predict_proba(self, X):
            return X

        def predict(self, X):
            return X.argmax(1)

    p = M.softmax(z)[:, present]
    p /= p.sum(1, keepdims=True)
    y_present = np.searchsorted(present, y)
    cal = CalibratedClassifierCV(FrozenEstimator(Fixed().fit(p, y_present)), method="isotonic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q_present = cal.fit(p, y_present).predict_proba(p)
    q = np.zeros((n, k))
    q[:, present] = q_present
    return logloss_proba(laplace_smooth(q, n), y)


@pytest.mark.parametrize("k, missing", [(2, 0), (3, 0), (5, 1), (3, 1), (4, 2), (3, 2)])
def test_ir_ref_matches_sklearn_calibrated_classifier(make, k, missing):
    z, y = make(400, k, scale=1.5, seed=k + missing)
    for c in range(k - missing, k):
        y = np.where(y == c, 0, y)  # the last ``missing`` classes are absent
    expected = sklearn_ir_ref(z, y)
    assert M.ir_ref(z, y) == pytest.approx(expected, rel=1e-9)
    batched = M.stopping_metrics_batched(np.stack([z, z]), y)["ir_ref"]
    np.testing.assert_allclose(batched, expected, rtol=1e-9)
