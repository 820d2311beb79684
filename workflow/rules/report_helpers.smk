# What the drawing rules (report.smk) are given: tabbench.jobs.drawing.DrawingJobs. A method
# name the registry does not know stops the run at once, in one line, before any job.
import os

from tabbench.jobs.drawing import DrawingJobs, build_report
from tabbench.plots import stopping_metric_legend

DRAWING = DrawingJobs(CFG)
DESCRIPTION = DRAWING.description
REGENERATE_FILES = DRAWING.files
# Functions (wildcards) -> files the regenerate job waits for besides the study's runs and
# selected files (diagnostics.smk adds the replay files when the replay is asked for).
REGENERATE_INPUT_FUNCTIONS = [train_targets, study_selected]
# Snakemake's report() flag under another name: its parser reads `report` at the start of a line
# as a keyword, and formatters like to put a long call on its own line.
report_flag = report


def regenerate_input(wildcards):
    return DRAWING.regenerate_input(
        drawing(), lambda: study_files(wildcards), before_update
    )


def study_files(wildcards):
    return [path for fn in REGENERATE_INPUT_FUNCTIONS for path in fn(wildcards)]


def report_command(config_file, html):
    """`snakemake --report` on this workflow (target `regenerate`): a separate invocation that
    only reads metadata (--nolock), with this run's --config values as a config file, so that
    it settles the same configuration; tabbench's stylesheet (every page opens at its top).
    """
    return [
        *(sys.executable, "-m", "snakemake", "--snakefile", workflow.main_snakefile),
        *("--directory", os.getcwd(), "--configfile", config_file, "--nolock"),
        *("--report", html, "--report-stylesheet", REPORT_STYLESHEET, "regenerate"),
    ]


REPORT_STYLESHEET = os.path.abspath(
    workflow.current_basedir.join("../report/report.css").get_path_or_uri(True)
)
TARGET_FUNCTIONS.append(lambda wildcards: [RESULTS_LAYOUT.report])
END_FUNCTIONS.append(DRAWING.say_when_stale)
