# Training: one job per (model, dataset, split) runs every config (0 = default, 1..n_configs =
# random draws) and records every epoch -> results/runs/{model}/{dataset}/split{split}.parquet
# plus the failures sidecar. A killed job resumes from <output>.part/ (finished configs kept).
# Paths: tabbench.core.layout (RESULTS_LAYOUT). Needs from data.smk: processed_path(ds),
# splits_path(ds), kept_datasets(), check_dataset(ds). A figures/report invocation never trains
# (its one job takes the runs files as they are: report.smk).


include: "train_helpers.smk"


rule train:
    input:
        unpack(train_input),
    output:
        runs=RESULTS_LAYOUT.runs("{model}", "{dataset}", "{split}"),
        failures=RESULTS_LAYOUT.failures("{model}", "{dataset}", "{split}"),
    log:
        RESULTS_LAYOUT.log("train", "{model}", "{dataset}", "split{split}"),
    wildcard_constraints:
        model=MODEL_PATTERN,
        split=r"\d+",
    conda:
        "../../environment.yml"
    threads: CFG["train_threads"]
    resources:
        gpu=train_gpus,
    params:
        epochs=lambda w: train_epochs_arg(w.model),
        n_configs=lambda w: n_configs_for(CFG, w.model),
        seed=CFG["seed"],
        device=train_device,
        # the flags of the settings that change the records (trainer options, training
        # path): a rerun trigger (params); the others are not (NotARerunTrigger), as
        # tabbench.settings.table classifies them
        record_flags=train_trigger_flags,
        run_flags=train_run_flags,
    shell:
        "tabbench train --model {wildcards.model} --dataset {wildcards.dataset:q}"
        " --split {wildcards.split} --processed {input.processed:q} --splits {input.splits:q}"
        " --out {output.runs:q} --n-configs {params.n_configs} --epochs {params.epochs}"
        " --seed {params.seed} --threads {threads} --device {params.device}"
        "{params.record_flags}{params.run_flags} > {log:q} 2>&1"
