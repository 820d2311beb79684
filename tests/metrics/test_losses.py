"""Single-epoch losses: agreement with sklearn, edge cases, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

import tabbench.metrics as M
from tabbench.metrics.losses import ece_proba


@pytest.mark.parametrize("k", [2, 3, 10])
def test_logloss_brier_auroc_match_sklearn(make, k):
    z, y = make(400, k, scale=1.5, seed=k)
    p = M.softmax(z)
    assert M.logloss(z, y) == pytest.approx(log_loss(y, p, labels=range(k)), rel=1e-10)
    onehot = np.eye(k)[y]
    assert M.brier(z, y) == pytest.approx(np.mean(((p - onehot) ** 2).sum(1)), rel=1e-12)
    if k == 2:
        # the paper's Brier sums over both classes: twice sklearn's binary Brier score
        assert M.brier(z, y) == pytest.approx(2 * brier_score_loss(y, p[:, 1]), rel=1e-10)
        assert M.auroc(z, y) == pytest.approx(roc_auc_score(y, p[:, 1]), rel=1e-12)
    else:
        expected = roc_auc_score(y, p, multi_class="ovr", average="macro")
        assert M.auroc(z, y) == pytest.approx(expected, rel=1e-10)
    assert M.one_minus_auroc(z, y) == pytest.approx(1 - M.auroc(z, y))
    assert M.error(z, y) == pytest.approx(np.mean(p.argmax(1) != y))


def test_auroc_missing_class_and_single_class():
    z = np.random.default_rng(0).normal(size=(60, 4))
    y = np.array([0, 2] * 30)  # classes 1 and 3 absent: averaged over present classes only
    p = M.softmax(z)
    expected = np.mean([roc_auc_score(y == c, p[:, c]) for c in (0, 2)])
    assert M.auroc(z, y) == pytest.approx(expected)
    assert np.isnan(M.auroc(z, np.zeros(60, dtype=int)))  # single class: NaN, no exception
    assert np.isnan(M.auroc(z[:, :2], np.ones(60, dtype=int)))


def test_auroc_ties_count_one_half():
    z = np.zeros((4, 2))
    z[:, 1] = [0.0, 1.0, 1.0, 2.0]
    y = np.array([0, 0, 1, 1])
    assert M.auroc(z, y) == pytest.approx(roc_auc_score(y, z[:, 1]))  # = 0.875


def test_ece_by_hand():
    p = np.array([[0.9, 0.1], [0.77, 0.23], [0.3, 0.7], [0.37, 0.63]])
    y = np.array([0, 1, 1, 1])
    # confidences 0.9, 0.77, 0.7, 0.63 fall in bins 13, 11, 10, 9 (width 1/15), one each, none
    # on an edge (0.8 = 12/15 and 0.6 = 9/15 would be: their bin decided by float rounding);
    # correct: 1, 0, 1, 1 → |1−.9| + |0−.77| + |1−.7| + |1−.63| = 1.54, / 4
    assert ece_proba(p, y) == pytest.approx(0.385)
    perfect = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert ece_proba(perfect, np.array([0, 1])) == 0.0


def test_laplace_smoothing_formula():
    p = np.array([[1.0, 0.0, 0.0], [0.2, 0.3, 0.5]])
    q = M.laplace_smooth(p, 9)
    np.testing.assert_allclose(q, 0.9 * p + 1 / 30)
    np.testing.assert_allclose(q.sum(1), 1.0)
    assert q.min() > 0
    with pytest.raises(ValueError):
        M.laplace_smooth(p, 0)


@pytest.mark.parametrize(
    "logits, y, match",
    [
        (np.zeros((3, 1)), [0, 0, 0], "K >= 2"),
        (np.zeros(3), [0, 0, 0], "shape"),
        (np.zeros((3, 2)), [0, 1], "3 rows"),
        (np.zeros((3, 2)), [0, 1, 2], "class codes"),
        (np.zeros((3, 2)), [0, 1, 0.5], "integer"),
        (np.array([[0.0, np.nan], [0, 0], [0, 0]]), [0, 1, 0], "NaN or inf"),
        (np.array([[0.0, np.inf], [0, 0], [0, 0]]), [0, 1, 0], "NaN or inf"),
    ],
)
def test_bad_input_raises(logits, y, match):
    with pytest.raises(ValueError, match=match):
        M.logloss(logits, np.asarray(y))
    with pytest.raises(ValueError, match=match):
        M.stopping_metrics(logits, np.asarray(y))
