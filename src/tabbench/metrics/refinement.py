"""Refinement estimators of one set of logits (N, K): the loss left after re-calibrating on the
same data (paper, Sections 3–4 and App. E). Lower refinement = better model before calibration.

* ``ts_ref``: log loss after temperature scaling fit on the same set, with Laplace smoothing;
* ``ts_ref_brier``: Brier score of that same TS + smoothing output;
* ``ts_ref_cv5``: TS fit on 4/5 and scored on the held-out 1/5 (stratified 5-fold, shuffled,
  seed 0), smoothing with the fold's training size;
* ``ir_ref``: log loss after isotonic calibration as sklearn's ``CalibratedClassifierCV(
  method="isotonic")`` does it on fixed probabilities (binary: class 1 only; multiclass:
  one-vs-rest, renormalised, uniform if every class gets 0), then smoothing. Classes absent
  from y are handled like probmetrics (the paper's code): the probabilities of the present
  classes are renormalised and calibrated as a problem with fewer classes (two present
  classes: the binary way), absent classes get 0 before smoothing over all K.

These single-epoch versions are written for clarity (float64, one fit at a time); the recorder
uses the fused :func:`tabbench.metrics.batched.fused_stopping_metrics`, tested against them.
They raise ``ValueError`` on non-finite logits.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from tabbench.metrics._checks import check_single
from tabbench.metrics.folds import cv_folds
from tabbench.metrics.losses import (
    brier_proba,
    laplace_smooth,
    log_proba_ranking,
    log_softmax,
    logloss_proba,
)
from tabbench.metrics.temperature import fit_temperature


def _ts_proba(z: np.ndarray, y: np.ndarray) -> np.ndarray:
    beta = fit_temperature(z, y)
    return laplace_smooth(np.exp(log_softmax(beta * z)), len(y))


def ts_ref(logits: np.ndarray, y: np.ndarray) -> float:
    """TS-refinement, the paper's stopping criterion: log loss after temperature scaling fit
    on the same set, with Laplace smoothing.

    Validation log loss is refinement plus calibration error; this is what is left once the
    best temperature has removed the calibration error.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The refinement loss.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import logloss, ts_ref
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)  # over-confident
    >>> round(logloss(logits, y), 4), round(ts_ref(logits, y), 4)
    (1.6808, 0.8766)
    """
    z, y = check_single(logits, y)
    return logloss_proba(_ts_proba(z, y), y)


def ts_ref_brier(logits: np.ndarray, y: np.ndarray) -> float:
    """Brier-refinement: the Brier score (sum over classes) of the output of :func:`ts_ref`'s
    temperature scaling and smoothing.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The refinement loss.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import logloss, ts_ref_brier
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)  # over-confident
    >>> round(logloss(logits, y), 4), round(ts_ref_brier(logits, y), 4)
    (1.6808, 0.5134)
    """
    z, y = check_single(logits, y)
    return brier_proba(_ts_proba(z, y), y)


def ts_ref_cv5(logits: np.ndarray, y: np.ndarray) -> float:
    """Cross-validated TS-refinement: the temperature fit on 4/5 of the set, the smoothed
    log loss scored on the held-out 1/5 (stratified 5-fold, shuffled, seed 0, as probmetrics).

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The refinement loss; NaN when a stratified 5-fold split is impossible (fewer
        than 5 samples).

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import logloss, ts_ref_cv5
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)  # over-confident
    >>> round(logloss(logits, y), 4), round(ts_ref_cv5(logits, y), 4)
    (1.6808, 0.878)
    """
    z, y = check_single(logits, y)
    folds = cv_folds(y)
    if folds is None:
        return float("nan")
    nll = np.empty(len(y))
    for f in range(int(folds.max()) + 1):
        train, held = folds != f, folds == f
        beta = fit_temperature(z[train], y[train])
        q = laplace_smooth(np.exp(log_softmax(beta * z[held])), int(train.sum()))
        nll[held] = -np.log(q[np.arange(int(held.sum())), y[held]])
    return float(nll.mean())


def isotonic_fit_predict(scores: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Increasing isotonic regression of ``target`` on ``scores``, evaluated at the scores.
    Exact ties are averaged first (as sklearn's IsotonicRegression does)."""
    # lazy: scikit-learn takes ~2.5 s to import; tabbench.stopping loads without it
    from sklearn.isotonic import isotonic_regression

    uniq, inv = np.unique(scores, return_inverse=True)
    counts = np.bincount(inv, minlength=len(uniq)).astype(np.float64)
    means = np.bincount(inv, weights=target, minlength=len(uniq)) / counts
    return isotonic_regression(means, sample_weight=counts)[inv]


def ir_ref(logits: np.ndarray, y: np.ndarray) -> float:
    """Isotonic refinement: log loss after isotonic calibration on the same set (as
    scikit-learn's ``CalibratedClassifierCV(method="isotonic")`` on fixed probabilities), then
    Laplace smoothing.

    Binary: class 1 only; multiclass: one-vs-rest, renormalised (uniform where every class gets
    0). Classes absent from ``y`` are left out as probmetrics does: the present classes are
    calibrated as a smaller problem, the absent ones get 0 before smoothing.

    Parameters
    ----------
    logits : array-like of shape (n_samples, n_classes)
        Logits, binary problems as K = 2 columns; finite.
    y : array-like of shape (n_samples,)
        Class codes 0..K−1.

    Returns
    -------
    float
        The refinement loss.

    Raises
    ------
    ValueError
        On NaN or infinite logits, or labels out of range.

    Examples
    --------
    >>> from tabbench.metrics import logloss, ir_ref
    >>> from tabbench.metrics.examples import noisy_logits
    >>> logits, y = noisy_logits(300, 3, scale=4.0)  # over-confident
    >>> round(logloss(logits, y), 4), round(ir_ref(logits, y), 4)
    (1.6808, 0.8151)
    """
    z, y = check_single(logits, y)
    n, k = z.shape
    present = np.unique(y)
    logp = log_proba_ranking(z)  # ranks like the probabilities, without saturation at 1.0
    if len(present) < k:  # as probmetrics: renormalise over the classes present in y
        logp = logp[:, present]
        logp = logp - logsumexp(logp, axis=1, keepdims=True)
    y_present = np.searchsorted(present, y)
    kp = len(present)
    if kp == 1:
        p_present = np.ones((n, 1))
    elif kp == 2:
        p1 = isotonic_fit_predict(logp[:, 1], (y_present == 1).astype(np.float64))
        p_present = np.stack([1.0 - p1, p1], axis=1)
    else:
        cal = np.stack(
            [isotonic_fit_predict(logp[:, c], (y_present == c).astype(float)) for c in range(kp)],
            axis=1,
        )
        denom = cal.sum(axis=1, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            p_present = np.where(denom > 0, cal / denom, 1.0 / kp)
    p = np.zeros((n, k))
    p[:, present] = p_present
    return logloss_proba(laplace_smooth(p, n), y)
