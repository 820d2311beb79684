"""MLP search space (docs/design.md §5: Gorishniy et al.-style baseline and its HPO space).

Default: 3 hidden layers of 256, no dropout, AdamW lr 1e-3 constant, weight decay 0, batch 256.
Tuned configs draw lr LogU[1e-4, 1e-2], dropout {0, .1, .2, .3}, weight decay
{0, 1e-5, 1e-4, 1e-3}; the architecture and batch size stay at the default. Every config is
complete (all keys of ``DEFAULT_CONFIG``) so the stored ``params`` describe the run fully.
"""

from __future__ import annotations

from typing import Any

import optuna

from tabbench.models.mlp_config import DEFAULT_CONFIG


def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """One draw of the MLP HPO space (the rest stays at the default)."""
    return {
        **DEFAULT_CONFIG,
        "lr": trial.suggest_float("lr", 1e-4, 1e-2, log=True),
        "dropout": trial.suggest_categorical("dropout", [0.0, 0.1, 0.2, 0.3]),
        "weight_decay": trial.suggest_categorical("weight_decay", [0.0, 1e-5, 1e-4, 1e-3]),
    }
