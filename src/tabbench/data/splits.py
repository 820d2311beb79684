"""Train/validation/test splits (docs/design.md §3): ``n_splits`` random 64/16/20 splits.

Split ``i`` draws ``perm = np.random.default_rng(seed + i).permutation(n)`` (``seed`` is the
config's global seed, 0 by default, so split ``i`` uses seed ``i`` as in the paper):

- test = the first ``round(0.2 n)`` rows of ``perm``;
- of the remaining ``m = n - n_test`` rows (80 %), validation = the next ``round(0.2 m)``
  and train = the rest, i.e. 64/16/20 overall.

With ``stratify=True`` (not the paper's choice; an option) both cuts are stratified by label
with scikit-learn's ``train_test_split`` seeded by ``seed + i``, with the same sizes.

**By groups** (``groups`` given: config ``split_by_groups`` on a dataset whose source declares
a group column; not the paper's choice) the same cuts are made on the groups instead of the
rows, as scikit-learn's ``GroupShuffleSplit`` does, so that no group has rows in two parts:
the ``G`` distinct groups, sorted, are permuted by ``default_rng(seed + i).permutation(G)``;
test = the rows of the first ``round(0.2 G)`` groups, validation = those of the next
``round(0.2 (G - n_test))`` groups, train = the rest (64/16/20 of the groups; of the rows in
proportion to the groups' sizes). Grouped splits are never stratified.

Stored as ``data/splits/<name>.parquet`` with columns ``split``, ``row``, ``role`` (the
contract of :mod:`tabbench.data.dataset`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabbench.data.dataset import ROLES
from tabbench.data.errors import DataError

TEST_FRACTION = 0.2
VAL_FRACTION = 0.2  # of the 80 % that is not test


def split_sizes(n: int) -> tuple[int, int, int]:
    """(train, val, test) sizes for ``n`` rows."""
    n_test = int(round(TEST_FRACTION * n))
    n_val = int(round(VAL_FRACTION * (n - n_test)))
    return n - n_test - n_val, n_val, n_test


def one_split(y: np.ndarray, seed: int, stratify: bool = False) -> dict[str, np.ndarray]:
    """Row indices of train/val/test for one seed."""
    n = len(y)
    n_train, n_val, n_test = split_sizes(n)
    if min(n_train, n_val, n_test) < 1:
        raise DataError(f"{n} rows are too few for a 64/16/20 split")
    if not stratify:
        perm = np.random.default_rng(seed).permutation(n)
        return {
            "test": perm[:n_test],
            "val": perm[n_test : n_test + n_val],
            "train": perm[n_test + n_val :],
        }
    # lazy: scikit-learn, ~0.8 s that the data jobs not splitting would pay (docs/performance.md)
    from sklearn.model_selection import train_test_split

    idx = np.arange(n)
    try:
        rest, test = train_test_split(idx, test_size=n_test, stratify=y, random_state=seed)
        train, val = train_test_split(rest, test_size=n_val, stratify=y[rest], random_state=seed)
    except ValueError as e:
        raise DataError(f"cannot stratify: {e} (use stratify: false)") from e
    return {"test": np.asarray(test), "val": np.asarray(val), "train": np.asarray(train)}


def one_group_split(codes: np.ndarray, n_groups: int, seed: int) -> dict[str, np.ndarray]:
    """Row indices of train/val/test for one seed, whole groups to a part: ``codes`` are the
    rows' group codes ``0..n_groups-1`` (in sorted order of the groups)."""
    n_train, n_val, n_test = split_sizes(n_groups)
    if min(n_train, n_val, n_test) < 1:
        raise DataError(f"{n_groups} groups are too few for a 64/16/20 split by groups")
    perm = np.random.default_rng(seed).permutation(n_groups)
    role_of_group = np.empty(n_groups, dtype=np.int8)
    role_of_group[perm[:n_test]] = 0
    role_of_group[perm[n_test : n_test + n_val]] = 1
    role_of_group[perm[n_test + n_val :]] = 2
    role = role_of_group[codes]
    return {"test": np.flatnonzero(role == 0), "val": np.flatnonzero(role == 1),
            "train": np.flatnonzero(role == 2)}


def make_splits(
    y: np.ndarray,
    n_splits: int,
    seed: int = 0,
    stratify: bool = False,
    groups: np.ndarray | None = None,
) -> pd.DataFrame:
    """All splits as the long table (split, row, role), sorted by split, role, row; with
    ``groups`` (one per row) split by groups (module docstring)."""
    y = np.asarray(y)
    if groups is not None:
        if stratify:
            raise DataError("a split by groups cannot be stratified (use stratify: false or "
                            "split_by_groups: false)")
        if len(groups) != len(y):
            raise DataError(f"{len(groups)} groups for {len(y)} rows")
        codes, uniques = pd.factorize(pd.Series(groups, dtype=object), sort=True)
    frames = []
    for i in range(n_splits):
        if groups is None:
            parts = one_split(y, seed + i, stratify)
        else:
            parts = one_group_split(codes, len(uniques), seed + i)
        for role in ROLES:
            rows = np.sort(parts[role]).astype(np.int64)
            frames.append(
                pd.DataFrame(
                    {"split": np.full(len(rows), i, dtype=np.int64), "row": rows, "role": role}
                )
            )
    return pd.concat(frames, ignore_index=True)
