# Shared by every workflow file: the resolved configuration and the list of final targets.
# Each .smk file adds its own targets to TARGET_FUNCTIONS (an extension point), so the `all` target
# grows with the pipeline without editing the Snakefile.
from tabbench.presets import resolve_config

CFG = resolve_config(config)
DATA = CFG["data_dir"]
RESULTS = CFG["results_dir"]

# Functions (wildcards) -> list of paths; `all_targets` concatenates them.
TARGET_FUNCTIONS = []


def all_targets(wildcards):
    out = []
    for fn in TARGET_FUNCTIONS:
        out.extend(fn(wildcards))
    return out


# Functions (wildcards) -> list of figure files that the `figures` target (and so the HTML
# report) includes besides the paper's figures; e.g. diagnostics.smk adds its figures here.
FIGURE_FUNCTIONS = []


def extra_figures(wildcards):
    out = []
    for fn in FIGURE_FUNCTIONS:
        out.extend(fn(wildcards))
    return out
