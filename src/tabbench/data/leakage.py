"""The leakage check of the data stage: does one column predict the label almost alone?

A column that encodes the label (an injury severity whose top level is "killed" beside the
label "dead", a cycle threshold a test result is read from, a row id sorted by class) makes a
benchmark dataset trivial and says nothing about stopping. The check runs on every processed
dataset of every source: for each feature alone, the simplest classifier that column supports
is fitted on a fixed 70 % of the rows and scored on the other 30 % (held out, so an id column,
which memorises the rows it has seen, does not look predictive):

- a numerical column: a decision tree on that column with as many leaves as classes (for two
  classes a depth-1 tree, a threshold), so that K intervals can name K classes;
- a categorical column: each category predicts its most frequent class (a one-level split on
  every category; missing is a category, unseen ones predict the majority class).

The dataset is flagged when the best column reaches :data:`MIN_ACCURACY` on the held-out rows
*and* removes at least :data:`MIN_ERROR_REDUCTION` of the errors of always guessing the
majority class (so a 99.6 %-majority dataset is not flagged for a column that does nothing).
A flagged dataset is dropped by the filter step unless its manifest row explains the column
(``leakage_note``): a dataset that is easy for a legitimate reason stays, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from sklearn.tree import DecisionTreeClassifier

#: held-out accuracy from which one column counts as predicting the label almost perfectly
MIN_ACCURACY = 0.995
#: share of the majority guess's errors the column must remove to be flagged
MIN_ERROR_REDUCTION = 0.9
#: share of the rows the one-column classifiers are fitted on (the rest scores them)
FIT_SHARE = 0.7
#: seed of the fixed fit/score partition (independent of the study's seed: a data property)
PARTITION_SEED = 0


@dataclass(frozen=True)
class LeakageResult:
    """The most predictive single column of a dataset and whether it is flagged."""

    column: str | None
    accuracy: float | None
    majority: float
    flagged: bool
    note: str | None = None

    @property
    def status(self) -> str:
        """``ok``, ``explained`` (flagged, with a manifest note) or ``flagged``."""
        if not self.flagged:
            return "ok"
        return "explained" if self.note else "flagged"

    def describe(self) -> str:
        return (f"column {self.column!r} alone predicts the label with held-out accuracy "
                f"{self.accuracy:.4f} (majority class {self.majority:.4f})")

    def to_json(self) -> dict[str, object]:
        return asdict(self) | {"status": self.status}


def _numeric_accuracy(x: np.ndarray, y: np.ndarray, fit: np.ndarray, n_classes: int) -> float:
    tree = DecisionTreeClassifier(max_leaf_nodes=max(2, n_classes), random_state=0)
    tree.fit(x[fit].reshape(-1, 1), y[fit])
    return float(np.mean(tree.predict(x[~fit].reshape(-1, 1)) == y[~fit]))


def _categorical_accuracy(x: pd.Series, y: np.ndarray, fit: np.ndarray, fallback: int) -> float:
    codes = x.cat.codes.to_numpy() if isinstance(x.dtype, pd.CategoricalDtype) \
        else pd.factorize(x, use_na_sentinel=False)[0]
    table = pd.crosstab(codes[fit], y[fit])
    best = dict(zip(table.index.to_numpy(), table.to_numpy().argmax(axis=1), strict=True))
    classes = table.columns.to_numpy()
    predicted = np.array([classes[best[c]] if c in best else fallback for c in codes[~fit]])
    return float(np.mean(predicted == y[~fit]))


def check_leakage(features: pd.DataFrame, labels: np.ndarray, num_columns: Sequence[str],
                  cat_columns: Sequence[str], note: str | None = None) -> LeakageResult:
    """Score every column alone (module docstring) and flag the dataset if one column predicts
    the label almost perfectly. ``note`` is the manifest's explanation, if any."""
    y = np.asarray(labels)
    n = len(y)
    classes, counts = np.unique(y, return_counts=True)
    fit = np.zeros(n, dtype=bool)
    fit[np.random.default_rng(PARTITION_SEED).permutation(n)[: int(FIT_SHARE * n)]] = True
    held = y[~fit]
    if len(held) == 0 or len(classes) < 2:
        return LeakageResult(None, None, 1.0, False, note)
    fallback = int(classes[np.argmax(counts)]) if np.issubdtype(classes.dtype, np.integer) \
        else classes[np.argmax(counts)]
    majority = float(np.mean(held == fallback))
    scores: dict[str, float] = {}
    for c in num_columns:
        x = features[c].to_numpy(dtype="float64")
        if np.isnan(x).any():  # processed numericals have no NaN; a raw frame may
            x = np.where(np.isnan(x), np.nanmin(x) - 1 if np.isfinite(x).any() else 0, x)
        scores[c] = _numeric_accuracy(x, y, fit, len(classes))
    for c in cat_columns:
        scores[c] = _categorical_accuracy(features[c], y, fit, fallback)
    if not scores:
        return LeakageResult(None, None, majority, False, note)
    column = max(scores, key=lambda c: scores[c])
    accuracy = scores[column]
    error, majority_error = 1.0 - accuracy, 1.0 - majority
    flagged = accuracy >= MIN_ACCURACY and error <= (1 - MIN_ERROR_REDUCTION) * majority_error
    return LeakageResult(column, round(accuracy, 6), round(majority, 6), bool(flagged), note)
