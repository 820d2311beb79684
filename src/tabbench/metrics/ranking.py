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
    _ties: TieGroups | None = None

    @property
    def has_ties(self) -> bool:
        return self.ties.member.size > 0

    @property
    def ties(self) -> TieGroups:
        if self._ties is None:
            self._ties = TieGroups.of(self.new_group)
        return self._ties


@dataclass
class TieGroups:
    """The groups of ≥ 2 equal scores, as flat indices into the (M, N) sorted rows.

    Exact ties are rare for continuous scores (often none), so they are handled sparsely: AUROC
    and the isotonic fit do the tie-free computation on whole rows and correct only these
    elements.
    """

    member: np.ndarray  # (T,) flat indices of the elements of tie groups, ascending
    group: np.ndarray  # (T,) group number of each member, 0..G-1
    first: np.ndarray  # (G,) flat index of each group's first element
    last: np.ndarray  # (G,) ... and of its last element

    @classmethod
    def of(cls, new_group: np.ndarray) -> TieGroups:
        starts = new_group.ravel()
        ends = np.ones_like(starts)
        ends[:-1] = starts[1:]  # row starts are group starts, so row ends are group ends
        member = np.flatnonzero(~(starts & ends))
        opens = starts[member]
        group = np.cumsum(opens) - 1
        return cls(member, group, member[opens], member[ends[member]])


_LOW63 = np.int64(0x7FFFFFFFFFFFFFFF)


def sort_rows(scores: np.ndarray) -> SortedRows:
    """Sort every row of ``scores`` (M, N) ascending; ties stay grouped (in any order).

    Why not ``np.argsort``: sorting values is several times faster than argsorting them (SIMD
    sorts), so each score is packed with its column index into one int64 key: an
    order-preserving integer image of the float64 score with its lowest k bits replaced by the
    index (k = bits needed for N), and the keys are sorted. For float32 scores those k ≤ 29
    bits are zero padding, so the order is exact. For float64 scores, values that differ only
    in those bits may come out in the wrong order; every such row is detected (its scores are
    not sorted) and argsorted instead. AUROC and the isotonic fit only see tie groups of
    equal scores, so any order within ties gives the same values.
    """
    scores = np.ascontiguousarray(scores)  # (fold-permuted inputs can come in any layout)
    n_rows, n = scores.shape
    k = max(1, int(n - 1).bit_length())
    if k > 29 or scores.dtype not in (np.float32, np.float64) or np.isnan(scores).any():
        return _argsort_rows(scores)
    if scores.dtype == np.float32:
        return _sort_rows_float32(scores)
    bits = scores.astype(np.float64).view(np.int64)  # a copy: reused as the key
    key = bits ^ ((bits >> 63) & _LOW63)  # float order = integer order
    key &= np.int64(-(1 << k))
    key |= np.arange(n, dtype=np.int64)
    key.sort(axis=1)
    order = key & np.int64((1 << k) - 1)
    flat = order + (n * np.arange(n_rows, dtype=np.int64))[:, None]
    s = scores.ravel()[flat]
    if scores.dtype != np.float32:
        bad = np.flatnonzero((s[:, 1:] < s[:, :-1]).any(axis=1))
        if bad.size:  # rows with scores that differ only in the index bits
            fix = _argsort_rows(scores[bad])
            order[bad], s[bad] = fix.order, np.take_along_axis(scores[bad], fix.order, axis=1)
    new_group = np.ones(s.shape, dtype=bool)
    np.not_equal(s[:, 1:], s[:, :-1], out=new_group[:, 1:])
    return SortedRows(order, new_group)


def _sort_rows_float32(scores: np.ndarray) -> SortedRows:
    """:func:`sort_rows` for float32 scores (no NaN): the key is the score's order-preserving
    32-bit integer image in the high half and the column index in the low half, so the sorted
    keys give the order *and* the sorted scores' tie groups without gathering the scores."""
    n_rows, n = scores.shape
    bits = (scores + np.float32(0.0)).view(np.int32)  # + 0 turns −0.0 into +0.0: one tie group
    key = (bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))).astype(np.int64)  # float order
    key <<= 32
    key |= np.arange(n, dtype=np.int64)
    key.sort(axis=1)
    order = key & np.int64(0xFFFFFFFF)
    key >>= 32  # the sorted scores' integer images: equal exactly when the scores are equal
    new_group = np.ones((n_rows, n), dtype=bool)
    np.not_equal(key[:, 1:], key[:, :-1], out=new_group[:, 1:])
    return SortedRows(order, new_group)


