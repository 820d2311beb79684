"""The cross-validation folds of ``ts_ref_cv5``, shared by the single-epoch reference
(:mod:`tabbench.metrics.refinement`) and the fused fast path (:mod:`tabbench.metrics.batched`),
so that both score exactly the same folds.
"""

from __future__ import annotations

import warnings

import numpy as np

#: Cross-validated TS-refinement (``ts_ref_cv5``): stratified, shuffled, seed 0, as probmetrics.
CV_FOLDS = 5
CV_SEED = 0


def cv_folds(y: np.ndarray, n_splits: int = CV_FOLDS, seed: int = CV_SEED) -> np.ndarray | None:
    """Fold id (N,) of every sample under StratifiedKFold(n_splits, shuffle=True, seed), or None
    when the split is impossible (fewer than n_splits samples, or every class too small).

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Class labels.
    n_splits : int, default 5
        The number of folds.
    seed : int, default 0
        The shuffle's seed.

    Returns
    -------
    ndarray of shape (n_samples,) or None
        The held-out fold of every sample, 0..n_splits−1.

    Examples
    --------
    >>> import numpy as np
    >>> from tabbench.metrics import cv_folds
    >>> cv_folds(np.array([0, 1] * 5))
    array([2, 0, 0, 2, 1, 1, 3, 4, 4, 3])
    >>> print(cv_folds(np.array([0, 1, 0])))  # fewer samples than folds
    None
    """
    # lazy: scikit-learn takes ~2.5 s to import; tabbench.stopping loads without it
    from sklearn.model_selection import StratifiedKFold

    folds = np.full(len(y), -1, dtype=np.int64)
    skf = StratifiedKFold(n_splits=n_splits, shuffle=True, random_state=seed)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "least populated class" warning
            for f, (_, held_out) in enumerate(skf.split(np.zeros(len(y)), y)):
                folds[held_out] = f
    except ValueError:
        return None
    return folds
