"""The contract between trainers and the per-epoch recorder.

Trainers only produce logits. A trainer trains one config to the end (no early stopping) and
yields, chunk by chunk, the validation and test logits after every epoch (a boosting round for
XGBoost). The recorder (:mod:`tabbench.models.recorder`) turns those logits into rows of the
per-epoch record (docs/design.md §6) with the batched metrics of :mod:`tabbench.metrics`. Keeping
metrics out of the trainers means a new stopping metric never touches training code, and
yielding *chunks* of epochs lets the metrics fit many temperatures at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

# SplitData is the data layer's (trainers receive what it loads); re-exported here because it
# is part of the Trainer protocol below
from tabbench.data.dataset import SplitData

__all__ = ["EpochChunk", "SplitData", "TrainContext", "Trainer"]


@dataclass(frozen=True)
class EpochChunk:
    """Logits for consecutive epochs ``first_epoch .. first_epoch + E - 1`` (1-based).

    ``val_logits`` is (E, N_val, K), ``test_logits`` is (E, N_test, K), float32 or float64;
    binary problems use K = 2. ``fit_seconds`` (E,) is the cumulative training wall time at the
    end of each epoch, excluding the time spent computing these logits' metrics.
    Non-finite logits (a diverged epoch) are allowed: the recorder turns them into non-finite
    metrics, which selection never picks.
    """

    first_epoch: int
    val_logits: np.ndarray
    test_logits: np.ndarray
    fit_seconds: np.ndarray


@dataclass(frozen=True)
class TrainContext:
    """Everything about *where* and *how* to run that is not part of the config itself."""

    seed: int
    n_epochs: int
    threads: int = 1
    device: str = "cpu"


class Trainer(Protocol):
    """A model family. Implementations live in ``tabbench.models.<name>``."""

    name: str

    def train(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext
    ) -> Iterator[EpochChunk]:
        """Train one config for ``ctx.n_epochs`` epochs, yielding logits for every epoch."""
        ...
