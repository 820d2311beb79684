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
    when the split is impossible (fewer than n_splits samples, or every class too small)."""
    from sklearn.model_selection import StratifiedKFold  # lazy: slow to import

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
