# Helpers of the data rules (workflow/rules/data.smk), kept apart from the rules as Snakemake's
# linter asks. What downstream rule files may use -
#   DATASETS             the suite's dataset names (before filtering)
#   kept_datasets()      names of the kept datasets; Snakemake re-evaluates callers after the
#                        `collect_datasets` checkpoint, so call it inside input functions only
#   processed_path(ds)   data/processed/<ds>.parquet   (DESIGN.md §3 contract)
#   splits_path(ds)      data/splits/<ds>.parquet
#   data_targets(wc)     the data part of the `all` target (registered in TARGET_FUNCTIONS)
import os
import shlex

from tabbench.data.manifest import suite_names
from tabbench.data.pipeline import read_kept

DEMO_DIR = os.path.join(workflow.basedir, "data", "demo")
DATASETS = suite_names(CFG["suite"], DEMO_DIR)
DATASET_PATTERN = "[^/]+"
# optional folder: the option is left out when talent_dir is null
TALENT_OPTION = (
    f"--talent-dir {shlex.quote(CFG['talent_dir'])}" if CFG.get("talent_dir") else ""
)


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
