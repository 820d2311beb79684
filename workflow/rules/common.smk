# Shared by every workflow file: the settled configuration, the layout of data/ and results/, the
# list of final targets and the run's start/end hooks. Each .smk file adds its own targets to
# TARGET_FUNCTIONS (an extension point), so the `all` target grows with the pipeline without
# editing the Snakefile; likewise START_FUNCTIONS / END_FUNCTIONS, since Snakemake keeps a single
# onstart/onsuccess/onerror handler (a second one would silently replace the first).
#
# The configuration (tabbench.settings.run_config): config.yaml and --config/--configfile, validated with
# short errors; on a results folder that has a run_config.yaml (the settings it was produced
# with), that file takes config.yaml's place and a --config that disagrees with it is refused.
# The first run that starts jobs writes run_config.yaml (remember_run_config, a start hook).
import os
import sys

import yaml

from tabbench.core.layout import DataLayout, ResultsLayout
from tabbench.settings.schema import ConfigError
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.run_config import settle
from tabbench.study.targets import plan_drawing


def _workflow_configfiles():
    """config.yaml alone (the `configfile:` files, not the --configfile ones): the defaults
    that the folder's run_config.yaml replaces."""
    cli = {os.path.abspath(str(f)) for f in workflow.config_settings.configfiles}
    out = {}
    for f in workflow.configfiles:
        if os.path.abspath(str(f)) not in cli:
            with open(f) as fh:
                out.update(yaml.safe_load(fh) or {})
    return out


try:
    SETTLED = settle(
        _workflow_configfiles(),
        workflow.config_settings.overwrite_config,
        workflow.current_basedir.join("../schemas/config.schema.yaml").get_path_or_uri(
            True
        ),
    )
except ConfigError as e:
    # the message names the key, the reason and the allowed values: no traceback, no dump
    sys.exit(str(e))
for _note in SETTLED.notes:
    print(_note, file=sys.stderr)
CFG = SETTLED.config
config.clear()
config.update(CFG)
DATA = CFG["data_dir"]
RESULTS = CFG["results_dir"]
DATA_LAYOUT = DataLayout(DATA)
RESULTS_LAYOUT = ResultsLayout(RESULTS)
# where the folder's study is declared: its run_config.yaml, or (a folder without one) None:
# config.yaml and the command line
STUDY_SETTINGS_FILE = SETTLED.path if SETTLED.stored is not None else None


class NotARerunTrigger:
    """Shell text that Snakemake's params rerun trigger ignores (it records only params of
    builtin types): for what a job is given that does not change its outputs — how a GPU is
    claimed, threads, where the fetch jobs share OpenML's reachability — so that changing it
    on a finished folder reruns nothing (the one rerun policy: profiles/default/config.yaml,
    docs/design.md §6)."""

    def __init__(self, text):
        self.text = text

    def __str__(self):
        return self.text


def kept_on_failure(path):
    """An output that a failed job leaves as it was: Snakemake's `update` flag. Snakemake
    removes the outputs of a failed job; a drawing job (regenerate, report) or a selection
    that fails on a damaged input (a truncated runs file: one line naming it) would then
    delete every figure, table, selected file or report drawn before. Flagged, an output is
    not removed before the job, is copied aside while it runs and put back if it fails (all of
    them, also those the job had written again). Put back, it is newer than the damaged
    input: the next run draws it again once that input is rebuilt."""
    return update(path)


def requested_targets():
    """The targets this invocation asked for (rule names or files; empty = the default target
    `all`). The one place the workflow reads Snakemake's internals for it
    (`workflow.dag_settings`); known only once the DAG is being built (input functions,
    onstart), not while the Snakefile is parsed."""
    settings = getattr(workflow, "dag_settings", None)
    return [str(t) for t in (getattr(settings, "targets", None) or [])]


def drawing():
    """What this invocation's targets ask of the regenerate job (report.smk), from
    tabbench.study.targets.plan_drawing: whether it draws from the folder's cache (`figures`,
    `report`, their files: no data, training or selection job is planned for it, whatever
    state the folder is in) and which runs or selected files asked for beside them are made
    first; not for the default target `all` (the study) or any other."""
    return plan_drawing(requested_targets(), RESULTS)


def draws_from_cache():
    return drawing().from_cache


def remember_run_config():
    """Start hook: a run that starts jobs on a folder without run_config.yaml writes it (not one
    that only draws figures from a folder without run_config.yaml)."""
    if SETTLED.stored is None and not drawing().trains_nothing:
        try:
            written = ResultsFolder.open(RESULTS).remember(CFG)
        except ConfigError as e:  # a read-only results folder: one line, no job started
            sys.exit(str(e))
        if written:
            print(
                f"tabbench: wrote {SETTLED.path} (this folder's settings)",
                file=sys.stderr,
            )


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
# the start hook that writes the folder's settings, before any job (data_helpers.smk puts its
# check of the typed suite's names before it)
START_FUNCTIONS.append(remember_run_config)
