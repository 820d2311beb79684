"""Run-wide trainer options: settings from the config that hold for every config of a job.

Unlike a config's params (the search space, stored with every record), these are deliberate
deviations a user may switch (docs/deviations.md), passed as ``get_trainer(name, **options)``.
This module is free of PyTorch so that the CLI and the workflow can read the defaults and check
values before any job imports a model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from numbers import Integral
from typing import Any

#: The MLP one-hot encodes at most this many (most frequent) train levels per categorical
#: (config key ``mlp_max_one_hot_levels``; why: :mod:`tabbench.models.mlp`).
MLP_MAX_ONE_HOT_LEVELS = 1000


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


#: model -> option -> (default, validator). A model missing here takes no option.
TRAINER_OPTIONS: dict[str, dict[str, tuple[Any, Callable[[Any], Any]]]] = {
    "mlp": {"max_one_hot_levels": (MLP_MAX_ONE_HOT_LEVELS, check_max_one_hot_levels)},
}


def resolve_trainer_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` of ``model`` checked, with the defaults filled in; a clear error for an option
    the model does not take (e.g. the MLP's one-hot cap given to XGBoost) or a bad value."""
    known = TRAINER_OPTIONS.get(model, {})
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(
            f"model {model!r} takes no trainer option {unknown}; "
            f"it takes {sorted(known) or 'none'}"
        )
    out = {name: default for name, (default, _) in known.items()}
    out.update({name: known[name][1](value) for name, value in options.items()})
    return out


def non_default_options(model: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The resolved options of ``model`` that differ from their defaults (sorted by name)."""
    known = TRAINER_OPTIONS.get(model, {})
    resolved = resolve_trainer_options(model, options)
    return {k: v for k, v in sorted(resolved.items()) if v != known[k][0]}
