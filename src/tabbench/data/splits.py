"""Train/validation/test splits (docs/design.md §3): ``n_splits`` random 64/16/20 splits.

Split ``i`` draws ``perm = np.random.default_rng(seed + i).permutation(n)`` (``seed`` is the
config's global seed, 0 by default, so split ``i`` uses seed ``i`` as in the paper):

- test = the first ``round(0.2 n)`` rows of ``perm``;
- of the remaining ``m = n - n_test`` rows (80 %), validation = the next ``round(0.2 m)``
  and train = the rest, i.e. 64/16/20 overall.

With ``stratify=True`` (not the paper's choice; an option) both cuts are stratified by label
with scikit-learn's ``train_test_split`` seeded by ``seed + i``, with the same sizes.

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
    from sklearn.model_selection import train_test_split

    idx = np.arange(n)
    try:
        rest, test = train_test_split(idx, test_size=n_test, stratify=y, random_state=seed)
        train, val = train_test_split(rest, test_size=n_val, stratify=y[rest], random_state=seed)
    except ValueError as e:
        raise DataError(f"cannot stratify: {e} (use stratify: false)") from e
    return {"test": np.asarray(test), "val": np.asarray(val), "train": np.asarray(train)}


def make_splits(
    y: np.ndarray, n_splits: int, seed: int = 0, stratify: bool = False
) -> pd.DataFrame:
    """All splits as the long table (split, row, role), sorted by split, role, row."""
    y = np.asarray(y)
    frames = []
    for i in range(n_splits):
        parts = one_split(y, seed + i, stratify)
        for role in ROLES:
            rows = np.sort(parts[role]).astype(np.int64)
            frames.append(
                pd.DataFrame(
                    {"split": np.full(len(rows), i, dtype=np.int64), "row": rows, "role": role}
                )
            )
    return pd.concat(frames, ignore_index=True)
