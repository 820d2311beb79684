"""The leakage check of the data stage: does one column predict the label almost alone?

A column that encodes the label (an injury severity whose top level is "killed" beside the
label "dead", a cycle threshold a test result is read from, a row id sorted by class, a code
whose parity is the class) makes a benchmark dataset trivial and says nothing about stopping.
The check runs on every processed dataset of every source: for each feature alone, the simple
classifiers that column supports are fitted on a fixed 70 % of the rows and scored on the other
30 %, and the column's score is the better one:

- ``threshold`` (a numerical column): a decision tree on that column with as many leaves as
  classes (for two classes a depth-1 tree, a threshold), so that K intervals can name K
  classes;
- ``values`` (every column, numbers included): each distinct value predicts the class most
  frequent among the fitted rows holding it (ties: the lowest class; missing is a value of its
  own; a value no fitted row holds predicts the dataset's majority class). This catches a label
  that is any function of a column's values (``code % 2`` of an integer code), which K
  intervals cannot.

Scoring on held-out rows is what keeps both honest: an id column (every value distinct)
memorises the rows it was fitted on, but each held-out row holds a value never seen, so it
predicts the majority class and scores the majority share. A label that is a function of a
column whose values rarely repeat is, for the same reason, not caught: nothing but the function
itself could tell it from an id.

The dataset is **flagged** when the best column reaches :data:`MIN_ACCURACY` on the held-out
rows *and* removes at least :data:`MIN_ERROR_REDUCTION` of the errors of always guessing the
majority class (so a 99.6 %-majority dataset is not flagged for a column that does nothing). A
column that removes as many errors but reaches only :data:`NEAR_MISS_ACCURACY` is a **near
miss**: the dataset is kept, and the warning says which column to look at. A flagged dataset is
dropped by the filter step (where the study drops them: ``leakage: drop``) unless its manifest
row explains the column (``leakage_note``): a dataset that is easy for a legitimate reason
stays, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

#: held-out accuracy from which one column counts as predicting the label almost perfectly
MIN_ACCURACY = 0.995
#: held-out accuracy from which a column that is not flagged is reported as a near miss
NEAR_MISS_ACCURACY = 0.99
#: share of the majority guess's errors the column must remove to be flagged (or a near miss)
MIN_ERROR_REDUCTION = 0.9
#: share of the rows the one-column classifiers are fitted on (the rest scores them)
FIT_SHARE = 0.7
#: seed of the fixed fit/score partition (independent of the study's seed: a data property)
PARTITION_SEED = 0
#: what each one-column classifier is called in a result (:attr:`LeakageResult.rule`)
RULES = {
    "threshold": "a tree with one leaf per class on its values",
    "values": "each of its values predicting its most frequent class",
}


@dataclass(frozen=True)
class LeakageResult:
    """The most predictive single column of a dataset and whether it is flagged."""

    column: str | None
    accuracy: float | None
    majority: float
    flagged: bool
    note: str | None = None
    #: which classifier of :data:`RULES` gave the column its score
    rule: str | None = None
    #: not flagged, but at least :data:`NEAR_MISS_ACCURACY` with the errors removed
    near_miss: bool = False

    @property
    def status(self) -> str:
        """``ok``, ``near-miss`` (kept, with a warning), ``explained`` (flagged, with a
        manifest note) or ``flagged``."""
        if self.flagged:
            return "explained" if self.note else "flagged"
        return "near-miss" if self.near_miss else "ok"

    def describe(self) -> str:
        how = f"{RULES[self.rule]}; " if self.rule in RULES else ""
        return (f"column {self.column!r} alone predicts the label with held-out accuracy "
                f"{self.accuracy:.4f} ({how}majority class {self.majority:.4f})")

    def to_json(self) -> dict[str, object]:
        return asdict(self) | {"status": self.status}


def _threshold_accuracy(x: np.ndarray, y: np.ndarray, fit: np.ndarray, n_classes: int) -> float:
    # lazy: scikit-learn, ~0.8 s that the data jobs not filtering would pay (docs/performance.md)
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(max_leaf_nodes=max(2, n_classes), random_state=0)
    tree.fit(x[fit].reshape(-1, 1), y[fit])
    return float(np.mean(tree.predict(x[~fit].reshape(-1, 1)) == y[~fit]))


def value_codes(x: pd.Series) -> np.ndarray:
    """One code >= 0 per distinct value of ``x`` (a category, a number; missing is a value of
    its own)."""
    if isinstance(x.dtype, pd.CategoricalDtype):
        return x.cat.codes.to_numpy().astype(np.int64) + 1  # missing (-1) becomes 0
    return pd.factorize(x, use_na_sentinel=False)[0].astype(np.int64)


def values_accuracy(codes: np.ndarray, y: np.ndarray, fit: np.ndarray, fallback: int) -> float:
    """Held-out accuracy of predicting each row's class by the most frequent class of its value
    among the fitted rows (``y``: class codes 0..K-1; ``fallback``: the class of a value no
    fitted row holds). Counts only the (value, class) pairs that occur, so an all-distinct
    column of 100,000 rows costs no value-by-class table."""
    n_classes = int(y.max()) + 1
    pairs, counts = np.unique(codes[fit] * n_classes + y[fit], return_counts=True)
    value, label = pairs // n_classes, pairs % n_classes
    order = np.lexsort((label, -counts, value))  # by value, then most rows, then lowest class
    first = order[np.r_[True, value[order][1:] != value[order][:-1]]] if len(order) else order
    best = np.full(int(codes.max()) + 1, fallback, dtype=np.int64)
    best[value[first]] = label[first]
    return float(np.mean(best[codes[~fit]] == y[~fit]))


def check_leakage(features: pd.DataFrame, labels: np.ndarray, num_columns: Sequence[str],
                  cat_columns: Sequence[str], note: str | None = None) -> LeakageResult:
    """Score every column alone (module docstring) and flag the dataset if one column predicts
    the label almost perfectly. ``note`` is the manifest's explanation, if any."""
    classes, y, counts = np.unique(np.asarray(labels), return_inverse=True, return_counts=True)
    n = len(y)
    fit = np.zeros(n, dtype=bool)
    fit[np.random.default_rng(PARTITION_SEED).permutation(n)[: int(FIT_SHARE * n)]] = True
    held = y[~fit]
    if len(held) == 0 or len(classes) < 2:
        return LeakageResult(None, None, 1.0, False, note)
    fallback = int(np.argmax(counts))
    majority = float(np.mean(held == fallback))
    scores: dict[str, tuple[float, str]] = {}
    for c in num_columns:
        x = features[c].to_numpy(dtype="float64")
        filled = x
        if np.isnan(x).any():  # processed numericals have no NaN; a raw frame may
            filled = np.where(np.isnan(x), np.nanmin(x) - 1 if np.isfinite(x).any() else 0, x)
        threshold = _threshold_accuracy(filled, y, fit, len(classes))
        by_value = values_accuracy(value_codes(features[c]), y, fit, fallback)
        scores[c] = (threshold, "threshold") if threshold >= by_value else (by_value, "values")
    for c in cat_columns:
        scores[c] = (values_accuracy(value_codes(features[c]), y, fit, fallback), "values")
    if not scores:
        return LeakageResult(None, None, majority, False, note)
    column = max(scores, key=lambda c: scores[c][0])
    accuracy, rule = scores[column]
    error, majority_error = 1.0 - accuracy, 1.0 - majority
    removes_errors = error <= (1 - MIN_ERROR_REDUCTION) * majority_error
    flagged = removes_errors and accuracy >= MIN_ACCURACY
    near_miss = removes_errors and not flagged and accuracy >= NEAR_MISS_ACCURACY
    return LeakageResult(column, round(accuracy, 6), round(majority, 6), bool(flagged), note,
                         rule, bool(near_miss))
