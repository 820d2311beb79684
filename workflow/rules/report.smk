# Aggregation, figures and the HTML report (docs/design.md §7-8). Thin rules over `tabbench aggregate`
# and `tabbench figures`.
#
# Inputs are parquet under results/ only. Which selected files the summary is built from
# (summary_inputs in report_helpers.smk):
#   * the study - the default target `all` (or any target other than the ones below): every
#     model × kept dataset (data.smk's checkpoint), so a fresh `snakemake` orders the figures
#     after all training;
#   * cached results only - when every target is `figures`, `report`, `plot`, `aggregate` or a
#     file under summary/ or figures/ or report.html: the complete results the folder already
#     holds (tabbench.layout.complete_results). No data or training job can be planned then
#     (train_input gives train jobs an input no rule makes, so Snakemake takes the runs files as
#     they are), even after a changed config, a changed rule, or an interrupted run whose
#     outputs Snakemake flagged incomplete.


include: "report_helpers.smk"


rule aggregate:
    input:
        selected=summary_inputs,
    output:
        summary_outputs(),
    log:
        RESULTS_LAYOUT.log("aggregate"),
    conda:
        "../../environment.yml"
    params:
        out=lambda wildcards, output: os.path.dirname(output[0]),
        runs_dir=RESULTS_LAYOUT.runs_dir,
        large_rows=FIGURES_LARGE_ROWS,
        rope=ROPE_PERCENT,
    shell:
        "tabbench aggregate --selected {input.selected:q} --out {params.out:q}"
        " --runs-dir {params.runs_dir:q} --large-rows {params.large_rows}"
        " --rope {params.rope} > {log:q} 2>&1"


rule plot:
    input:
        SUMMARY_OUTPUTS,
    output:
        figure_outputs(),
    log:
        RESULTS_LAYOUT.log("plot"),
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
    # hence --nolock. This run's --config values are handed over as a config file.
    input:
        rules.plot.output,
        extra_figures,
    output:
        RESULTS_LAYOUT.report,
    log:
        RESULTS_LAYOUT.log("report"),
    run:
        build_report(output[0], log[0], dict(workflow.config_settings.overwrite_config))
