"""The search space of ``toymodel``: config 0 is :data:`DEFAULT_CONFIG`, configs >= 1 are
drawn by :func:`suggest` from an Optuna trial that tabbench seeds per (dataset, split, config),
so a config is reproducible without storing it."""

from __future__ import annotations

from typing import Any

DEFAULT_CONFIG: dict[str, Any] = {"strength": 0.5}


def suggest(trial: Any) -> dict[str, Any]:
    """One tuned config."""
    return {"strength": trial.suggest_float("strength", 0.1, 2.0)}
