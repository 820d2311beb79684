"""RealMLP search space (docs/design.md §5; paper Table G.2, i.e. pytabkit's ``probclass`` space).

Default (config 0): RealMLP-TD without label smoothing. Tuned draws:

=====================  ==========================================================
numerical embedding    {none, PBLD, PL, PLR}, uniform
front scale            {yes 0.6, no 0.4}
lr                     LogU[2e-2, 3e-1]
dropout                {0: 0.3, 0.15: 0.5, 0.3: 0.2}
activation             {ReLU, SELU, Mish}, uniform
hidden sizes           {[256]×3: 0.6, [64]×5: 0.2, [512]: 0.2}
weight decay           {0, 2e-3, 2e-2}, uniform
emb. init std (σ)      LogU[0.05, 0.5]
label smoothing ε      {0, 0.1}, uniform
=====================  ==========================================================

Weighted choices: optuna's categorical distributions are uniform, so a choice with weights
``w_1..w_m`` is drawn as ``u = suggest_float(name + "_u", 0, 1)`` and mapped to the first option
``i`` with ``u < w_1 + … + w_i`` (inverse-CDF sampling). Under optuna's ``RandomSampler`` this
picks option i with probability exactly ``w_i``; the trial records ``u``, the returned config the
option. Every returned config holds all keys of ``DEFAULT_CONFIG`` so the stored ``params``
describe a run completely.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import optuna

from tabbench.models.realmlp.config import RealMLPConfig

DEFAULT_CONFIG: dict[str, Any] = RealMLPConfig().to_params()

_HIDDEN_SIZES = ([256, 256, 256], [64] * 5, [512])


def suggest(trial: optuna.Trial) -> dict[str, Any]:
    """One draw of the RealMLP HPO space (Table G.2); other keys stay at the default."""
    return {
        **DEFAULT_CONFIG,
        "num_emb_type": trial.suggest_categorical("num_emb_type", ["none", "pbld", "pl", "plr"]),
        "add_front_scale": _weighted_choice(trial, "add_front_scale", [True, False], [0.6, 0.4]),
        "lr": trial.suggest_float("lr", 2e-2, 3e-1, log=True),
        "p_drop": _weighted_choice(trial, "p_drop", [0.0, 0.15, 0.3], [0.3, 0.5, 0.2]),
        "act": trial.suggest_categorical("act", ["relu", "selu", "mish"]),
        "hidden_sizes": list(
            _weighted_choice(trial, "hidden_sizes", _HIDDEN_SIZES, [0.6, 0.2, 0.2])
        ),
        "wd": trial.suggest_categorical("wd", [0.0, 2e-3, 2e-2]),
        "plr_sigma": trial.suggest_float("plr_sigma", 0.05, 0.5, log=True),
        "ls_eps": trial.suggest_categorical("ls_eps", [0.0, 0.1]),
    }


def _weighted_choice(
    trial: optuna.Trial, name: str, options: Sequence[Any], weights: Sequence[float]
) -> Any:
    """Inverse-CDF draw of one of ``options`` with probabilities ``weights`` (see module doc)."""
    u = trial.suggest_float(f"{name}_u", 0.0, 1.0)
    return _pick(u, options, weights)


def _pick(u: float, options: Sequence[Any], weights: Sequence[float]) -> Any:
    """The first option whose cumulative weight exceeds ``u`` (u ∈ [0, 1])."""
    if len(options) != len(weights) or not options:
        raise ValueError("options and weights must be non-empty and of equal length")
    if abs(sum(weights) - 1.0) > 1e-9 or min(weights) < 0:
        raise ValueError(f"weights must be non-negative and sum to 1, got {list(weights)}")
    for option, cum in zip(options, itertools.accumulate(weights), strict=True):
        if u < cum:
            return option
    return options[-1]  # u == 1.0 (or rounding of the last cumulative weight)
