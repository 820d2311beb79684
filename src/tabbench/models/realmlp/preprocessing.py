"""RealMLP-TD preprocessing, fit on the training part only (Holzmüller et al. 2024, §3;
docs/design.md §10).

Numerical columns: centre at the train median, scale by ``1/(q75 − q25)`` — or, where that
interquartile range is 0, by ``1/(½(max − min))``, or by 0 for a constant column — then
*smooth-clip* ``x / √(1 + (x/3)²)``, which keeps the bulk of the data almost linear but bounds
outliers by ±3 without the kink of a hard clip.

Categorical columns (pandas ``category``; NaN = missing), with ``k`` = number of categories seen
in the training part (categories never seen in training are treated as missing):

* ``k = 0``: dropped (nothing to learn from);
* ``k = 1``: one column, +1 if present and −1 if missing (pytabkit's two-slot ±1 coding);
* ``k = 2``: one column, +1 / −1 for the first / second category, 0 if missing;
* ``3 ≤ k ≤ max_one_hot_cats`` (8): k one-hot columns, all 0 if missing;
* ``k > max_one_hot_cats``: an index into a learned embedding table (0 = missing/unknown).

As in the reference, the one-hot block then goes through the same median-centring, robust
scaling and smooth clipping as the numerical columns (e.g. a 0/1 column whose 1s make up between
25% and 75% of the rows gets scale 1 after centring, a rare category's column gets scale
``1/(½·1) = 2``), while numerical columns go on to the numerical embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


def smooth_clip(x: np.ndarray, max_abs: float = 3.0) -> np.ndarray:
    """``x / √(1 + (x/max_abs)²)``: ≈ x near 0, → ±max_abs for |x| → ∞, smooth everywhere."""
    return x / np.sqrt(1.0 + (x / max_abs) ** 2)


@dataclass(frozen=True)
class RobustScaler:
    """Per-column ``(x − median) · factor`` with RealMLP's fallbacks for the scale."""

    median: np.ndarray
    factor: np.ndarray

    @classmethod
    def fit(cls, x: np.ndarray) -> RobustScaler:
        """Fit on train rows ``x`` (n × d, float).

        ``factor = 1/(q75 − q25)`` of the centred column; where that is 0, ``1/(½(max − min))``;
        where that is 0 too (a constant column), 0 — the column is switched off, not blown up.
        """
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError(f"expected a 2-d array, got shape {x.shape}")
        d = x.shape[1]
        if x.shape[0] == 0:
            return cls(median=np.zeros(d), factor=np.zeros(d))
        median = np.quantile(x, 0.5, axis=0)
        centred = x - median
        spread = np.quantile(centred, 0.75, axis=0) - np.quantile(centred, 0.25, axis=0)
        half_range = 0.5 * (centred.max(axis=0) - centred.min(axis=0))
        spread = np.where(spread == 0.0, half_range, spread)
        factor = np.zeros(d)
        nonzero = spread != 0.0
        factor[nonzero] = 1.0 / spread[nonzero]
        return cls(median=median, factor=factor)

    def transform(self, x: np.ndarray) -> np.ndarray:
        return (np.asarray(x, dtype=np.float64) - self.median) * self.factor


@dataclass(frozen=True)
class CategoricalPlan:
    """How one categorical column is encoded (vocabulary = categories seen in training)."""

    column: str
    kind: str  # "drop" | "single" | "binary" | "onehot" | "embed"
    categories: tuple  # train-observed categories, in the dtype's order

    @property
    def n_onehot_columns(self) -> int:
        return {"drop": 0, "single": 1, "binary": 1, "onehot": len(self.categories), "embed": 0}[
            self.kind
        ]


@dataclass(frozen=True)
class EncodedSplit:
    """One part of the data after preprocessing, as float32/int64 arrays.

    ``x_num``: scaled+clipped numericals (n × d_num), the input of the numerical embeddings.
    ``x_onehot``: scaled+clipped one-hot/±1 columns (n × d_oh), fed to the network as they are.
    ``x_cat``: embedding indices (n × d_emb), 0 = missing or unseen in training.
    """

    x_num: np.ndarray
    x_onehot: np.ndarray
    x_cat: np.ndarray


