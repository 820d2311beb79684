"""A dataset as a source delivers it, before filtering: ``data/raw/<name>.{parquet,json}``.

Every source (TALENT folder, OpenML, bundled parquet) returns a :class:`RawData`, built with
:func:`make_raw`, which fixes one representation so that filtering never has to know where a
dataset came from:

- numerical feature columns are ``float64`` (``''``, ``'?'`` and ``None`` read as NaN; ``±inf``
  kept as is — filtering decides what they mean);
- categorical feature columns are pandas ``category`` of strings (``None``/NaN missing; the
  tokens ``''``/``'?'`` are kept as categories here and turned into missing by filtering step 4);
- labels are kept as delivered (numbers or strings), missing labels as NaN/None.

On disk the raw parquet holds the feature columns plus the label column
:data:`~tabbench.data.dataset.LABEL_COLUMN` and, for a dataset whose source declares a group
column (a pypi recipe's ``groups``), the rows' groups
:data:`~tabbench.data.dataset.GROUP_COLUMN`, as text; the json holds the fetch status: which
source provided it, or, when no source could, every source tried and why it failed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.io import write_parquet_atomic
from tabbench.data.dataset import GROUP_COLUMN, LABEL_COLUMN, RESERVED_COLUMNS
from tabbench.data.errors import DataError

#: string tokens that mean "missing" in a numerical column.
NUMERIC_MISSING_TOKENS = frozenset({"", "?", "nan", "NaN", "NA", "None"})


@dataclass
class RawData:
    """Features (numerical then categorical columns) and labels of one dataset, and the rows'
    groups where its source declares them (None: the rows are not grouped)."""

    features: pd.DataFrame
    labels: pd.Series
    num_columns: list[str]
    cat_columns: list[str]
    origin: dict[str, Any] = field(default_factory=dict)
    groups: pd.Series | None = None

    @property
    def n_rows(self) -> int:
        return len(self.labels)


def _check_names(names: list[str], dataset: str) -> None:
    seen: set[str] = set()
    dups = sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
    if dups:
        raise DataError(f"{dataset}: duplicated column names {dups[:5]}; names must be unique")
    reserved = [n for n in RESERVED_COLUMNS if n in names]
    if reserved:
        raise DataError(
            f"{dataset}: a feature is named {reserved[0]!r}, a reserved column (label, groups)"
        )


def to_numeric_column(values: Any, name: str, dataset: str) -> pd.Series:
    """``values`` as float64; missing tokens become NaN, anything else unparseable is an error.

    Silent coercion (``errors='coerce'``) would turn a mis-typed categorical column into NaN
    and then drop every row at filtering step 1; an error names the column instead.
    """
    s = pd.Series(values, copy=False)
    if s.dtype == bool or pd.api.types.is_bool_dtype(s.dtype):
        return s.astype("float64").rename(name)
    if pd.api.types.is_numeric_dtype(s.dtype):
        return s.astype("float64").rename(name)
    obj = s.astype(object)
    missing = obj.isna() | obj.map(
        lambda v: isinstance(v, str) and v.strip() in NUMERIC_MISSING_TOKENS
    )
    out = pd.to_numeric(obj.where(~missing, np.nan), errors="coerce").astype("float64")
    bad = out.isna() & ~missing
    if bad.any():
        example = obj[bad].iloc[0]
        raise DataError(
            f"{dataset}: numerical column {name!r} has {int(bad.sum())} non-numeric value(s), "
            f"e.g. {example!r}"
        )
    return out.rename(name)


def to_categorical_column(values: Any, name: str) -> pd.Series:
    """``values`` as a pandas ``category`` of strings (None/NaN stay missing)."""
    s = pd.Series(values, copy=False)
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        if cats.dtype != object and not pd.api.types.is_string_dtype(cats.dtype):
            s = s.cat.rename_categories([category_text(c) for c in cats])
        return s.rename(name)
    obj = s.astype(object)
    missing = obj.isna()
    text = obj.map(category_text).where(~missing, None)
    return pd.Series(pd.Categorical(text), index=s.index, name=name)


def category_text(v: Any) -> str:
    """A category or label value as text: 1.0 and 1 in a categorical column are the same
    category "1"; bytes are decoded (shared by reading and filtering, so both agree)."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, bytes):
        return v.decode("utf-8", errors="replace")
    return str(v)


