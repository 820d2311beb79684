# Re-stopping (docs/design.md §16): `snakemake restop` adds the val_<id> columns of every
# registered stopping metric that a runs file lacks (a metric registered after the study was
# trained), from what each train job kept (tabbench.study.restop_store), then reselects and redraws: one
# local job running `tabbench restop` and then the regenerate job's own command (report.smk)
# on the folder. It has no input, so nothing upstream is planned: never a train job. What it
# added and what it could not (and why): its log and results/restop.json.


rule restop:
    log:
        RESULTS_LAYOUT.log("restop"),
    localrule: True
    conda:
        "../../environment.yml"
    threads: 4
    params:
        results=RESULTS,
        data=DATA,
        regenerate=regenerate_command(DESCRIPTION),
    shell:
        "tabbench restop --results {params.results:q} --data {params.data:q}"
        " --jobs {threads} > {log:q} 2>&1"
        " && {params.regenerate} --jobs {threads} >> {log:q} 2>&1"
