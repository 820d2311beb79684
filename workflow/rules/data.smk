# Data rules (DESIGN.md §3): fetch -> filter -> one checkpoint (the kept list) -> split.
#
# A data problem (no source has a dataset, unusable data, a dataset dropped by the filter) is a
# status written to the dataset's json, never a failed job, so the rest of the suite continues.
# Only `collect_datasets` is a checkpoint: which datasets survive filtering is known only after
# the data has been read.
#
# For downstream rule files:
#   kept_datasets()      names of the kept datasets (call it inside input functions only)
#   processed_path(ds)   data/processed/<ds>.parquet
#   splits_path(ds)      data/splits/<ds>.parquet
import os

from tabbench.data.manifest import suite_names
from tabbench.data.pipeline import read_kept

DEMO_DIR = os.path.join(workflow.basedir, "data", "demo")
DATASETS = suite_names(CFG["suite"], DEMO_DIR)
DATASET_PATTERN = "[^/]+"


def raw_path(ds):
    return f"{DATA}/raw/{ds}.parquet"


def processed_path(ds):
    return f"{DATA}/processed/{ds}.parquet"


def processed_json(ds):
    return f"{DATA}/processed/{ds}.json"


def splits_path(ds):
    return f"{DATA}/splits/{ds}.parquet"


def kept_datasets():
    """Kept dataset names; raises Snakemake's IncompleteCheckpointException until the
    checkpoint has run, so use it inside input functions."""
    return read_kept(checkpoints.collect_datasets.get().output.kept)


def data_targets(wildcards):
    return [f"{DATA}/datasets.csv"] + [splits_path(ds) for ds in kept_datasets()]


TARGET_FUNCTIONS.append(data_targets)


rule fetch_dataset:
    output:
        parquet=DATA + "/raw/{dataset}.parquet",
        json=DATA + "/raw/{dataset}.json",
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    params:
        sources=CFG["sources"],
        talent_dir=CFG.get("talent_dir") or "",
        openml_cache_dir=CFG["openml_cache_dir"],
        openml_timeout=CFG["openml_timeout"],
        demo_dir=DEMO_DIR,
    log:
        DATA + "/logs/fetch/{dataset}.log",
    shell:
        "tabbench data fetch --dataset {wildcards.dataset:q} --sources {params.sources}"
        " --talent-dir {params.talent_dir:q} --openml-cache-dir {params.openml_cache_dir:q}"
        " --openml-timeout {params.openml_timeout} --demo-dir {params.demo_dir:q}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


rule filter_dataset:
    input:
        parquet=DATA + "/raw/{dataset}.parquet",
        json=DATA + "/raw/{dataset}.json",
    output:
        parquet=DATA + "/processed/{dataset}.parquet",
        json=DATA + "/processed/{dataset}.json",
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    params:
        max_rows=CFG["max_rows"] if CFG["max_rows"] is not None else "None",
        min_rows=CFG["min_rows"],
        max_classes=CFG["max_classes"],
    log:
        DATA + "/logs/filter/{dataset}.log",
    shell:
        "tabbench data filter --raw-parquet {input.parquet:q} --raw-json {input.json:q}"
        " --max-rows {params.max_rows} --min-rows {params.min_rows}"
        " --max-classes {params.max_classes}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


checkpoint collect_datasets:
    input:
        processed=[processed_json(ds) for ds in DATASETS],
        raw=[f"{DATA}/raw/{ds}.json" for ds in DATASETS],
    output:
        kept=DATA + "/kept.txt",
        summary=DATA + "/datasets.csv",
        unavailable=DATA + "/unavailable.csv",
    log:
        DATA + "/logs/collect_datasets.log",
    shell:
        "tabbench data collect --processed-json {input.processed:q} --raw-json {input.raw:q}"
        " --out-kept {output.kept:q} --out-summary {output.summary:q}"
        " --out-unavailable {output.unavailable:q} > {log:q} 2>&1"


rule split_dataset:
    input:
        DATA + "/processed/{dataset}.parquet",
    output:
        DATA + "/splits/{dataset}.parquet",
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    params:
        n_splits=CFG["n_splits"],
        seed=CFG["seed"],
        stratify=CFG["stratify"],
    log:
        DATA + "/logs/split/{dataset}.log",
    shell:
        "tabbench data split --processed {input:q} --out {output:q}"
        " --n-splits {params.n_splits} --seed {params.seed} --stratify {params.stratify}"
        " > {log:q} 2>&1"


rule data:
    input:
        data_targets,
