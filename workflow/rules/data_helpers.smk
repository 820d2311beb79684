# Helpers of the data rules (workflow/rules/data.smk), kept apart from the rules as Snakemake's
# linter asks. What downstream rule files may use -
#   DATASETS             the suite's dataset names (before filtering)
#   kept_datasets()      names of the kept datasets; Snakemake re-evaluates callers after the
#                        `collect_datasets` checkpoint, so call it inside input functions only
#   processed_path(ds)   data/processed/<ds>.parquet   (DESIGN.md §3 contract)
#   splits_path(ds)      data/splits/<ds>.parquet
#   data_targets(wc)     the data part of the `all` target (registered in TARGET_FUNCTIONS)
# and what the data stage says in the terminal (openml_banner, print_data_summary).
import os
import shlex
import sys
import time

from tabbench.data.manifest import suite_names
from tabbench.data.pipeline import read_kept
from tabbench.presets import row_cap

DEMO_DIR = os.path.join(workflow.basedir, "data", "demo")
DATASETS = suite_names(CFG["suite"], DEMO_DIR)
DATASET_PATTERN = "[^/]+"
# optional folder: the option is left out when talent_dir is null
TALENT_OPTION = (
    f"--talent-dir {shlex.quote(CFG['talent_dir'])}" if CFG.get("talent_dir") else ""
)
# Whether OpenML is reachable is probed once (at the start of a run, see openml_banner) and
# shared by the fetch jobs through per-host files in this folder. It reaches `tabbench data
# fetch` through the environment, not as a flag of the rule: a changed shell command would make
# Snakemake refetch every dataset of an existing data folder and rebuild all that follows.
OPENML_STATE_DIR = os.environ.setdefault(
    "TABBENCH_OPENML_STATE_DIR", os.path.abspath(f"{DATA}/logs/openml")
)
# the one-line summary of the data stage, written by collect_datasets, printed at the end
DATA_SUMMARY_LINE = f"{DATA}/logs/data_summary.txt"
_RUN = {"started": None}


def raw_path(ds):
    return f"{DATA}/raw/{ds}.parquet"


def raw_json(ds):
    return f"{DATA}/raw/{ds}.json"


def processed_path(ds):
    return f"{DATA}/processed/{ds}.parquet"


def processed_json(ds):
    return f"{DATA}/processed/{ds}.json"


def splits_path(ds):
    return f"{DATA}/splits/{ds}.parquet"


def kept_datasets():
    return read_kept(checkpoints.collect_datasets.get().output.kept)


def data_targets(wildcards):
    return [f"{DATA}/datasets.csv"] + [splits_path(ds) for ds in kept_datasets()]


TARGET_FUNCTIONS.append(data_targets)


def _fetch_jobs_pending():
    """True if this run has fetch jobs to do (or if Snakemake's DAG cannot tell us)."""
    try:
        return any(j.rule.name == "fetch_dataset" for j in workflow.dag.needrun_jobs())
    except Exception:
        return True


def openml_banner():
    """At the start of a run that fetches from OpenML: probe it once, say in the terminal
    whether it is reachable, and leave the answer for the fetch jobs (OPENML_STATE_DIR).
    """
    _RUN["started"] = time.time()
    if "openml" not in CFG["sources"] or not _fetch_jobs_pending():
        return
    shell(
        "tabbench data probe-openml --state-dir {state:q} --openml-cache-dir {cache:q}"
        " --openml-timeout {timeout}",
        state=OPENML_STATE_DIR,
        cache=CFG["openml_cache_dir"],
        timeout=CFG["openml_timeout"],
    )


def print_data_summary(log, success):
    """At the end of a run whose data stage ran (collect_datasets wrote its summary line
    during this run): repeat that line last in the terminal, where it is seen."""
    started = _RUN["started"]
    try:
        fresh = started is not None and os.path.getmtime(DATA_SUMMARY_LINE) >= started
        line = open(DATA_SUMMARY_LINE).read().strip() if fresh else ""
    except OSError:
        line = ""
    if line:
        print(f"tabbench {line}", file=sys.stderr, flush=True)


START_FUNCTIONS.append(openml_banner)
END_FUNCTIONS.append(print_data_summary)
