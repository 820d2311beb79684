# Aggregation, figures and the HTML report (DESIGN.md §7-8). Thin rules over `tabbench aggregate`
# and `tabbench figures`.
#
# Inputs are parquet under results/ only. Which selected files the summary is built from:
#   * study mode - data.smk's checkpoint knows the kept datasets: every model × kept dataset, so a
#     fresh `snakemake` orders the figures after all training (and the checkpoint runs first);
#   * cache mode - the checkpoint's output is absent (e.g. data/ was deleted, or the folder is a
#     colleague's results): every (model, dataset) that results/ already holds, as a selected
#     file or as a complete set of split records. Nothing upstream of results/ is needed, so
#     `snakemake figures` runs no data or training job.
# Snakemake 9 does not rerun a job whose output exists because an input of an *upstream* job is
# missing (tests/workflow/test_results_rules.py checks this with no data/ at all).


include: "report_helpers.smk"


rule aggregate:
    input:
        selected=summary_inputs,
    output:
        [f"{SUMMARY_DIR}/{name}" for name in SUMMARY_FILES.values()],
    log:
        f"{RESULTS}/logs/aggregate.log",
    conda:
        "../../environment.yml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
        runs_dir=f"{RESULTS}/runs",
        large_rows=FIGURES_LARGE_ROWS,
    shell:
        "tabbench aggregate --selected {input.selected:q} --out {params.out:q}"
        " --runs-dir {params.runs_dir:q} --large-rows {params.large_rows} > {log:q} 2>&1"


rule plot:
    input:
        [f"{SUMMARY_DIR}/{name}" for name in SUMMARY_FILES.values()],
    output:
        figure_outputs(),
    log:
        f"{RESULTS}/logs/plot.log",
    conda:
        "../../environment.yml"
    params:
        summary=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
        # for the captions ({{ snakemake.params.stopping_metrics }}): the registered ones
        stopping_metrics=STOPPING_LEGEND,
    shell:
        "tabbench figures --summary {params.summary:q} --out {params.out:q} > {log:q} 2>&1"


rule figures:
    input:
        rules.plot.output,
        extra_figures,


rule report:
    # `snakemake --report` is a separate Snakemake invocation on the same workflow (target
    # `figures`, whose outputs carry the report() flags and captions); it only reads metadata,
    # hence --nolock. The configuration of this run is handed over as a config file so that
    # --config overrides are kept.
    input:
        rules.plot.output,
        extra_figures,
    output:
        f"{RESULTS}/report.html",
    log:
        f"{RESULTS}/logs/report.log",
    run:
        build_report(output[0], log[0], dict(config))
