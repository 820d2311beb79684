# Summary, figures, diagnostics and the HTML report (docs/design.md §7-8, §14): one job, the
# library's `tabbench figures --results` (tabbench.report.redraw.regenerate), over what the
# results folder holds, and `snakemake --report` on it. What they are given:
# tabbench.jobs.drawing (DRAWING, report_helpers.smk).
#
#   regenerate  selection where a runs file is newer than its selected file (in memory), the
#               summary tables and the claims -> results/summary/, every figure (the paper's and
#               the diagnostics' from the replay files present) -> results/figures/, and the
#               report's opening page -> results/summary/study.rst
#   figures     target: what regenerate writes, and the report
#   report      target: results/report.html, self-contained (figures, captions, claims)
#
# What regenerate waits for: under `figures`/`report` only the files the folder holds, so they
# plan this one job and nothing upstream (no data, training or selection job, whatever
# preceded); under the study (`all`) every selected file of the study, so a fresh `snakemake`
# draws after the last training.


include: "report_helpers.smk"


# The report opens on the study this folder holds (tabbench.report.study_description), a page the
# regenerate job writes; a folder drawn without that page reports without it.
if os.path.exists(DESCRIPTION):

    report: os.path.abspath(DESCRIPTION)


rule regenerate:
    input:
        regenerate_input,
    output:
        # kept as they were when the job fails (kept_on_failure, common.smk); the claims table
        # and each figure's png are entries of the HTML report, with their captions
        DRAWING.outputs(kept_on_failure, report_flag),
        description=kept_on_failure(DESCRIPTION),
    log:
        RESULTS_LAYOUT.log("regenerate"),
    conda:
        "../../environment.yml"
    threads: 4
    params:
        # the folder, its settings and what the summary compares (a changed one redraws)
        command=DRAWING.command(),
        # for the captions ({{ snakemake.params.stopping_metrics }}): the registered ones. Not
        # a rerun trigger (a function of the input: Snakemake compares only the other params):
        # a newly registered metric changes no table or figure until the runs files have its
        # column, and that change reruns this job anyway (`snakemake restop` redraws)
        stopping_metrics=lambda wildcards, input: stopping_metric_legend(),
    shell:
        "{params.command} --jobs {threads} > {log:q} 2>&1"


rule figures:
    # what the regenerate job draws, and the HTML report on it: nothing drawn is left stale
    input:
        REGENERATE_FILES,
        RESULTS_LAYOUT.report,


rule report:
    # `snakemake --report` is a separate Snakemake invocation on the same workflow (target
    # `regenerate`, whose outputs carry the report() flags and captions): report_command
    input:
        REGENERATE_FILES,
    output:
        kept_on_failure(RESULTS_LAYOUT.report),
    log:
        RESULTS_LAYOUT.log("report"),
    run:
        build_report(
            output[0],
            log[0],
            workflow.config_settings.overwrite_config,
            report_command,
        )
