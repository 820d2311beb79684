"""Dataset filtering (paper App. G.6, in pytabkit's order; docs/design.md §3).

Per dataset, in this order:

1. drop rows with a missing value in any numerical feature (categorical missing stays: it
   becomes a category's absence, NaN);
2. if more than ``max_rows`` rows: keep ``np.random.default_rng(0).permutation(n)[:max_rows]``
   (in that order; the seed is fixed at 0 as in the paper, independent of the config seed);
3. drop the dataset if it has more than ``max_classes`` classes or fewer than ``min_rows`` rows
   after 1–2 (and, necessarily, if fewer than 2 classes remain);
4. labels become codes 0..K-1 (sorted class values; stray whitespace stripped from string
   labels); categoricals become pandas ``category`` (whitespace stripped, ``''``/``'?'`` missing);
5. the leakage check (:mod:`tabbench.data.leakage`, not in the paper): a dataset where one
   column alone predicts the label almost perfectly is dropped (``leakage="drop"``), unless
   the source's manifest row explains why (``leakage_note`` in the raw data's origin); its
   result (a near miss included) is in the report (``leakage``) either way.

Where the rows have groups (:attr:`RawData.groups`), they follow their rows through steps 1–2
and come out beside the frame (:attr:`FilterOutcome.groups`), never in it: neither the
thresholds nor the leakage check see them. The report then says how many groups are left
(``n_groups``); a dataset without groups gets no such key, so its report is what it always was.

Decisions for inputs the paper does not discuss (each recorded in the report):

- **rows without a label** cannot be used for training or testing: dropped first
  (step ``drop_missing_label``); the labels ``''`` and ``'?'`` count as missing.
- **±inf in a numerical feature** is treated as missing: no model here can use an infinite
  input (quantile transforms, scaling and gradients all break), and treating it as missing
  applies the paper's rule for unusable numbers; the count is recorded as ``n_rows_with_inf``.
- **an all-missing numerical column** would make step 1 drop every row and so lose the whole
  dataset because of one column that carries no information; by default
  (``all_nan_columns="drop_column"``) the column is removed before step 1 and recorded in
  ``dropped_columns``. ``"drop_rows"`` applies step 1 literally instead.
  All-missing categorical columns are removed the same way (they are constant).
- **an empty dataset** (no rows, or no feature columns left) is dropped with that reason.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from tabbench.data.dataset import LABEL_COLUMN
from tabbench.data.leakage import check_leakage
from tabbench.data.raw import RawData, category_text

#: label / category tokens that mean "missing" (after stripping whitespace).
MISSING_TOKENS = ("", "?")
SUBSAMPLE_SEED = 0


@dataclass(frozen=True)
class FilterParams:
    """Thresholds of docs/design.md §3 (paper: 100,000 / 1,000 / 100)."""

    max_rows: int | None = 100_000
    min_rows: int = 1_000
    max_classes: int = 100
    all_nan_columns: Literal["drop_column", "drop_rows"] = "drop_column"
    #: a dataset the leakage check flags: dropped (unless its manifest explains it), or only
    #: reported (the paper's rule: no such check)
    leakage: Literal["drop", "report"] = "drop"


@dataclass
class FilterOutcome:
    """The processed frame (None when the dataset is dropped), the report for its json and
    the frame's rows' groups (None: the dataset has none, or it was dropped)."""

    frame: pd.DataFrame | None
    report: dict[str, Any]
    groups: np.ndarray | None = None

    @property
    def kept(self) -> bool:
        return bool(self.report["kept"])


def _normalise_labels(labels: pd.Series) -> pd.Series:
    """Strip whitespace of string labels; map '' and '?' to missing."""
    s = labels.reset_index(drop=True)
    if pd.api.types.is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        return s
    obj = s.astype(object)
    missing = obj.isna()
    text = obj.map(lambda v: v.strip() if isinstance(v, str) else category_text(v))
    text = text.where(~missing, None)
    return text.where(~text.isin(MISSING_TOKENS), None)


def _sorted_classes(y: pd.Series) -> list[Any]:
    values = y.dropna().unique()
    if pd.api.types.is_numeric_dtype(y.dtype) or pd.api.types.is_bool_dtype(y.dtype):
        return sorted(values.tolist())
    return sorted(str(v) for v in values)


def _clean_categorical(s: pd.Series) -> pd.Series:
    """Category of stripped strings, ''/'?' missing, unused categories removed, sorted.

    Works on the category vocabulary, not row by row, so a 10,000-level column stays cheap.
    """
    cat = s if isinstance(s.dtype, pd.CategoricalDtype) else s.astype("category")
    vocab = np.array([category_text(c).strip() for c in cat.cat.categories], dtype=object)
    codes = cat.cat.codes.to_numpy()
    values = np.empty(len(codes), dtype=object)
    has = codes >= 0
    values[has] = vocab[codes[has]]
    values[~has] = None
    values[np.isin(values, MISSING_TOKENS)] = None
    present = sorted({v for v in values if v is not None})
    return pd.Series(pd.Categorical(values, categories=present), name=s.name)


def _step(steps: list[dict[str, Any]], name: str, before: int, after: int) -> None:
    steps.append({"step": name, "rows_before": int(before), "rows_after": int(after)})


def filter_dataset(raw: RawData, params: FilterParams, dataset: str) -> FilterOutcome:
    """Apply the filter of docs/design.md §3 to ``raw``; never raises for a data problem."""
    report: dict[str, Any] = {
        "dataset": dataset,
        "kept": False,
        "reason": None,
        "origin": raw.origin,
        "params": asdict(params),
        "rows_raw": raw.n_rows,
        "steps": [],
        "rows_final": 0,
        "dropped_columns": [],
        "n_rows_with_inf": 0,
    }
    steps: list[dict[str, Any]] = report["steps"]

    def drop(reason: str) -> FilterOutcome:
        report["kept"] = False
        report["reason"] = reason
        report["rows_final"] = 0
        return FilterOutcome(None, report)

    X = raw.features.reset_index(drop=True)
    num_cols = list(raw.num_columns)
    cat_cols = list(raw.cat_columns)
    if raw.n_rows == 0:
        return drop("empty: no rows")
    if not num_cols and not cat_cols:
        return drop("empty: no feature columns")

    # labels: strip whitespace first so " yes" and "yes" are one class everywhere below
    y = _normalise_labels(raw.labels)
    keep = y.notna().to_numpy()
    _step(steps, "drop_missing_label", len(y), int(keep.sum()))
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    rows = np.flatnonzero(keep)  # the raw rows left, in order: where each row's group is

    # numerical features: inf counts as missing
    num = X[num_cols].to_numpy(dtype=np.float64, copy=True) if num_cols else np.empty((len(X), 0))
    inf = np.isinf(num)
    report["n_rows_with_inf"] = int(inf.any(axis=1).sum())
    num[inf] = np.nan
    if num_cols:
        X[num_cols] = num
    if len(X):
        if params.all_nan_columns == "drop_column":
            for c in [c for c in num_cols if X[c].isna().all()]:
                report["dropped_columns"].append(
                    {"column": c, "kind": "numerical", "reason": "all values missing"}
                )
                num_cols.remove(c)
        for c in [c for c in cat_cols if X[c].isna().all()]:
            report["dropped_columns"].append(
                {"column": c, "kind": "categorical", "reason": "all values missing"}
            )
            cat_cols.remove(c)
    X = X[num_cols + cat_cols]

    # step 1: drop rows with a missing numerical value
    keep = ~X[num_cols].isna().any(axis=1).to_numpy() if num_cols else np.ones(len(X), bool)
    _step(steps, "drop_missing_numerical", len(X), int(keep.sum()))
    X, y = X[keep].reset_index(drop=True), y[keep].reset_index(drop=True)
    rows = rows[keep]

    # step 2: subsample
    n = len(X)
    if params.max_rows is not None and n > params.max_rows:
        idx = np.random.default_rng(SUBSAMPLE_SEED).permutation(n)[: params.max_rows]
        X, y = X.iloc[idx].reset_index(drop=True), y.iloc[idx].reset_index(drop=True)
        rows = rows[idx]
    _step(steps, "subsample", n, len(X))

    # step 3: thresholds
    classes = _sorted_classes(y)
    report["n_num"] = len(num_cols)
    report["n_cat"] = len(cat_cols)
    report["n_classes"] = len(classes)
    reasons = []
    if not num_cols and not cat_cols:
        reasons.append("empty: no feature columns left")
    if len(classes) > params.max_classes:
        reasons.append(f"{len(classes)} classes > max_classes {params.max_classes}")
    if len(X) < params.min_rows:
        reasons.append(f"{len(X)} rows < min_rows {params.min_rows} after steps 1-2")
    if len(classes) < 2:
        reasons.append(f"{len(classes)} class(es): not a classification task")
    _step(steps, "thresholds", len(X), 0 if reasons else len(X))
    if reasons:
        return drop("; ".join(reasons))

    # step 4: label codes and categoricals
    codes = pd.Categorical(y, categories=classes).codes
    out = {c: X[c].astype("float64") for c in num_cols}
    for c in cat_cols:
        out[c] = _clean_categorical(X[c])
    frame = pd.DataFrame(out, index=pd.RangeIndex(len(X)))
    frame[LABEL_COLUMN] = codes.astype(np.int64)
    counts = np.bincount(frame[LABEL_COLUMN].to_numpy(), minlength=len(classes))
    report["class_names"] = [category_text(c) for c in classes]

    # step 5: the leakage check
    leak = check_leakage(frame, frame[LABEL_COLUMN].to_numpy(), num_cols, cat_cols,
                         raw.origin.get("leakage_note"))
    report["leakage"] = leak.to_json()
    _step(steps, "leakage", len(frame), 0 if leak.status == "flagged" else len(frame))
    if leak.status == "flagged" and params.leakage == "drop":
        return drop(f"leakage: {leak.describe()}; drop that column in the source (e.g. the "
                    "recipe's `drop`) or explain it in the manifest (`leakage_note`)")
    report.update(
        kept=True,
        rows_final=len(frame),
        class_names=[category_text(c) for c in classes],
        class_counts=[int(c) for c in counts],
        max_categories=max((len(frame[c].cat.categories) for c in cat_cols), default=0),
    )
    groups = None
    if raw.groups is not None:
        groups = raw.groups.to_numpy(dtype=object)[rows]
        report["n_groups"] = len(pd.unique(groups))
    return FilterOutcome(frame, report, groups)
