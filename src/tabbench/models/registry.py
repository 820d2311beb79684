"""Model name -> trainer, and how many epochs each config trains.

Trainer classes are imported lazily (``"module:Class"``), so asking for XGBoost never imports
PyTorch, and a trainer that lives in a module not yet present fails only when it is asked for.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from tabbench.models.base import Trainer
from tabbench.models.options import resolve_trainer_options

TRAINERS: dict[str, str] = {
    "xgboost": "tabbench.models.xgboost:XGBoostTrainer",
    "mlp": "tabbench.models.mlp:MLPTrainer",
    "realmlp": "tabbench.models.realmlp:RealMLPTrainer",
}

#: Models trained with PyTorch: they use ``device`` and claim a GPU slot under ``device: cuda``.
NN_MODELS: frozenset[str] = frozenset({"mlp", "realmlp"})


def get_trainer(name: str, **options: Any) -> Trainer:
    """A fresh trainer instance for model ``name``, built with the run-wide ``options``
    (:data:`tabbench.models.options.TRAINER_OPTIONS`, checked; left out = the default)."""
    try:
        target = TRAINERS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known: {sorted(TRAINERS)}") from None
    checked = resolve_trainer_options(name, options)
    module_name, cls_name = target.split(":")
    return getattr(importlib.import_module(module_name), cls_name)(
        **{k: checked[k] for k in options}
    )


def epochs_key(model: str, config_id: int) -> str:
    """The ``epochs`` config key that sets how long ``config_id`` of ``model`` trains.

    XGBoost's default config trains 100 rounds and its tuned configs 1000 (paper App. G.5), so
    it has two keys; the networks train the same number of epochs for every config.
    """
    if model == "xgboost":
        return "xgboost_default" if config_id == 0 else "xgboost_tuned"
    if model not in TRAINERS:
        raise ValueError(f"unknown model {model!r}; known: {sorted(TRAINERS)}")
    return model


def n_epochs_for(model: str, config_id: int, epochs: Mapping[str, int]) -> int:
    """Epochs (rounds) for ``config_id`` of ``model`` from the resolved ``epochs`` config."""
    key = epochs_key(model, config_id)
    if key not in epochs or epochs[key] is None:
        raise ValueError(f"epochs.{key} is not set (have {dict(epochs)})")
    n = int(epochs[key])
    if n < 1:
        raise ValueError(f"epochs.{key} must be >= 1, got {n}")
    return n