def _clean_labels(values: Any) -> pd.Series:
    s = pd.Series(values, copy=False).reset_index(drop=True)
    if isinstance(s.dtype, pd.CategoricalDtype):
        s = s.astype(object)
    if s.dtype == object:
        kinds = {type(v) for v in s.dropna()}
        numeric = kinds and all(issubclass(k, (int, float, np.integer, np.floating)) for k in kinds)
        if numeric:
            s = s.astype("float64")
        elif kinds:
            # mixed numbers/strings cannot go into one parquet column; compare them as text
            s = s.map(
                lambda v: v
                if v is None or (isinstance(v, float) and np.isnan(v))
                else category_text(v)
            )
    return s.rename(LABEL_COLUMN)


def clean_groups(values: Any, dataset: str) -> pd.Series:
    """A group column as text (1.0 and 1 are one group); a row without a group cannot be kept
    with its group, so a missing value is a :class:`DataError`."""
    s = pd.Series(values, copy=False).reset_index(drop=True)
    missing = s.isna()
    if missing.any():
        raise DataError(f"{dataset}: the group column has {int(missing.sum())} missing value(s)")
    return s.astype(object).map(category_text).astype(object).rename(GROUP_COLUMN)


def make_raw(
    num: pd.DataFrame | None,
    cat: pd.DataFrame | None,
    labels: Any,
    dataset: str,
    origin: Mapping[str, Any] | None = None,
    groups: Any = None,
) -> RawData:
    """Assemble a :class:`RawData` from numerical and categorical parts (either may be None)
    and, where the source declares them, the rows' groups (never a feature)."""
    y = _clean_labels(labels)
    n = len(y)
    num = num if num is not None else pd.DataFrame(index=range(n))
    cat = cat if cat is not None else pd.DataFrame(index=range(n))
    for part, kind in ((num, "numerical"), (cat, "categorical")):
        if len(part) != n:
            raise DataError(f"{dataset}: {kind} features have {len(part)} rows but labels {n}")
    num_names = [str(c) for c in num.columns]
    cat_names = [str(c) for c in cat.columns]
    _check_names(num_names + cat_names, dataset)
    cols: dict[str, pd.Series] = {}
    for c, name in zip(num.columns, num_names, strict=True):
        cols[name] = to_numeric_column(num[c].to_numpy(), name, dataset).reset_index(drop=True)
    for c, name in zip(cat.columns, cat_names, strict=True):
        cols[name] = to_categorical_column(cat[c].reset_index(drop=True), name)
    features = pd.DataFrame(cols, index=pd.RangeIndex(n))
    group_series = None
    if groups is not None:
        group_series = clean_groups(groups, dataset)
        if len(group_series) != n:
            raise DataError(f"{dataset}: groups have {len(group_series)} rows but labels {n}")
    return RawData(features, y, num_names, cat_names, dict(origin or {}), group_series)


def split_by_dtype(X: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(numerical, categorical) column names of a frame by dtype: numbers are numerical; category,
    bool, strings and objects are categorical."""
    num, cat = [], []
    for c in X.columns:
        dt = X[c].dtype
        if pd.api.types.is_numeric_dtype(dt) and not pd.api.types.is_bool_dtype(dt):
            num.append(c)
        else:
            cat.append(c)
    return num, cat


def write_raw(raw: RawData, parquet_path: str | os.PathLike[str]) -> None:
    """Write the raw parquet (features + :data:`LABEL_COLUMN`, then :data:`GROUP_COLUMN` where
    the rows have groups) atomically."""

    df = raw.features.copy()
    df[LABEL_COLUMN] = raw.labels.to_numpy()
    if raw.groups is not None:
        df[GROUP_COLUMN] = raw.groups.to_numpy()
    write_parquet_atomic(df, parquet_path)


def read_raw(parquet_path: str | os.PathLike[str], meta: Mapping[str, Any]) -> RawData:
    """Read a raw parquet written by :func:`write_raw`; ``meta`` is its json (column kinds)."""
    name = str(meta.get("dataset", parquet_path))
    try:
        df = pd.read_parquet(parquet_path)
    except Exception as e:  # pyarrow raises several types for damaged files
        raise DataError(f"{name}: cannot read raw parquet {os.fspath(parquet_path)!r}: {e}") from e
    if LABEL_COLUMN not in df.columns:
        raise DataError(f"{name}: raw parquet has no label column {LABEL_COLUMN!r}")
    num = list(meta.get("num_columns", []))
    cat = list(meta.get("cat_columns", []))
    missing = [c for c in num + cat if c not in df.columns]
    if missing:
        raise DataError(f"{name}: raw parquet lacks columns {missing[:5]} listed in its json")
    return RawData(
        df[num + cat].reset_index(drop=True),
        df[LABEL_COLUMN].reset_index(drop=True),
        num,
        cat,
        dict(meta.get("origin", {})),
        df[GROUP_COLUMN].reset_index(drop=True) if GROUP_COLUMN in df.columns else None,
    )
