# Helpers of workflow/rules/targets.smk (kept apart from the rules, as Snakemake's linter asks).
# Included after every other rule file, since the catch-all's pattern is built from the output
# patterns of the rules that write into the results folder.
from tabbench.study.targets import (
    SPLIT_PATTERN,
    pattern_regex,
    unmade_pattern,
    unmade_target,
)

# the outputs of the rules under the results folder, as regular expressions (with the
# constraints of their wildcards, or Snakemake's `.+` where none is set)
MADE_IN_RESULTS = [
    *(
        pattern_regex(p, {"model": MODEL_PATTERN, "split": SPLIT_PATTERN})
        for p in (
            RESULTS_LAYOUT.runs("{model}", "{dataset}", "{split}"),
            RESULTS_LAYOUT.failures("{model}", "{dataset}", "{split}"),
        )
    ),
    pattern_regex(
        RESULTS_LAYOUT.selected("{model}", "{dataset}"),
        {"model": "[^/]+", "dataset": "[^/]+"},
    ),
    *(
        pattern_regex(p, {"model": REPLAY_MODEL_PATTERN, "split": SPLIT_PATTERN})
        for p in (REPLAY_NPZ, REPLAY_SIDECAR)
    ),
    *(pattern_regex(p) for p in (*REGENERATE_FILES, RESULTS_LAYOUT.report)),
]
# the paths that none of them makes, the catch-all's wildcard: it is no candidate for any
# other path, so it costs the DAG nothing
UNMADE_PATTERN = unmade_pattern(RESULTS, MADE_IN_RESULTS)
# the targets that are names of rules
TARGET_RULES = (
    "figures",
    "report",
    "data",
    "replay",
    "diagnostics",
    "restop",
)


def unmade_target_input(wildcards):
    """A requested target under the results folder that nothing makes (a typo) stops the run
    while the DAG is built, in one line with the path that was meant, instead of Snakemake's
    message that it cannot produce it or an exception of several lines. A path that is not a
    target of this invocation (a file some job would read) is left to Snakemake, which drops
    this candidate for it."""
    path = f"{RESULTS}/{wildcards.target}"
    asked = {os.path.normpath(t) for t in requested_targets()}
    if os.path.normpath(path) not in asked or path.startswith(f"{DATA}/"):
        raise ValueError(f"{path} is made by no job")
    why = unmade_target(path, RESULTS, sorted(model_names()), TARGET_RULES)
    sys.exit(f"tabbench: {why}")
