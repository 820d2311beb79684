"""The class balance of processed datasets, from what the data stage records: the class counts
in ``data/processed/<name>.json`` (:mod:`tabbench.data.filtering`), without reading the data.

Per dataset: the smallest class's share of the rows (``minority_share``) and the entropy of
the class shares in nats (``prior_entropy``: the logloss of always predicting the shares, what
a model that learned nothing scores; :mod:`tabbench.summary.heterogeneity` divides a validation
logloss by it).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from tabbench.core.layout import DataLayout, PathLike

BALANCE_COLUMNS = ["dataset", "minority_share", "prior_entropy"]


def balance_of(counts: Iterable[int]) -> tuple[float, float]:
    """(minority share, entropy of the shares in nats) of class ``counts``; NaN for none."""
    c = np.asarray(list(counts), dtype=float)
    if c.size == 0 or not c.sum() > 0:
        return float("nan"), float("nan")
    p = c / c.sum()
    nz = p[p > 0]
    return float(p.min()), float(-(nz * np.log(nz)).sum())


def class_balance(data_dir: PathLike | None, datasets: Iterable[str]) -> pd.DataFrame:
    """:data:`BALANCE_COLUMNS` of each of ``datasets`` whose processed report in ``data_dir``
    holds its class counts; the others (and all, without a data folder) have no row."""
    rows = []
    if data_dir is not None and Path(data_dir).is_dir():
        layout = DataLayout(data_dir)
        for name in sorted(set(datasets)):
            path = Path(layout.processed_json(name))
            if not path.is_file():
                continue
            counts = json.loads(path.read_text()).get("class_counts")
            if counts:
                rows.append([name, *balance_of(counts)])
    return pd.DataFrame(rows, columns=BALANCE_COLUMNS)
