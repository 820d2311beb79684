# Training: one job per (model, dataset, split) runs every config (0 = default, 1..n_configs =
# random draws) and records every epoch -> results/runs/{model}/{dataset}/split{split}.parquet
# plus the failures sidecar. A killed job resumes from <output>.part/ (finished configs kept).
# Needs from data.smk: processed_path(ds), splits_path(ds), kept_datasets().
import shlex

from tabbench.models.registry import NN_MODELS, TRAINERS, epochs_key


def train_epochs_arg(model):
    """Only the epochs keys this model uses, so changing another model's epochs does not rerun
    this model's jobs (Snakemake reruns a job when its params change)."""
    keys = sorted({epochs_key(model, 0), epochs_key(model, 1)})
    return " ".join(f"{k}={CFG['epochs'][k]}" for k in keys)


class NotARerunTrigger:
    """Shell text that Snakemake's params rerun trigger ignores: it records only params of
    builtin types, and how a GPU is claimed does not change the records, so a finished job must
    not retrain because e.g. gpu_claim_timeout changed."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def train_gpu_flags(wildcards):
    """GPU-claim options (tabbench.gpu) of NN jobs under device: cuda; empty otherwise."""
    if CFG["device"] == "cpu" or wildcards.model not in NN_MODELS:
        return NotARerunTrigger("")
    lock_dir = CFG.get("gpu_lock_dir")
    return NotARerunTrigger(
        f" --allow-cpu-fallback {str(bool(CFG.get('allow_cpu_fallback'))).lower()}"
        + (f" --gpu-lock-dir {shlex.quote(str(lock_dir))}" if lock_dir else "")
        + f" --gpu-claim-timeout {CFG.get('gpu_claim_timeout', 3600)}"
    )


def train_gpus(wildcards):
    return 1 if CFG["device"] == "cuda" and wildcards.model in NN_MODELS else 0


rule train:
    input:
        processed=lambda w: processed_path(w.dataset),
        splits=lambda w: splits_path(w.dataset),
    output:
        runs=f"{RESULTS}/runs/{{model}}/{{dataset}}/split{{split}}.parquet",
        failures=f"{RESULTS}/runs/{{model}}/{{dataset}}/split{{split}}.failures.json",
    log:
        "logs/train/{model}/{dataset}/split{split}.log",
    wildcard_constraints:
        model="|".join(sorted(TRAINERS)),
        split=r"\d+",
    params:
        epochs=lambda w: train_epochs_arg(w.model),
        n_configs=CFG["n_configs"],
        seed=CFG["seed"],
        device=lambda w: CFG["device"] if w.model in NN_MODELS else "cpu",
        gpu_flags=train_gpu_flags,
    threads: CFG["train_threads"]
    resources:
        gpu=train_gpus,
    shell:
        "tabbench train --model {wildcards.model} --dataset {wildcards.dataset:q}"
        " --split {wildcards.split} --processed {input.processed:q} --splits {input.splits:q}"
        " --out {output.runs:q} --n-configs {params.n_configs} --epochs {params.epochs}"
        " --seed {params.seed} --threads {threads} --device {params.device}{params.gpu_flags}"
        " 2> {log:q}"


def train_targets(wildcards):
    """Every run: models × kept datasets × splits."""
    return [
        f"{RESULTS}/runs/{model}/{ds}/split{split}.parquet"
        for model in CFG["models"]
        for ds in kept_datasets()
        for split in range(CFG["n_splits"])
    ]


TARGET_FUNCTIONS.append(train_targets)
