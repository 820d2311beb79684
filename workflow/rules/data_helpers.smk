# Helpers of the data rules (workflow/rules/data.smk), kept apart from the rules as Snakemake's
# linter asks. Paths come from tabbench.layout (DATA_LAYOUT, common.smk). What downstream rule
# files may use -
#   DATASETS             the suite's dataset names (before filtering)
#   kept_datasets()      names of the kept datasets; Snakemake re-evaluates callers after the
#                        `collect_datasets` checkpoint, so call it inside input functions only
#   processed_path(ds)   data/processed/<ds>.parquet   (DESIGN.md §3 contract)
#   splits_path(ds)      data/splits/<ds>.parquet
#   check_dataset(ds)    rejects, while the DAG is built, a dataset no chosen source knows
#   data_targets(wc)     the data part of the `all` target (registered in TARGET_FUNCTIONS)
import functools
import os
import shlex

from snakemake.exceptions import WorkflowError

from tabbench.data.manifest import known_names, suite_names, unknown_dataset_message
from tabbench.data.pipeline import read_kept

DEMO_DIR = os.path.join(workflow.basedir, "data", "demo")
DATASETS = suite_names(CFG["suite"], DEMO_DIR)
DATASET_PATTERN = "[^/]+"
# optional folder: the option is left out when talent_dir is null
TALENT_OPTION = (
    f"--talent-dir {shlex.quote(CFG['talent_dir'])}" if CFG.get("talent_dir") else ""
)


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


def check_dataset(ds):
    """A target may name a dataset of the suite or one a chosen source knows; any other name
    (a typo, `nosuchdata`) fails while the DAG is built, before any job runs or writes a file,
    with the names the sources know."""
    if ds in _SUITE or ds in _known_datasets():
        return
    known = sorted(_known_datasets() | _SUITE, key=lambda n: (n.lower(), n))
    raise WorkflowError(unknown_dataset_message(ds, known, CFG["sources"]))


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
    check_dataset(wildcards.dataset)
    return processed_path(wildcards.dataset)


def kept_datasets():
    return read_kept(checkpoints.collect_datasets.get().output.kept)


def data_targets(wildcards):
    return [DATA_LAYOUT.datasets_csv] + [splits_path(ds) for ds in kept_datasets()]


TARGET_FUNCTIONS.append(data_targets)
