# Helpers of workflow/rules/select.smk (kept apart from the rules, as Snakemake's linter asks).
def runs_of(model, dataset):
    """Per-epoch record files of every split of one (model, dataset)."""
    return [
        f"{RESULTS}/runs/{model}/{dataset}/split{i}.parquet"
        for i in range(CFG["n_splits"])
    ]


def selected_path(model, dataset):
    return f"{RESULTS}/selected/{model}/{dataset}.parquet"


def study_selected(wildcards=None):
    """Every selected file of the configured study: each model × each kept dataset."""
    return [selected_path(m, d) for m in CFG["models"] for d in kept_datasets()]


TARGET_FUNCTIONS.append(study_selected)
