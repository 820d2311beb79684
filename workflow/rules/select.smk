# Selection (DESIGN.md §7): per (model, dataset), the best epoch of every config and the best
# config (tuned) or config 0 (default), for every stopping metric, from the per-epoch records of
# all splits. Thin rule: the logic is tabbench.select (`tabbench select`).
#
# `kept_datasets()` (the datasets that survive filtering) is defined by data.smk via a
# checkpoint; it is only called from target functions, never at parse time.


def runs_of(model, dataset):
    """Per-epoch record files of every split of one (model, dataset)."""
    return [
        f"{RESULTS}/runs/{model}/{dataset}/split{i}.parquet" for i in range(CFG["n_splits"])
    ]


def selected_path(model, dataset):
    return f"{RESULTS}/selected/{model}/{dataset}.parquet"


def study_selected(wildcards=None):
    """Every selected file of the configured study: each model × each kept dataset."""
    return [selected_path(m, d) for m in CFG["models"] for d in kept_datasets()]


rule select:
    input:
        runs=lambda w: runs_of(w.model, w.dataset),
    output:
        f"{RESULTS}/selected/{{model}}/{{dataset}}.parquet",
    wildcard_constraints:
        model="[^/]+",
        dataset="[^/]+",
    log:
        f"{RESULTS}/logs/select/{{model}}/{{dataset}}.log",
    shell:
        "tabbench select --runs {input.runs:q} --out {output:q} > {log:q} 2>&1"


TARGET_FUNCTIONS.append(study_selected)
