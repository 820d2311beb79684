# Helpers of workflow/rules/select.smk (kept apart from the rules, as Snakemake's linter asks).
# Paths: tabbench.core.layout (RESULTS_LAYOUT).
from tabbench.summary.stopping_rules import patiences_for


def select_input(wildcards):
    """The runs files of every configured split of one (model, dataset) of the study
    (check_study_model, train_helpers.smk; check_dataset)."""
    check_study_model(wildcards.model)
    check_dataset(wildcards.dataset, trained=True, study=True)
    return [
        RESULTS_LAYOUT.runs(wildcards.model, wildcards.dataset, i)
        for i in range(CFG["n_splits"])
    ]


def study_selected(wildcards=None):
    """Every selected file of the configured study: each model × each kept dataset."""
    return [
        RESULTS_LAYOUT.selected(m, d) for m in CFG["models"] for d in kept_datasets()
    ]


TARGET_FUNCTIONS.append(study_selected)


def select_patience(wildcards):
    """This model's patiences under config patience (tabbench.summary.stopping_rules.patiences_for),
    as the words after `--patience` (none: the whole-run rule only)."""
    return " ".join(map(str, patiences_for(CFG.get("patience"), wildcards.model)))
