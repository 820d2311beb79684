"""Deterministic, order-independent sampling of hyperparameter configs.

Config 0 is the model's default; config ``i >= 1`` is one draw of optuna's ``RandomSampler``
seeded by :func:`stable_seed` of ``(seed, dataset, split, model, i)``. The seed is a SHA-256 of
those values (Python's ``hash()`` is salted per process, so it would not be reproducible), which
makes config ``i`` the same whether it is sampled first, last or alone.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import optuna

from tabbench.models.registry import get_search_space


def get_space(model: str) -> Any:
    """The search space of ``model`` (``DEFAULT_CONFIG``, ``suggest``), as its registration
    (:class:`tabbench.models.registry.ModelSpec`) names it; imported on first use."""
    return get_search_space(model)


def stable_seed(*parts: Any) -> int:
    """A seed in ``[0, 2**31)`` that depends only on ``parts`` (their JSON), in any process."""
    blob = json.dumps(list(parts), separators=(",", ":"), sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:8], "big") % (2**31)


def sample_config(
    model: str, config_id: int, *, seed: int, dataset: str, split: int
) -> dict[str, Any]:
    """Hyperparameters of config ``config_id`` of ``model`` on (``dataset``, ``split``).

    ``config_id == 0`` is ``DEFAULT_CONFIG``; ids ``>= 1`` are random draws of ``suggest``.
    The returned dict is JSON-serialisable (it is stored in the records' ``params`` column).
    """
    if not isinstance(config_id, int) or config_id < 0:
        raise ValueError(f"config_id must be a non-negative int, got {config_id!r}")
    space = get_space(model)
    if config_id == 0:
        return dict(space.DEFAULT_CONFIG)
    sampler = optuna.samplers.RandomSampler(
        seed=stable_seed(int(seed), str(dataset), int(split), str(model), int(config_id))
    )
    # An in-memory study only to obtain a Trial; optuna's INFO line per study is noise here.
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(sampler=sampler)
    finally:
        optuna.logging.set_verbosity(verbosity)
    return dict(space.suggest(study.ask()))
