"""The trainer of ``toymodel`` (:class:`tabbench.models.base.Trainer`): no learning, only logits
that grow more confident with the epoch, so a run takes milliseconds and its curves are not flat.

A trainer yields the validation and test logits of every epoch (never metrics): tabbench scores
every registered stopping metric on them, so a metric added later needs no trainer change.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from tabbench.models.base import EpochChunk, SplitData, TrainContext


class ToyTrainer:
    """Deterministic logits per (seed, config): class ``y``'s logit grows by ``epoch·w[y]``."""

    name = "toymodel"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale  # the trainer option `scale` (registration.check_scale checked it)

    def train(self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
              ) -> Iterator[EpochChunk]:
        rng = np.random.default_rng(ctx.seed)
        k = data.n_classes
        w = rng.normal(size=(k,)) * params["strength"] * self.scale
        t0 = time.perf_counter()
        for epoch in range(1, ctx.n_epochs + 1):
            # one epoch per chunk: (first epoch, val (1, N_val, K), test (1, N_test, K),
            # cumulative fit seconds at the end of each epoch)
            yield EpochChunk(epoch, _logits(rng, data.y_val, epoch * w),
                             _logits(rng, data.y_test, epoch * w),
                             np.array([time.perf_counter() - t0]))


def _logits(rng: np.random.Generator, y: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """One epoch's logits (1, N, K): noise, plus ``shift[y]`` on each sample's own class."""
    z = rng.normal(size=(1, len(y), len(shift))).astype(np.float32)
    z[0, np.arange(len(y)), y] += shift[y]
    return z
