"""Small synthetic splits for trainer and recorder tests (numericals + categoricals)."""

import numpy as np
import pandas as pd
import pytest

from tabbench.models.base import SplitData


def make_split(n_classes: int, sizes=(600, 200, 250), seed: int = 0) -> SplitData:
    rng = np.random.default_rng(seed)
    parts = []
    for n in sizes:
        X = pd.DataFrame({
            "a": rng.normal(size=n),
            "b": rng.exponential(size=n),
            "c": pd.Categorical(rng.choice(["x", "y", "z", None], size=n),
                                categories=["x", "y", "z", "never"]),
            "d": pd.Categorical(rng.choice(["p", "q"], size=n)),
        })
        score = X["a"] + (X["c"] == "x") * 1.5 - (X["d"] == "q") + rng.normal(size=n) * 0.7
        edges = np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1])
        parts.append((X, np.digitize(score, edges).astype(np.int64)))
    (Xtr, ytr), (Xva, yva), (Xte, yte) = parts
    return SplitData(Xtr, ytr, Xva, yva, Xte, yte, n_classes)


@pytest.fixture(params=[2, 3], ids=["binary", "3class"])
def split_data(request) -> SplitData:
    return make_split(request.param)
