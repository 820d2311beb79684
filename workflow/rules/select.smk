# Selection (docs/design.md §7): per (model, dataset), the best epoch of every config and the best
# config (tuned) or config 0 (default), for every stopping metric, from the per-epoch records of
# all splits (tabbench.summary.select, `tabbench select`). What a job is given:
# tabbench.jobs.train (TRAIN_JOBS, train_helpers.smk).
TARGET_FUNCTIONS.append(study_selected)


rule select:
    input:
        runs=select_input,
    output:
        # a selection that fails (a damaged runs file) keeps the last one (common.smk)
        kept_on_failure(RESULTS_LAYOUT.selected("{model}", "{dataset}")),
    log:
        RESULTS_LAYOUT.log("select", "{model}", "{dataset}"),
    wildcard_constraints:
        model="[^/]+",
        dataset="[^/]+",
    conda:
        "../../environment.yml"
    params:
        # the tie rule and this model's patiences: rerun triggers (other epochs are selected;
        # neither is a train param, so no training reruns)
        **TRAIN_JOBS.select_params(),
    shell:
        "tabbench select --runs {input.runs:q} --out {output:q} --epoch-ties {params.ties}"
        " --patience {params.patience} > {log:q} 2>&1"
