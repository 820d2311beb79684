"""What a training or replay job is given, as a few typed objects instead of a long list of
arguments: what to train (:class:`TrainTarget`), its files (:class:`JobFiles`), the hardware it
trains on (:class:`Hardware`, with :class:`GpuClaim`) and what it keeps besides its records
(:class:`Keeping`). Their defaults are the settings table's (:mod:`tabbench.settings.table`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from tabbench.core.gpu import acquire_device
from tabbench.settings.table import default

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class TrainTarget:
    """Configs ``0..n_configs`` of ``model`` (0 = default, the rest random draws of its search
    space) on one split of one dataset, each trained its number of ``epochs`` (by epochs key)
    from ``seed``; ``trainer_options`` are the model's run-wide options
    (:class:`tabbench.models.registry.TrainerOption`), ``members`` its training path (config
    ``network_members``: None/``"auto"`` the device's default, 1 one config at a time, K stacked
    groups of at most K)."""

    model: str
    dataset: str
    split: int
    n_configs: int
    epochs: Mapping[str, int]
    seed: int
    trainer_options: Mapping[str, Any] = field(default_factory=dict)
    members: int | str | None = None

    def __post_init__(self) -> None:
        if self.n_configs < 0:  # range(n_configs + 1) would train nothing and record nothing
            raise ValueError(f"{self.tag}: n_configs must be >= 0, got {self.n_configs}")

    @property
    def tag(self) -> str:
        """How the job's log lines name it."""
        return f"{self.model}/{self.dataset}/split{self.split}"


@dataclass(frozen=True)
class JobFiles:
    """A job's inputs (the processed dataset and its splits) and its output (a runs file for a
    train job, a replay file for a replay)."""

    processed: PathLike
    splits: PathLike
    out: PathLike


@dataclass(frozen=True)
class GpuClaim:
    """How a network job gets a GPU under device ``cuda`` (:mod:`tabbench.core.gpu`): fall back to
    the CPU without CUDA or fail; where the lock files are; how long to wait for a free slot;
    how many jobs share one GPU."""

    allow_cpu_fallback: bool = default("allow_cpu_fallback")
    lock_dir: PathLike | None = None
    timeout_s: float = default("gpu_claim_timeout")
    jobs_per_device: int = default("gpu_jobs_per_device")


@dataclass(frozen=True)
class Hardware:
    """Where a job trains: ``device`` (cpu, cuda or cuda:<i>; a model that is not a network
    always trains on the CPU), ``threads``, how a GPU is claimed, and the device memory a
    stacked group may use (config ``network_memory_gb``)."""

    device: str = default("device")
    threads: int = default("train_threads")
    gpu: GpuClaim = field(default_factory=GpuClaim)
    memory_gb: float = default("network_memory_gb")

    @contextlib.contextmanager
    def acquire(self, network: bool) -> Iterator[str]:
        """The device to train on, held for the block: a network's claimed or pinned GPU
        (:func:`tabbench.core.gpu.acquire_device`), else the CPU."""
        if not network:
            yield "cpu"
            return
        with acquire_device(self.device, self.gpu.allow_cpu_fallback, self.gpu.lock_dir,
                            self.gpu.timeout_s, self.gpu.jobs_per_device) as device:
            yield device


@dataclass(frozen=True)
class Keeping:
    """What a train job keeps besides its records: what re-stopping needs (config
    ``keep_for_restop``, at most ``restop_max_mb``), and whether a resumed job trains its
    recorded failures again (config ``retry_failed``) instead of keeping them."""

    for_restop: bool = default("keep_for_restop")
    restop_max_mb: float = default("restop_max_mb")
    retry_failed: bool = default("retry_failed")
