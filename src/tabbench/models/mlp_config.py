"""The MLP's settings that must be known without PyTorch: its default hyperparameters (config 0,
which the search space :mod:`tabbench.search.mlp` starts from) and its one run-wide trainer
option, the one-hot cap (checked by the CLI and the workflow before any job imports torch).

Why the cap exists: :mod:`tabbench.models.mlp`, "high cardinality".
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Integral
from typing import Any

#: config 0 (docs/design.md §5): 3 hidden layers of 256, no dropout, AdamW lr 1e-3 constant, weight
#: decay 0, batch 256
DEFAULT_CONFIG: dict[str, Any] = {
    "lr": 1e-3,
    "dropout": 0.0,
    "weight_decay": 0.0,
    "n_hidden_layers": 3,
    "hidden_width": 256,
    "batch_size": 256,
}

#: The MLP one-hot encodes at most this many (most frequent) train levels per categorical
#: (config key ``mlp_max_one_hot_levels``).
MAX_ONE_HOT_LEVELS = 1000


def complete_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` over the defaults; an error for a key the MLP does not know."""
    unknown = set(params) - set(DEFAULT_CONFIG)
    if unknown:
        raise ValueError(
            f"unknown MLP parameters {sorted(unknown)}; known {sorted(DEFAULT_CONFIG)}"
        )
    return {**DEFAULT_CONFIG, **params}


def check_max_one_hot_levels(value: Any) -> int | None:
    """The MLP's one-hot cap as an int ≥ 2, or None (no cap); a clear error otherwise. A cap of
    1 would keep a single level, which carries no information, so every categorical would be
    dropped without a word."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 2:
        raise ValueError(
            "max_one_hot_levels (config mlp_max_one_hot_levels) must be an integer >= 2 or "
            f"None (no cap), got {value!r}"
        )
    return int(value)
