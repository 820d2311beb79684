# Shared by every workflow file: the settled configuration, the layout of data/ and results/, the
# list of final targets and the run's start/end hooks. Each .smk file adds its targets to
# TARGET_FUNCTIONS, so the `all` target grows with the pipeline without editing the Snakefile;
# likewise START_FUNCTIONS / END_FUNCTIONS (Snakemake keeps a single onstart/onsuccess/onerror
# handler). What each rule is given is the library's (tabbench.jobs); which params are rerun
# triggers follows the settings table (tabbench.jobs.triggers, NotARerunTrigger).
#
# The configuration (tabbench.settings.run_config): config.yaml and --config/--configfile,
# validated with short errors; on a results folder that has a run_config.yaml (the settings it
# was produced with), that file takes config.yaml's place and a --config that disagrees with it
# is refused. The first run that starts jobs writes run_config.yaml (remember_run_config).
import sys

from tabbench.core.layout import DataLayout, ResultsLayout
from tabbench.jobs.configuration import configfile_values
from tabbench.jobs.messages import interrupted_hint
from tabbench.settings.folder import ResultsFolder
from tabbench.settings.run_config import settle
from tabbench.settings.schema import ConfigError
from tabbench.study.targets import plan_drawing

try:
    SETTLED = settle(
        configfile_values(workflow.configfiles, workflow.config_settings.configfiles),
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


def kept_on_failure(path):
    """An output a failed job leaves as it was (Snakemake's `update` flag: not removed before
    the job, put back if it fails), so that a drawing or selection that fails on a damaged
    input does not delete what was drawn before."""
    return update(path)


def requested_targets():
    """This invocation's targets (empty: `all`): the one read of Snakemake's internals for
    them, known once the DAG is being built (input functions, onstart)."""
    settings = getattr(workflow, "dag_settings", None)  # (none while linting)
    return [str(t) for t in (getattr(settings, "targets", None) or [])]


def drawing():
    """What the targets ask of the regenerate job (tabbench.study.targets.plan_drawing)."""
    return plan_drawing(requested_targets(), RESULTS)


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


# Functions (wildcards) -> list of paths; `all` is their concatenation.
TARGET_FUNCTIONS = []


def all_targets(wildcards):
    return [path for fn in TARGET_FUNCTIONS for path in fn(wildcards)]


# fn() at the start of a real run (not a dry run); fn(log, success) at its end (`log`: the
# run's Snakemake log file or files).
START_FUNCTIONS = [remember_run_config]
END_FUNCTIONS = [interrupted_hint]


onstart:
    for fn in START_FUNCTIONS:
        fn()


onsuccess:
    for fn in END_FUNCTIONS:
        fn(log, True)


onerror:
    for fn in END_FUNCTIONS:
        fn(log, False)
