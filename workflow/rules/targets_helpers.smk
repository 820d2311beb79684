# The catch-all's pattern (tabbench.jobs.targets), built from the output patterns of the rules
# that write into the results folder: included after every other rule file.
from tabbench.jobs.targets import refuse_unmade, unmade_in_results

UNMADE_PATTERN = unmade_in_results(
    RESULTS,
    [RESULTS_LAYOUT.runs("{model}", "{dataset}", "{split}")]
    + [RESULTS_LAYOUT.failures("{model}", "{dataset}", "{split}")],
    RESULTS_LAYOUT.selected("{model}", "{dataset}"),
    [REPLAY_NPZ, REPLAY_SIDECAR],
    [*REGENERATE_FILES, RESULTS_LAYOUT.report],
    MODEL_PATTERN,
)


def unmade_target_input(wildcards):
    return refuse_unmade(wildcards.target, requested_targets(), RESULTS, DATA)
