"""Presets: one config key (``preset``) that sets the scale of a run.

A preset only supplies *defaults*: every key that ``config.yaml`` leaves as ``null`` takes the
preset's value, and any key given explicitly (in the file or with ``--config key=value``) wins.
Nothing scale-related is hard-coded anywhere else.

- ``paper``: the full study of DESIGN.md (Ye et al. suite, 5 splits, default + 30 configs,
  paper epochs).
- ``demo``: the bundled datasets (read from ``data/demo`` only, so it never waits on OpenML and
  is the same data on every machine), scaled to finish in about 15 minutes on 2 cores.
- ``smoke``: 2 bundled datasets, 1 split, 2 configs, a few epochs — seconds; for tests.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

PAPER_EPOCHS = {"xgboost_default": 100, "xgboost_tuned": 1000, "mlp": 256, "realmlp": 256}

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "suite": "ye2024",
        "sources": ["talent", "openml", "bundled"],
        "models": ["xgboost", "mlp", "realmlp"],
        "n_splits": 5,
        "n_configs": 30,
        "max_rows": 100_000,
        "figures_large_rows": 10_000,
        "epochs": dict(PAPER_EPOCHS),
    },
    "demo": {
        "suite": "demo",
        "sources": ["bundled"],
        "models": ["xgboost", "mlp", "realmlp"],
        "n_splits": 2,
        "n_configs": 2,
        "max_rows": 3_000,
        # every dataset is capped at 3,000 rows here, so "large" = those that reach the cap
        "figures_large_rows": 3_000,
        "epochs": {"xgboost_default": 100, "xgboost_tuned": 200, "mlp": 24, "realmlp": 24},
    },
    "smoke": {
        "suite": ["segment", "kc1"],
        "sources": ["bundled"],
        "models": ["xgboost", "mlp"],
        "n_splits": 1,
        "n_configs": 1,
        "max_rows": 1_500,
        "figures_large_rows": 1_500,
        "epochs": {"xgboost_default": 10, "xgboost_tuned": 10, "mlp": 3, "realmlp": 3},
    },
}

#: keys a preset may fill in; ``null`` in config.yaml means "take the preset's value".
PRESET_KEYS = (
    "suite",
    "sources",
    "models",
    "n_splits",
    "n_configs",
    "max_rows",
    "figures_large_rows",
    "epochs",
)


#: YAML's null spellings (and Python's, as Snakemake renders None) in a ``--config`` value
_NULL_SPELLINGS = frozenset({"null", "Null", "NULL", "~", "None"})


def coerce_cli_strings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Undo Snakemake's string parsing of ``--config`` values (nested ones, and null).

    ``--config epochs='{mlp: 8}'`` reaches the workflow as ``{"mlp": "8"}`` (Snakemake reads
    nested values with YAML's BaseLoader), which the schema would rightly reject as a string.
    Integer strings under ``epochs`` become ints and ``null``/``None``/empty become None. A
    top-level ``key=null`` arrives as the string ``"null"`` for the same reason (only ``key=``
    gives None), so a top-level null spelling becomes None too: ``--config
    mlp_max_one_hot_levels=null`` means null, as in config.yaml. Nothing else is touched, so a
    genuinely wrong value still fails validation with the key's name.
    """
    out = {
        key: None if isinstance(value, str) and value.strip() in _NULL_SPELLINGS else value
        for key, value in config.items()
    }
    epochs = out.get("epochs")
    if isinstance(epochs, Mapping):
        fixed = {}
        for key, value in epochs.items():
            if isinstance(value, str):
                text = value.strip()
                if text.lstrip("+-").isdigit():
                    value = int(text)
                elif text.lower() in {"null", "none", "~", ""}:
                    value = None
            fixed[key] = value
        out["epochs"] = fixed
    return out


def resolve_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``config`` with every ``null`` preset key filled from the preset.

    ``epochs`` is merged key by key, so ``--config epochs='{mlp: 8}'`` changes only the MLP.
    """
    name = config.get("preset") or "paper"
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {sorted(PRESETS)}")
    preset = PRESETS[name]
    out = copy.deepcopy(dict(config))
    out["preset"] = name
    for key in PRESET_KEYS:
        if key == "epochs":
            merged = dict(preset["epochs"])
            merged.update({k: v for k, v in (out.get("epochs") or {}).items() if v is not None})
            out["epochs"] = merged
        elif out.get(key) is None:
            out[key] = copy.deepcopy(preset[key])
    return out
