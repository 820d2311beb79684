"""Every rule's params against the settings table: changing a setting changes what Snakemake
records of a job (the builtin-typed params; a NotARerunTrigger is not recorded) exactly where
the table makes it a trigger of that rule, and the job's command takes every value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tabbench.jobs.data import DataJobs
from tabbench.jobs.drawing import DrawingJobs
from tabbench.jobs.train import TrainJobs
from tabbench.jobs.triggers import (
    TRIGGERING_EFFECTS,
    NotARerunTrigger,
    classified,
    flag,
    is_trigger,
    split_flags,
)
from tabbench.settings.table import Effect, all_settings

DEMO = str(Path(__file__).resolve().parents[2] / "data" / "demo")

#: another valid value of every setting a rule's params carry
OTHER: Mapping[str, Any] = {
    "sources": ["openml", "bundled"], "talent_dir": "/talent", "openml_cache_dir": "/oc",
    "openml_timeout": 5, "openml_retries": 1, "pypi_cache_dir": "/pc", "pypi_timeout": 7,
    "pypi_retries": 9, "on_checksum_mismatch": "skip", "max_rows": 777, "min_rows": 10,
    "max_classes": 5, "all_nan_columns": "drop_rows", "leakage": "report", "n_splits": 3,
    "seed": 3, "stratify": True, "split_by_groups": True, "n_configs": 7,
    "epochs": {"mlp": 9, "xgboost_default": 8}, "device": "cuda", "network_members": 4,
    "network_memory_gb": 2, "allow_cpu_fallback": True, "gpu_lock_dir": "/locks",
    "gpu_claim_timeout": 9, "gpu_jobs_per_device": 2, "keep_for_restop": False,
    "restop_max_mb": 7, "retry_failed": True, "epoch_ties": "last", "patience": [5],
    "figures_large_rows": 5, "rope_percent": 2.0, "replay_rtol": 1e-3,
    "mlp_max_one_hot_levels": 5, "train_threads": 3,
}


def _rules(config: dict[str, Any]) -> dict[str, Callable[[str], dict[str, Any]]]:
    """rule -> params of one of its jobs (of ``model``), callables evaluated."""
    data = DataJobs(config, DEMO, config["results_dir"], None)
    train = TrainJobs(config, None)

    def evaluated(params: dict[str, Any], model: str) -> dict[str, Any]:
        w = SimpleNamespace(model=model, dataset="segment", split="0")
        return {k: v(w) if callable(v) else v for k, v in params.items()}

    return {
        "fetch_dataset": lambda m: data.fetch_params(),
        "filter_dataset": lambda m: data.filter_params(),
        "split_dataset": lambda m: data.split_params(),
        "train": lambda m: evaluated(train.train_params(), m),
        "select": lambda m: evaluated(train.select_params(), m),
        "replay_split": lambda m: evaluated(train.replay_params(), m),
        "regenerate": lambda m: {"command": DrawingJobs(config).command()},
    }


def _recorded(params: Mapping[str, Any]) -> list[str]:
    """What Snakemake records of a job's params (its params rerun trigger)."""
    return sorted(repr(v) for v in params.values() if not isinstance(v, NotARerunTrigger))


def _text(params: Mapping[str, Any]) -> str:
    """What the job's command is given."""
    return " ".join(str(v) for v in params.values())


def test_every_rule_is_classified_and_run_settings_trigger_none(config):
    assert set(TRIGGERING_EFFECTS) == set(_rules(config))
    assert all(Effect.RUN not in effects for effects in TRIGGERING_EFFECTS.values())


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("model", ["mlp", "xgboost"])
def test_each_rules_params_trigger_exactly_as_the_table_says(settled, device, model):
    base = settled(device=device)
    taken: dict[str, set[str]] = {rule: set() for rule in TRIGGERING_EFFECTS}
    before = {rule: fn(model) for rule, fn in _rules(base).items()}
    for key, other in OTHER.items():
        if key == "device" and device == "cuda":
            other = "cpu"
        changed = settled(**{**base, key: other})
        for rule, fn in _rules(changed).items():
            after = fn(model)
            if _text(after) == _text(before[rule]):
                continue
            taken[rule].add(key)
            triggers = is_trigger(rule, key, base[key]) or is_trigger(rule, key, other)
            assert (_recorded(after) != _recorded(before[rule])) == triggers, (rule, key)
    # the check is not vacuous: the rules take their settings, both kinds where they have both
    assert {"openml_timeout", "pypi_timeout", "sources"} <= taken["fetch_dataset"]
    assert {"leakage", "min_rows"} <= taken["filter_dataset"]
    assert {"split_by_groups", "seed"} <= taken["split_dataset"]
    assert {"seed", "restop_max_mb", "epochs"} <= taken["train"]
    assert {"epoch_ties", "patience"} <= taken["select"]
    assert {"seed", "epoch_ties", "replay_rtol"} <= taken["replay_split"]
    assert {"rope_percent", "patience"} <= taken["regenerate"]
    if model == "mlp":
        assert {"mlp_max_one_hot_levels", "network_members"} <= taken["train"]
        if device == "cuda":
            assert {"gpu_claim_timeout", "network_memory_gb"} <= taken["train"]


def test_the_table_classifies_the_data_rules_settings():
    """Study settings trigger the data rules, run settings never (source pypi's download
    settings), and an untracked value (the default leakage check) is no trigger."""
    settings = all_settings()
    assert is_trigger("fetch_dataset", "openml_timeout", 10)
    assert not is_trigger("fetch_dataset", "pypi_timeout", 30)
    assert not is_trigger("filter_dataset", "leakage", "drop")
    assert is_trigger("filter_dataset", "leakage", "report")
    assert not is_trigger("split_dataset", "split_by_groups", False)
    assert is_trigger("split_dataset", "split_by_groups", True)
    assert not is_trigger("replay_split", "seed", 0)
    assert settings["seed"].effect is Effect.STUDY


def test_classified_and_split_flags(config):
    assert classified("train", 3, ("seed",), config) == 3
    assert classified("train", "x", ("train_threads",), config) == NotARerunTrigger("x")
    flags = {"seed": " --seed 0", "retry_failed": " --retry-failed false"}
    assert split_flags("train", flags, config) == (" --seed 0",
                                                  NotARerunTrigger(" --retry-failed false"))
    assert str(NotARerunTrigger("a b")) == "a b"


def test_flag_quotes_and_leaves_out_null():
    assert flag("gpu_lock_dir", None) == ""
    assert flag("gpu_lock_dir", "/a b") == " --gpu-lock-dir '/a b'"
    assert flag("retry_failed", True) == " --retry-failed true"
