"""The contract between trainers and the per-epoch recorder.

Trainers only produce logits. A trainer trains one config to the end (no early stopping) and
yields, chunk by chunk, the validation and test logits after every epoch (a boosting round for
XGBoost). The recorder (:mod:`tabbench.models.recorder`) turns those logits into rows of the
per-epoch record (docs/design.md §6) with the batched metrics of :mod:`tabbench.metrics`. Keeping
metrics out of the trainers means a new stopping metric never touches training code, and
yielding *chunks* of epochs lets the metrics fit many temperatures at once.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

# SplitData is the data layer's (trainers receive what it loads); re-exported here because it
# is part of the Trainer protocol below
from tabbench.data.dataset import SplitData

__all__ = [
    "EpochChunk",
    "GroupChunk",
    "ModelKeepingTrainer",
    "ReplayableTrainer",
    "SplitData",
    "StackingTrainer",
    "TrainContext",
    "Trainer",
]


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
        """Train one config for ``ctx.n_epochs`` epochs, yielding logits for every epoch.

        Parameters
        ----------
        params : Mapping of str to object
            The config (one draw of the model's search space).
        data : SplitData
            The split's train, validation and test parts (each trainer fits its own
            preprocessing on ``X_train``).
        ctx : TrainContext
            Seed, number of epochs, threads and device of the job.

        Yields
        ------
        EpochChunk
            The validation and test logits of consecutive epochs.
        """
        ...


@dataclass(frozen=True)
class GroupChunk:
    """Logits of epochs ``first_epoch .. first_epoch + E - 1`` of every member of a stacked group
    (:class:`StackingTrainer`): ``members[i]`` is member i's :class:`EpochChunk`, or None once
    member i has failed. ``failures`` maps a member that failed *in this chunk* to its error
    (e.g. a non-finite loss in the first epoch); the other members go on training, since nothing
    couples the members of a group.
    """

    members: tuple[EpochChunk | None, ...]
    failures: Mapping[int, BaseException] = field(default_factory=dict)


@runtime_checkable
class StackingTrainer(Protocol):
    """A trainer that can train several configs of one job as members of one stacked model
    (docs/design.md §15): one batched matmul per layer for all members, so a GPU pays the kernel
    launches of one model for k of them.

    The contract that makes stacking the same algorithm as training each config alone: a
    member's records depend only on its own config and :class:`TrainContext` (its seed), never
    on which other members share its group or at what position.
    """

    def stack_key(self, params: Mapping[str, Any]) -> Hashable:
        """Configs with equal keys can be members of one stacked model (their tensors have the
        same shapes)."""
        ...

    def member_bytes(self, params: Mapping[str, Any], data: SplitData) -> int:
        """Device memory one member of ``params`` needs on ``data`` (an estimate, for choosing
        how many members fit in the memory budget)."""
        ...

    def train_members(
        self,
        params: Sequence[Mapping[str, Any]],
        data: SplitData,
        ctxs: Sequence[TrainContext],
    ) -> Iterator[GroupChunk]:
        """Train the configs ``params`` (one :class:`TrainContext` each; the same epochs, device
        and threads) together for ``ctxs[0].n_epochs`` epochs, yielding every epoch's logits of
        every member."""
        ...


@runtime_checkable
class ReplayableTrainer(Protocol):
    """Optional for a trainer whose model can be evaluated at any earlier epoch of one training
    (boosted trees: a prediction at fewer rounds). The replay of the chosen models
    (:mod:`tabbench.diagnostics.replay`) trains once up to the last needed epoch and predicts at
    each one;
    a trainer without it is replayed through its :meth:`Trainer.train` chunks."""

    def logits_at(
        self, params: Mapping[str, Any], data: SplitData, ctx: TrainContext,
        epochs: Sequence[int],
    ) -> Mapping[int, tuple[np.ndarray, np.ndarray]]:
        """epoch -> (validation logits, test logits) of one training stopped at each epoch."""
        ...


@runtime_checkable
class ModelKeepingTrainer(Protocol):
    """Optional for a trainer whose trained model is a compact and exact record of every
    epoch's logits (boosted trees: round r's logits are the sum of the first r rounds' trees).

    Why: a stopping metric registered after a study was trained needs every epoch's validation
    logits (``tabbench restop``, :mod:`tabbench.study.restop`). Networks have them kept as arrays;
    for a model whose trees are smaller than n_val x K x epochs floats the train job keeps
    :meth:`kept_model` instead (bounded by ``restop_max_mb``), and the logits come back from
    it in one prediction pass, equal to those :meth:`Trainer.train` yielded (tested bit for
    bit for XGBoost and LightGBM)."""

    def kept_model(self) -> bytes:
        """The model the last :meth:`Trainer.train` trained, serialised and compressed, with
        whatever :meth:`kept_val_logits` needs besides the data."""
        ...

    def kept_model_bound(self, params: Mapping[str, Any], data: SplitData, n_epochs: int
                         ) -> int:
        """An upper estimate of :meth:`kept_model`'s size in bytes for ``params`` trained for
        ``n_epochs`` on ``data``: the disk estimate a job logs before it trains."""
        ...

    def kept_val_logits(self, model: bytes, data: SplitData, ctx: TrainContext
                        ) -> Iterator[tuple[int, np.ndarray]]:
        """(first epoch, validation logits (E, N_val, K) float32) chunks of every epoch
        1..``ctx.n_epochs`` of a :meth:`kept_model`, in order."""
        ...
