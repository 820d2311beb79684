"""Rank-based metrics on many rows at once: AUROC and isotonic regression.

One row = one (epoch, class) pair: the scores of all N samples for that class and the binary
"is this class" labels. Both metrics only need the samples sorted by score, so the recorder
sorts each row once and derives AUROC (mid-ranks, Mann–Whitney U) and the isotonic fit
(pool-adjacent-violators on tie-averaged labels) from the same order.

All rows are processed with whole-array numpy operations; the only sequential algorithm, PAV,
runs once over the concatenation of all rows: adding 2·r to row r's targets (which lie in
[0, 1]) makes every row's values exceed the previous row's, so PAV never pools across rows
and the concatenated fit equals the row-wise fits exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

try:  # sklearn's in-place Cython PAV: ~7× faster than scipy's for one long array
    from sklearn._isotonic import _inplace_contiguous_isotonic_regression as _pav_inplace
except ImportError:  # private API; fall back on the public scipy one
    _pav_inplace = None


@dataclass
class SortedRows:
    """Rows of scores sorted ascending: ``order`` (M, N) and tie-group starts ``new_group``."""

    order: np.ndarray
    new_group: np.ndarray  # (M, N) bool: sorted position j starts a new group of equal scores

    @property
    def has_ties(self) -> bool:
        return not bool(self.new_group.all())


def sort_rows(scores: np.ndarray) -> SortedRows:
    order = np.argsort(scores, axis=1)
    s = np.take_along_axis(scores, order, axis=1)
    new_group = np.ones(s.shape, dtype=bool)
    np.not_equal(s[:, 1:], s[:, :-1], out=new_group[:, 1:])
    return SortedRows(order, new_group)


def auroc_rows(rows: SortedRows, sorted_pos: np.ndarray) -> np.ndarray:
    """AUROC (M,) of each row; ``sorted_pos`` (M, N) bool are the labels in sorted order.
    Rows with only positives or only negatives give NaN. Ties count one half (mid-ranks)."""
    n_rows, n = sorted_pos.shape
    pos = np.arange(n)
    if rows.has_ties:
        start = np.maximum.accumulate(np.where(rows.new_group, pos, 0), axis=1)
        ends = np.ones_like(rows.new_group)
        ends[:, :-1] = rows.new_group[:, 1:]
        end = np.minimum.accumulate(np.where(ends, pos, n)[:, ::-1], axis=1)[:, ::-1]
        midrank = 0.5 * (start + end) + 1.0
        rank_sum = np.einsum("mn,mn->m", sorted_pos.astype(np.float64), midrank)
    else:
        rank_sum = sorted_pos.astype(np.float64) @ (pos + 1.0)
    n_pos = sorted_pos.sum(axis=1).astype(np.float64)
    n_neg = n - n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def isotonic_rows(rows: SortedRows, sorted_pos: np.ndarray) -> np.ndarray:
    """Increasing isotonic regression of the labels on the scores, row by row, evaluated at
    the training points themselves; returned in sorted order, (M, N) float64 in [0, 1].

    Tied scores are averaged first (sklearn's ``IsotonicRegression`` does the same, except that
    it also merges values closer than float resolution and interpolates; we use exact ties).
    """
    n_rows, n = sorted_pos.shape
    y = sorted_pos.astype(np.float64).ravel()
    row_offset = 2.0 * np.repeat(np.arange(n_rows, dtype=np.float64), n)
    if rows.has_ties:
        flags = rows.new_group.ravel()
        starts = np.flatnonzero(flags)
        counts = np.diff(np.append(starts, y.size)).astype(np.float64)
        means = np.add.reduceat(y, starts) / counts
        offset = row_offset[starts]
        fitted = _pav(means + offset, counts) - offset
        out = fitted[np.cumsum(flags) - 1]
    else:
        out = _pav(y + row_offset, np.ones_like(y)) - row_offset
    return np.clip(out, 0.0, 1.0).reshape(n_rows, n)


def _pav(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    if _pav_inplace is not None:
        out = np.ascontiguousarray(values, dtype=np.float64).copy()
        _pav_inplace(out, np.ascontiguousarray(weights, dtype=np.float64).copy())
        return out
    from scipy.optimize import isotonic_regression

    return np.asarray(isotonic_regression(values, weights=weights).x)


def unsort(sorted_values: np.ndarray, rows: SortedRows) -> np.ndarray:
    """Put row-wise sorted values back in the original sample order."""
    out = np.empty_like(sorted_values)
    np.put_along_axis(out, rows.order, sorted_values, axis=1)
    return out
