"""On-disk contract of processed datasets and splits, and loading one split for training.

- ``data/processed/<name>.parquet``: feature columns (numerical: float64; categorical: pandas
  ``category``, missing = NaN), the label column :data:`LABEL_COLUMN` (int64 codes 0..K-1) and,
  only for a dataset whose source declares a group column, the rows' groups
  :data:`GROUP_COLUMN` (text; what ``split_by_groups`` keeps together). Neither reserved column
  is a feature (:func:`feature_frame`).
- ``data/processed/<name>.json``: what filtering did (rows per step, n_num, n_cat, n_classes,
  class names, kept or why dropped).
- ``data/splits/<name>.parquet``: columns ``split`` (int), ``row`` (int, position in the
  processed parquet), ``role`` (``train`` / ``val`` / ``test``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

LABEL_COLUMN = "__label__"
#: the rows' groups (protein blocks, persons of a panel), beside the features, never one of them
GROUP_COLUMN = "__group__"
#: the columns of a processed (or raw) parquet that are not features
RESERVED_COLUMNS = (LABEL_COLUMN, GROUP_COLUMN)
ROLES = ("train", "val", "test")


@dataclass(frozen=True)
class SplitData:
    """One train/val/test split of a processed dataset.

    Feature frames keep the processed dtypes: numerical columns are float, categorical columns
    are pandas ``category`` (missing = NaN). Labels are int64 codes in ``0..n_classes-1``.
    Preprocessing (quantile transform, scaling, one-hot vocabularies) is fit by each trainer on
    ``X_train`` only.
    """

    X_train: pd.DataFrame
    y_train: np.ndarray
    X_val: pd.DataFrame
    y_val: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    n_classes: int

    @property
    def cat_columns(self) -> list[str]:
        dtypes = self.X_train.dtypes
        return [c for c in self.X_train.columns if isinstance(dtypes[c], pd.CategoricalDtype)]

    @property
    def num_columns(self) -> list[str]:
        cats = set(self.cat_columns)
        return [c for c in self.X_train.columns if c not in cats]


def feature_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The features of a processed frame: every column but the reserved ones (the label and,
    where the dataset has them, the groups)."""
    return df.drop(columns=[c for c in RESERVED_COLUMNS if c in df.columns])


def load_split_data(
    processed_path: str | os.PathLike[str], splits_path: str | os.PathLike[str], split: int
) -> SplitData:
    """Load split ``split`` of a processed dataset as a :class:`SplitData`."""
    df = pd.read_parquet(processed_path)
    splits = pd.read_parquet(splits_path)
    if LABEL_COLUMN not in df.columns:
        raise ValueError(f"{processed_path}: no label column {LABEL_COLUMN!r}")
    mine = splits[splits["split"] == split]
    if mine.empty:
        have = sorted(splits["split"].unique())
        raise ValueError(f"{splits_path}: no split {split} (have {have})")
    y_all = df[LABEL_COLUMN].to_numpy(dtype=np.int64)
    X_all = feature_frame(df)
    parts = {}
    for role in ROLES:
        rows = np.sort(mine.loc[mine["role"] == role, "row"].to_numpy(dtype=np.int64))
        if rows.size == 0:
            raise ValueError(f"{splits_path}: split {split} has no {role} rows")
        parts[role] = (X_all.iloc[rows].reset_index(drop=True), y_all[rows])
    n_classes = int(y_all.max()) + 1
    return SplitData(
        X_train=parts["train"][0],
        y_train=parts["train"][1],
        X_val=parts["val"][0],
        y_val=parts["val"][1],
        X_test=parts["test"][0],
        y_test=parts["test"][1],
        n_classes=n_classes,
    )
