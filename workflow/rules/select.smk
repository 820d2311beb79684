# Selection (docs/design.md §7): per (model, dataset), the best epoch of every config and the best
# config (tuned) or config 0 (default), for every stopping metric, from the per-epoch records of
# all splits. Thin rule: the logic is tabbench.summary.select (`tabbench select`).
#
# `kept_datasets()` (the datasets that survive filtering) is defined by data.smk via a
# checkpoint; it is only called from target functions, never at parse time.


include: "select_helpers.smk"


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
        # config epoch_ties and this model's patiences (rerun triggers: another rule or
        # patience selects other epochs; neither is a train param, so no training reruns)
        ties=CFG["epoch_ties"],
        patience=select_patience,
    shell:
        "tabbench select --runs {input.runs:q} --out {output:q} --epoch-ties {params.ties}"
        " --patience {params.patience} > {log:q} 2>&1"
