"""Shared synthetic logits for the metrics tests."""

from __future__ import annotations

import numpy as np


def make_logits(
    n: int,
    k: int,
    scale: float = 1.0,
    signal: float = 1.0,
    seed: int = 0,
    dtype=np.float64,
    n_epochs: int | None = None,
):
    """Logits with a true-class bonus ``signal``, multiplied by ``scale`` (large = over-
    confident, small = under-confident). With ``n_epochs``, returns (E, N, K) whose scale
    grows over the epochs like a model that becomes over-confident while training."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, k, n)
    base = rng.normal(size=(n, k))
    base[np.arange(n), y] += signal
    if n_epochs is None:
        return (scale * base).astype(dtype), y
    scales = scale * np.linspace(0.2, 2.0, n_epochs)
    noise = rng.normal(size=(n_epochs, n, k))
    z = scales[:, None, None] * (base[None] + 0.3 * noise)
    return z.astype(dtype), y


import pytest  # noqa: E402


@pytest.fixture
def make():
    """The :func:`make_logits` factory (a fixture, so test modules need no imports)."""
    return make_logits