def _argsort_rows(scores: np.ndarray) -> SortedRows:
    order = np.argsort(scores, axis=1)
    s = np.take_along_axis(scores, order, axis=1)
    new_group = np.ones(s.shape, dtype=bool)
    np.not_equal(s[:, 1:], s[:, :-1], out=new_group[:, 1:])
    return SortedRows(order, new_group)


def auroc_rows(rows: SortedRows, sorted_pos: np.ndarray) -> np.ndarray:
    """AUROC (M,) of each row; ``sorted_pos`` (M, N) bool are the labels in sorted order.
    Rows with only positives or only negatives give NaN. Ties count one half (mid-ranks).

    Mann–Whitney: AUROC = (Σ_{positives} rank − P(P+1)/2) / (P·Q). The rank sum is taken with
    ranks 1..N, then corrected on tie groups, where every member gets the group's mid-rank.
    """
    n_rows, n = sorted_pos.shape
    pos_f = np.array(sorted_pos, dtype=np.float64, order="C")
    rank_sum = pos_f @ np.arange(1.0, n + 1.0)
    ties = rows.ties
    if ties.member.size:
        mid = 0.5 * (ties.first + ties.last)[ties.group] - ties.member  # mid-rank − rank
        corr = pos_f.ravel()[ties.member] * mid
        rank_sum += np.bincount(ties.member // n, weights=corr, minlength=n_rows)
    n_pos = sorted_pos.sum(axis=1).astype(np.float64)
    n_neg = n - n_pos
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
    return np.where((n_pos > 0) & (n_neg > 0), auc, np.nan)


def isotonic_rows(rows: SortedRows, sorted_pos: np.ndarray) -> np.ndarray:
    """Increasing isotonic regression of the labels on the scores, row by row, evaluated at
    the training points themselves; returned in sorted order, (M, N) float64 in [0, 1].

    Tied scores are averaged first (sklearn's ``IsotonicRegression`` does the same, except that
    it also merges values closer than float resolution and interpolates; we use exact ties):
    each member of a tie group gets the group's mean label, with weight 1 (the isotonic fit is
    then constant on the group, and equals the fit of one point per group weighted by its size).
    """
    n_rows, n = sorted_pos.shape
    y = np.array(sorted_pos, dtype=np.float64, order="C")  # PAV runs on its flat view
    y += 2.0 * np.arange(n_rows, dtype=np.float64)[:, None]  # row r's values lie in [2r, 2r+1]
    flat = y.ravel()
    ties = rows.ties
    if ties.member.size:
        size = np.bincount(ties.group)
        mean = np.bincount(ties.group, weights=flat[ties.member]) / size
        flat[ties.member] = mean[ties.group]
    _pav_into(flat)
    y -= 2.0 * np.arange(n_rows, dtype=np.float64)[:, None]
    return np.clip(y, 0.0, 1.0, out=y)


def _pav_into(values: np.ndarray) -> None:
    """Unit-weight isotonic regression of the contiguous float64 ``values``, in place."""
    if _pav_inplace is not None:
        _pav_inplace(values, np.ones_like(values))
    else:
        values[:] = _pav(values, np.ones_like(values))


def _pav(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    if _pav_inplace is not None:
        out = np.ascontiguousarray(values, dtype=np.float64).copy()
        _pav_inplace(out, np.ascontiguousarray(weights, dtype=np.float64).copy())
        return out
    # lazy: only where sklearn's private kernel is missing (scipy.optimize takes ~0.6 s)
    from scipy.optimize import isotonic_regression

    return np.asarray(isotonic_regression(values, weights=weights).x)


def unsort(sorted_values: np.ndarray, rows: SortedRows) -> np.ndarray:
    """Put row-wise sorted values back in the original sample order."""
    n_rows, n = rows.order.shape
    out = np.empty((n_rows, n), dtype=sorted_values.dtype)
    flat = rows.order + (n * np.arange(n_rows, dtype=np.int64))[:, None]
    out.ravel()[flat.ravel()] = sorted_values.ravel()
    return out
