# Training: one job per (model, dataset, split) runs every config (0 = default, 1..n_configs =
# random draws) and records every epoch -> results/runs/{model}/{dataset}/split{split}.parquet
# plus the failures sidecar. A killed job resumes from <output>.part/ (finished configs kept).
# What a job is given: tabbench.jobs.train (TRAIN_JOBS); paths: tabbench.core.layout. A
# figures/report invocation never trains (its one job takes the runs files as they are).


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
        gpu=TRAIN_JOBS.gpus,
    params:
        # the flags of the settings that change the records are rerun triggers, the others
        # not (NotARerunTrigger), as the settings table classifies them (tabbench.jobs.triggers)
        **TRAIN_JOBS.train_params(),
    shell:
        "tabbench train --model {wildcards.model} --dataset {wildcards.dataset:q}"
        " --split {wildcards.split} --processed {input.processed:q} --splits {input.splits:q}"
        " --out {output.runs:q} --n-configs {params.n_configs} --epochs {params.epochs}"
        " --seed {params.seed} --threads {threads} --device {params.device}"
        "{params.record_flags}{params.run_flags} > {log:q} 2>&1"
