"""The MLP's preprocessing and network, shared by the single-config trainer
(:mod:`tabbench.models.mlp`, whose docstring says what they do and why) and the stacked one
(:mod:`tabbench.models.mlp_stacked`): one definition for both paths, so a member starts from
exactly the inputs and weights its single-config run would."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd
from sklearn.preprocessing import QuantileTransformer
from torch import nn

from tabbench.models.mlp_config import MAX_ONE_HOT_LEVELS, check_max_one_hot_levels

log = logging.getLogger("tabbench.models.mlp")


class MLPPreprocessor:
    """Quantile transform of numericals + one-hot of categoricals, fit on train only.

    ``max_one_hot_levels``: one-hot at most this many (most frequent) train levels per column;
    ``None`` = no cap (one column per category).
    """

    def __init__(
        self, seed: int = 0, max_one_hot_levels: int | None = MAX_ONE_HOT_LEVELS
    ) -> None:
        self.seed = int(seed)
        self.max_one_hot_levels = check_max_one_hot_levels(max_one_hot_levels)
        self.num_columns: list[str] = []
        self.cat_vocab: dict[str, list[Any]] = {}
        self.quantile: QuantileTransformer | None = None

    def fit(self, X: pd.DataFrame) -> MLPPreprocessor:
        cats = [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]
        self.num_columns = [c for c in X.columns if c not in cats]
        if self.num_columns:
            num = X[self.num_columns].to_numpy(dtype=np.float64)
            if not np.isfinite(num).all():
                raise ValueError("numerical features must be finite (rows with missing "
                                 "numericals are dropped when the data is processed)")
            self.quantile = QuantileTransformer(
                n_quantiles=min(1000, len(X)),
                output_distribution="normal",
                random_state=self.seed,
            ).fit(num)
        self.cat_vocab = {}
        for c in cats:
            counts = X[c].value_counts(sort=False)  # every category of the dtype, in order
            counts = counts[counts > 0]
            vocab = list(counts.index)
            cap = self.max_one_hot_levels
            if cap is not None and len(vocab) > cap:
                top = np.argsort(-counts.to_numpy(), kind="stable")[:cap]
                vocab = [vocab[i] for i in np.sort(top)]
                log.warning(
                    "MLP: categorical column %r has %d categories in train; one-hot encoding "
                    "only the %d most frequent, the other %d are encoded like an unseen value",
                    c, len(counts), len(vocab), len(counts) - len(vocab),
                )
            if len(vocab) >= 2:
                self.cat_vocab[c] = vocab
        if not self.num_columns and not self.cat_vocab:
            raise ValueError("no usable features (no numericals, no categorical with ≥ 2 "
                             "categories in train)")
        return self

    @property
    def n_features(self) -> int:
        return len(self.num_columns) + sum(
            1 if len(v) == 2 else len(v) for v in self.cat_vocab.values()
        )

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        out = np.zeros((len(X), self.n_features), dtype=np.float32)
        j = 0
        if self.num_columns:
            num = X[self.num_columns].to_numpy(dtype=np.float64)
            if not np.isfinite(num).all():
                raise ValueError("numerical features must be finite")
            out[:, : len(self.num_columns)] = self.quantile.transform(num)
            j = len(self.num_columns)
        for c, vocab in self.cat_vocab.items():
            codes = _vocab_codes(X[c], vocab)
            if len(vocab) == 2:
                out[:, j] = np.where(codes < 0, 0.0, 2.0 * codes - 1.0)
                j += 1
            else:
                rows = np.flatnonzero(codes >= 0)
                out[rows, j + codes[rows]] = 1.0
                j += len(vocab)
        return out


def _vocab_codes(col: pd.Series, vocab: list[Any]) -> np.ndarray:
    """Index of each value in ``vocab``; -1 for missing or not in ``vocab`` (unseen in train)."""
    col = col if isinstance(col.dtype, pd.CategoricalDtype) else col.astype("category")
    index = {v: i for i, v in enumerate(vocab)}
    lookup = np.array([index.get(v, -1) for v in col.cat.categories] + [-1], dtype=np.int64)
    return lookup[col.cat.codes.to_numpy(dtype=np.int64)]  # code -1 (missing) -> last entry


def build_mlp(n_in: int, n_out: int, n_hidden_layers: int, width: int, dropout: float) -> nn.Module:
    """ReLU MLP with PyTorch's default layer initialisation."""
    layers: list[nn.Module] = []
    d = n_in
    for _ in range(int(n_hidden_layers)):
        layers += [nn.Linear(d, int(width)), nn.ReLU()]
        if dropout > 0:
            layers.append(nn.Dropout(float(dropout)))
        d = int(width)
    layers.append(nn.Linear(d, n_out))
    return nn.Sequential(*layers)
