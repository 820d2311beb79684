# Helpers of workflow/rules/train.smk (kept apart from the rules, as Snakemake's linter asks).
import shlex
import sys

from tabbench.models.registry import get_model, is_network, model_names
from tabbench.models.stacked.plan import (
    STACKED,
    device_type,
    parse_members,
    training_path,
)
from tabbench.settings.presets import n_configs_for
from tabbench.settings.table import all_settings
from tabbench.study.targets import MODEL, not_in_study

# every setting with its CLI flag and whether it changes the records (the rerun policy)
ALL_SETTINGS = all_settings()
# how a network job claims a GPU under device cuda
GPU_CLAIM_KEYS = (
    "allow_cpu_fallback",
    "gpu_lock_dir",
    "gpu_claim_timeout",
    "gpu_jobs_per_device",
)

# the train rule's model wildcard: the registered models only
MODEL_PATTERN = "|".join(sorted(model_names()))


def check_study_model(model):
    """A runs or selected target of a model the folder's study does not declare (a typo
    included) stops the run while the DAG is built, in one line saying how to add it on
    purpose (tabbench.study.targets.not_in_study): its results would join the folder's
    figures and claims."""
    why = not_in_study(
        MODEL, model, CFG["models"], RESULTS, STUDY_SETTINGS_FILE, sorted(model_names())
    )
    if why is not None:
        sys.exit(f"tabbench: {why}")


def train_input(wildcards):
    """The processed data and splits of the job's dataset: one of the study's, for one of its
    models (check_study_model, check_dataset)."""
    check_study_model(wildcards.model)
    check_dataset(wildcards.dataset, trained=True, study=True)
    return {
        "processed": processed_path(wildcards.dataset),
        "splits": splits_path(wildcards.dataset),
    }


def train_epochs_arg(model):
    """Only the epochs keys this model uses, so changing another model's epochs does not rerun
    this model's jobs (Snakemake reruns a job when its params change)."""
    keys = sorted(set(get_model(model).epochs_keys))
    return " ".join(f"{k}={CFG['epochs'][k]}" for k in keys)


def train_device(wildcards):
    """The configured device for network jobs; XGBoost-like models always train on the CPU."""
    return CFG["device"] if is_network(wildcards.model) else "cpu"


def _flag(key, value):
    """` --flag value` of a config key for the train command (its flag in
    tabbench.settings.table); empty for null, which the command's default already means.
    """
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f" {ALL_SETTINGS[key].cli_flag} {shlex.quote(text)}"


def _option_flags(wildcards):
    """The model's trainer options (tabbench.models.registry.TrainerOption) from their config
    keys <model>_<option> (e.g. mlp_max_one_hot_levels; null = none), or their defaults, as
    config key -> flag text. Empty for a model without options."""
    spec = get_model(wildcards.model)
    flags = {}
    for option in spec.options:
        value = CFG[option.config_key(spec.name)]
        flags[option.config_key(spec.name)] = (
            f" {option.cli_flag(spec.name)} {option.cli_text(value)}"
        )
    return flags


def _members_flag(wildcards):
    """`--members K|auto` of a network job on the stacked path (docs/design.md §15), else
    empty: switching a folder between stacked and one config at a time retrains its network
    jobs (the two paths agree within float rounding, not bit for bit), while the sequential
    path's command is what it is without stacking."""
    if not is_network(wildcards.model):
        return ""
    members = parse_members(CFG["network_members"])
    if training_path(train_device(wildcards), members, True) != STACKED:
        return ""
    return f" --members {'auto' if members is None else members}"


def _train_flags(wildcards):
    """Config key -> flag text of every setting a train job takes besides its paths, seed,
    epochs, configs and device: the trainer options and the training path; how a GPU is
    claimed (network jobs under device cuda); a stacked group's memory budget (network jobs);
    what the job keeps for re-stopping and whether a resume retries recorded failures.
    """
    flags = {**_option_flags(wildcards), "network_members": _members_flag(wildcards)}
    network = is_network(wildcards.model)
    if network and CFG["device"] != "cpu":
        for key in GPU_CLAIM_KEYS:
            flags[key] = _flag(key, CFG[key])
    if network:
        flags["network_memory_gb"] = _flag(
            "network_memory_gb", CFG["network_memory_gb"]
        )
    for key in ("keep_for_restop", "restop_max_mb", "retry_failed"):
        flags[key] = _flag(key, CFG[key])
    return flags


def train_option_flags(wildcards):
    """The model's trainer-option flags (the replay rebuilds the same trainer)."""
    return "".join(_option_flags(wildcards).values())


def train_gpu_flags(wildcards):
    """GPU-claim flags (tabbench.core.gpu) of network jobs under device cuda; empty otherwise."""
    if CFG["device"] == "cpu" or not is_network(wildcards.model):
        return ""
    return "".join(_flag(key, CFG[key]) for key in GPU_CLAIM_KEYS)


def train_trigger_flags(wildcards):
    """The train command's flags of the settings that change its records
    (tabbench.settings.table: changes_records): plain params, so changing one retrains that
    model's jobs, and only those."""
    flags = _train_flags(wildcards)
    return "".join(t for k, t in flags.items() if ALL_SETTINGS[k].changes_records)


def train_run_flags(wildcards):
    """The train command's flags of the settings that never change a record: text that
    Snakemake's params rerun trigger ignores, so changing one retrains nothing."""
    flags = _train_flags(wildcards)
    return NotARerunTrigger(
        "".join(t for k, t in flags.items() if not ALL_SETTINGS[k].changes_records)
    )


def train_gpus(wildcards):
    """One `gpu` resource per network job on a GPU (claimed, or pinned with cuda:<i>)."""
    return (
        1 if device_type(CFG["device"]) == "cuda" and is_network(wildcards.model) else 0
    )


def train_targets(wildcards):
    """Every run: models × kept datasets × splits."""
    return [
        RESULTS_LAYOUT.runs(model, ds, split)
        for model in CFG["models"]
        for ds in kept_datasets()
        for split in range(CFG["n_splits"])
    ]


TARGET_FUNCTIONS.append(train_targets)
