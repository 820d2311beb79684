# Helpers of workflow/rules/select.smk (kept apart from the rules, as Snakemake's linter asks).
# Paths: tabbench.layout (RESULTS_LAYOUT).
def runs_of(model, dataset):
    """Per-epoch record files of every split of one (model, dataset): the configured splits,
    or under a figures/report target the folder's own (report_helpers.smk, cache_n_splits).
    """
    n = cache_n_splits() if reads_cache_only() else CFG["n_splits"]
    return [RESULTS_LAYOUT.runs(model, dataset, i) for i in range(n)]


def select_input(wildcards):
    """Under a figures/report target the pairs come from the folder itself (complete results,
    whatever their dataset); otherwise the dataset must be one the configuration knows.
    """
    if not reads_cache_only():
        check_dataset(wildcards.dataset)
    return runs_of(wildcards.model, wildcards.dataset)


def selected_path(model, dataset):
    return RESULTS_LAYOUT.selected(model, dataset)


def study_selected(wildcards=None):
    """Every selected file of the configured study: each model × each kept dataset."""
    return [selected_path(m, d) for m in CFG["models"] for d in kept_datasets()]


TARGET_FUNCTIONS.append(study_selected)
