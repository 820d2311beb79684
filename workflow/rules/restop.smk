# Re-stopping (docs/design.md §16): `snakemake restop` adds the val_<id> columns of every
# registered stopping metric that a runs file lacks (a metric registered after the study was
# trained), from what each train job kept (tabbench.study.restop_store), writes the selected files of the
# pairs whose runs files changed again, then redraws: one local job running `tabbench restop`,
# the regenerate job's own command (report.smk) on the folder and the HTML report
# (build_report), so that the folder is up to date afterwards: the study's next `snakemake`
# plans nothing. A `run:` job like the report rule (it builds the report in Python), so it has
# no conda environment: it runs where Snakemake runs, which has tabbench. It has no input, so
# nothing upstream is planned: never a train job. What it added and what it could not (and
# why): its log and results/restop.json.


rule restop:
    log:
        restop=RESULTS_LAYOUT.log("restop"),
        report=RESULTS_LAYOUT.log("report"),
    localrule: True
    threads: 4
    params:
        results=RESULTS,
        data=DATA,
        regenerate=DRAWING.command(),
    run:
        shell(
            "tabbench restop --results {params.results:q} --data {params.data:q}"
            " --jobs {threads} > {log.restop:q} 2>&1"
            " && {params.regenerate} --jobs {threads} >> {log.restop:q} 2>&1"
        )
        build_report(
            RESULTS_LAYOUT.report,
            log.report,
            workflow.config_settings.overwrite_config,
            report_command,
        )
