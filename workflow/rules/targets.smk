# A target under the results folder that no rule makes (a misspelt folder or model:
# `results/selectd/...`, `results/runs/xgbost/...`) ends in one tabbench line naming the path
# that was meant, while the DAG is built (targets_helpers.smk). The rule never runs a job.


include: "targets_helpers.smk"


rule unmade_target:
    input:
        unmade_target_input,
    output:
        f"{RESULTS}/{{target}}",
    wildcard_constraints:
        target=UNMADE_PATTERN,