class RealMLPPreprocessor:
    """Fit-on-train preprocessing of a ``SplitData`` feature frame for RealMLP."""

    def __init__(self, max_one_hot_cats: int = 8, smooth_clip_max_abs: float = 3.0) -> None:
        self.max_one_hot_cats = max_one_hot_cats
        self.smooth_clip_max_abs = smooth_clip_max_abs
        self.num_columns: list[str] = []
        self.cat_plans: list[CategoricalPlan] = []
        self.num_scaler: RobustScaler | None = None
        self.onehot_scaler: RobustScaler | None = None

    # ---- fitting ---------------------------------------------------------------------------
    def fit(self, X: pd.DataFrame) -> RealMLPPreprocessor:
        self.num_columns = [c for c in X.columns if not _is_categorical(X[c])]
        self.cat_plans = [self._plan(c, X[c]) for c in X.columns if _is_categorical(X[c])]
        self.num_scaler = RobustScaler.fit(self._numeric(X))
        self.onehot_scaler = RobustScaler.fit(self._raw_onehot(X))
        return self

    def _plan(self, column: str, s: pd.Series) -> CategoricalPlan:
        codes = s.cat.codes.to_numpy()
        seen = np.unique(codes[codes >= 0])
        categories = tuple(s.cat.categories[seen])
        k = len(categories)
        if k == 0:
            kind = "drop"
        elif k == 1:
            kind = "single"
        elif k == 2:
            kind = "binary"
        elif k <= self.max_one_hot_cats:
            kind = "onehot"
        else:
            kind = "embed"
        return CategoricalPlan(column=column, kind=kind, categories=categories)

    # ---- transforming ----------------------------------------------------------------------
    @property
    def cat_sizes(self) -> list[int]:
        """Embedding table sizes (categories + the missing/unknown slot 0)."""
        return [len(p.categories) + 1 for p in self.cat_plans if p.kind == "embed"]

    @property
    def n_onehot(self) -> int:
        return sum(p.n_onehot_columns for p in self.cat_plans)

    def transform(self, X: pd.DataFrame) -> EncodedSplit:
        if self.num_scaler is None or self.onehot_scaler is None:
            raise RuntimeError("RealMLPPreprocessor.transform called before fit")
        expected = self.num_columns + [p.column for p in self.cat_plans]
        missing = [c for c in expected if c not in X.columns]
        if missing:
            raise ValueError(f"columns missing at transform time: {missing}")
        clip = self.smooth_clip_max_abs
        x_num = smooth_clip(self.num_scaler.transform(self._numeric(X)), clip)
        x_oh = smooth_clip(self.onehot_scaler.transform(self._raw_onehot(X)), clip)
        embed_plans = [p for p in self.cat_plans if p.kind == "embed"]
        x_cat = np.zeros((len(X), len(embed_plans)), dtype=np.int64)
        for j, plan in enumerate(embed_plans):
            x_cat[:, j] = _train_codes(X[plan.column], plan)
        return EncodedSplit(
            x_num=x_num.astype(np.float32), x_onehot=x_oh.astype(np.float32), x_cat=x_cat
        )

    def _numeric(self, X: pd.DataFrame) -> np.ndarray:
        if not self.num_columns:
            return np.zeros((len(X), 0))
        for c in self.num_columns:
            if not pd.api.types.is_numeric_dtype(X[c].dtype):
                raise ValueError(
                    f"column {c!r} has dtype {X[c].dtype}: RealMLP expects float numericals and "
                    "pandas 'category' categoricals"
                )
        x = X[self.num_columns].to_numpy(dtype=np.float64)
        bad = ~np.isfinite(x)
        if bad.any():
            cols = [self.num_columns[j] for j in np.flatnonzero(bad.any(axis=0))]
            raise ValueError(
                f"non-finite values in numerical column(s) {cols}: rows with missing numericals "
                "must be dropped before training (docs/design.md §3, filtering step 1)"
            )
        return x

    def _raw_onehot(self, X: pd.DataFrame) -> np.ndarray:
        """The one-hot/±1 block before scaling (n × n_onehot)."""
        blocks = []
        for plan in self.cat_plans:
            if plan.kind in ("drop", "embed"):
                continue
            code = _train_codes(X[plan.column], plan)  # 0 = missing/unseen, 1..k
            if plan.kind == "single":
                blocks.append(np.where(code == 0, -1.0, 1.0)[:, None])
            elif plan.kind == "binary":
                blocks.append(np.array([0.0, 1.0, -1.0])[code][:, None])
            else:
                onehot = np.zeros((len(code), len(plan.categories) + 1))
                onehot[np.arange(len(code)), code] = 1.0
                blocks.append(onehot[:, 1:])  # the missing slot is all-zero instead
        if not blocks:
            return np.zeros((len(X), 0))
        return np.concatenate(blocks, axis=1)


def _is_categorical(s: pd.Series) -> bool:
    return isinstance(s.dtype, pd.CategoricalDtype)


def _train_codes(s: pd.Series, plan: CategoricalPlan) -> np.ndarray:
    """Codes 1..k for the train vocabulary of ``plan``, 0 for missing or unseen categories."""
    if not _is_categorical(s):
        raise ValueError(f"column {plan.column!r} was categorical at fit time but is {s.dtype} now")
    lookup = {cat: i + 1 for i, cat in enumerate(plan.categories)}
    cats = s.cat.categories
    code_map = np.array([lookup.get(c, 0) for c in cats] + [0], dtype=np.int64)  # [-1] → 0
    return code_map[s.cat.codes.to_numpy()]
