# Helpers of workflow/rules/train.smk (kept apart from the rules, as Snakemake's linter asks).
import shlex

from tabbench.kept import DEFAULT_MAX_MB
from tabbench.models.registry import get_model, is_network, model_names
from tabbench.models.stacked.plan import (
    DEFAULT_MEMORY_GB,
    STACKED,
    device_type,
    parse_members,
    training_path,
)
from tabbench.presets import n_configs_for

# the train rule's model wildcard: the registered models only
MODEL_PATTERN = "|".join(sorted(model_names()))


def train_input(wildcards):
    """The processed data and splits of the job's dataset (one the configuration knows)."""
    check_dataset(wildcards.dataset, trained=True)
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


def train_gpu_flags(wildcards):
    """GPU-claim options (tabbench.gpu) of NN jobs under device: cuda; empty otherwise."""
    if CFG["device"] == "cpu" or not is_network(wildcards.model):
        return NotARerunTrigger("")
    lock_dir = CFG.get("gpu_lock_dir")
    return NotARerunTrigger(
        f" --allow-cpu-fallback {str(bool(CFG.get('allow_cpu_fallback'))).lower()}"
        + (f" --gpu-lock-dir {shlex.quote(str(lock_dir))}" if lock_dir else "")
        + f" --gpu-claim-timeout {CFG.get('gpu_claim_timeout', 3600)}"
        + f" --gpu-jobs-per-device {CFG.get('gpu_jobs_per_device', 1)}"
    )


def train_members_flag(wildcards):
    """`--members K|auto` of a network job on the stacked path (docs/design.md §15), else
    empty: part of the plain params, so switching a folder between stacked and one config at a
    time retrains its network jobs (the two paths agree within float rounding, not bit for
    bit), while the sequential path's command is what it was before stacking existed."""
    if not is_network(wildcards.model):
        return ""
    members = parse_members(CFG.get("network_members"))
    if training_path(train_device(wildcards), members, True) != STACKED:
        return ""
    return f" --members {'auto' if members is None else members}"


def train_network_flags(wildcards):
    """How much device memory a stacked group may use: not a rerun trigger, since it changes
    only how configs are grouped, never a member's records."""
    if not is_network(wildcards.model):
        return NotARerunTrigger("")
    memory = CFG.get("network_memory_gb", DEFAULT_MEMORY_GB)
    return NotARerunTrigger(f" --network-memory-gb {memory}")


def train_restop_flags(wildcards):
    """What a job keeps for re-stopping (keep_for_restop, restop_max_mb: tabbench.kept) and
    whether a resume retries recorded failures (retry_failed): not rerun triggers, since none
    changes a record, so changing them never retrains a finished job."""
    keep = str(bool(CFG.get("keep_for_restop", True))).lower()
    retry = str(bool(CFG.get("retry_failed", False))).lower()
    return NotARerunTrigger(
        f" --keep-for-restop {keep} --restop-max-mb {CFG.get('restop_max_mb', DEFAULT_MAX_MB)}"
        f" --retry-failed {retry}"
    )


def train_option_flags(wildcards):
    """The model's trainer options (tabbench.models.registry.TrainerOption) from their config
    keys <model>_<option> (e.g. mlp_max_one_hot_levels; null = none), or their defaults: plain
    params, so changing an option retrains that model's jobs, and only those. Empty for a model
    without options."""
    spec = get_model(wildcards.model)
    flags = ""
    for option in spec.options:
        value = CFG.get(option.config_key(spec.name), option.default)
        flags += f" {option.cli_flag(spec.name)} {option.cli_text(value)}"
    return flags


def train_plain_flags(wildcards):
    """The train command's flags that are rerun triggers: the trainer options and the training
    path (the replay takes the options only: it follows the path its runs file records).
    """
    return train_option_flags(wildcards) + train_members_flag(wildcards)


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
