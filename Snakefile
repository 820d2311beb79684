# tabbench: Snakemake entry point. Rules are thin: they call the `tabbench` CLI with paths and
# parameters; all logic lives in src/tabbench (which knows nothing of Snakemake).
from snakemake.utils import min_version

min_version("8.10")


configfile: "config.yaml"


# Validates the config (workflow/schemas/config.schema.yaml; short errors naming the key) and
# settles it against the results folder's run_config.yaml: see workflow/rules/common.smk.
include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/train.smk"
include: "workflow/rules/select.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/diagnostics.smk"
include: "workflow/rules/restop.smk"
# last: its pattern is built from the other rules' outputs
include: "workflow/rules/targets.smk"


# Short bookkeeping rules run where Snakemake runs (on a cluster: not through the SLURM queue).
localrules:
    all,
    data,
    collect_datasets,
    regenerate,
    figures,
    report,
    replay,
    diagnostics,
    unmade_target,


rule all:
    default_target: True
    input:
        all_targets,
