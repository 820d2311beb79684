# Shared by every workflow file: the resolved configuration, the list of final targets and the
# run's start/end hooks. Each .smk file adds its own targets to TARGET_FUNCTIONS (an extension
# point), so the `all` target grows with the pipeline without editing the Snakefile; likewise
# START_FUNCTIONS / END_FUNCTIONS, since Snakemake keeps a single onstart/onsuccess/onerror
# handler (a second one would silently replace the first).
import sys

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


# fn() at the start of a real run (not a dry run); fn(log, success) at its end. `log` is
# Snakemake's log file of the run.
START_FUNCTIONS = []
END_FUNCTIONS = []


onstart:
    for fn in START_FUNCTIONS:
        fn()


onsuccess:
    for fn in END_FUNCTIONS:
        fn(log, True)


onerror:
    for fn in END_FUNCTIONS:
        fn(log, False)


def interrupted_hint(log, success):
    """After Ctrl-C Snakemake ends with "WorkflowError: At least one job did not complete
    successfully", which reads like a failure: say what was kept and how to go on. `log`: the
    run's log file(s) (a list in Snakemake >= 8)."""
    interrupted = False
    for path in [log] if isinstance(log, str) else list(log or []):
        try:
            interrupted |= "Terminating processes on user request" in open(path).read()
        except OSError:
            pass
    if interrupted and not success:
        print(
            "tabbench: interrupted. Finished jobs are kept, and so are the finished configs of "
            "interrupted train jobs (<output>.part/): run the same command again to resume. "
            "After a hard kill (SIGKILL, power cut) release the lock first: snakemake --unlock",
            file=sys.stderr,
            flush=True,
        )


END_FUNCTIONS.append(interrupted_hint)


# Functions (wildcards) -> list of figure files that the `figures` target (and so the HTML
# report) includes besides the paper's figures; e.g. diagnostics.smk adds its figures here.
FIGURE_FUNCTIONS = []


def extra_figures(wildcards):
    out = []
    for fn in FIGURE_FUNCTIONS:
        out.extend(fn(wildcards))
    return out
