# Diagnostics of the chosen models (issue 14; docs/diagnostics.md). Thin rules over
# `tabbench replay`, `tabbench diagnose` and `tabbench diagnostics-figures`.
#
#   replay_split  retrain the selected (config, epoch)s of one split, keep their logits and
#                 check them against the records -> results/replay/{model}/{dataset}/split{i}.npz
#   replay        target: every replay file of the study
#   diagnose      winner's curse and regret (runs/), calibrators and reliability (replay/)
#                 -> results/summary/diagnostics/
#   diagnostics   target: replay + tables + figures results/figures/diag_*.{pdf,png}
#
# `figures` (and the report) include the diagnostic figures drawn from what results/ holds: they
# never plan a replay (diagnostics_helpers.smk says how).


include: "diagnostics_helpers.smk"


rule replay_split:
    input:
        runs=RESULTS_LAYOUT.runs("{model}", "{dataset}", "{split}"),
        processed=lambda w: processed_path(w.dataset),
        splits=lambda w: splits_path(w.dataset),
    output:
        npz=REPLAY_NPZ,
        sidecar=REPLAY_SIDECAR,
    log:
        RESULTS_LAYOUT.log("replay", "{model}", "{dataset}", "split{split}"),
    wildcard_constraints:
        model=REPLAY_MODEL_PATTERN,
        split=r"\d+",
    conda:
        "../../environment.yml"
    threads: CFG["train_threads"]
    resources:
        gpu=train_gpus,
    params:
        flags=replay_flags,
    shell:
        "tabbench replay --runs {input.runs:q} --processed {input.processed:q}"
        " --splits {input.splits:q} --out {output.npz:q} --threads {threads}{params.flags}"
        " > {log:q} 2>&1"


rule replay:
    input:
        replay_targets,


rule diagnose:
    input:
        runs=diagnose_runs,
        replay=diagnose_replays,
    output:
        diagnostic_tables(),
    log:
        RESULTS_LAYOUT.log("diagnose"),
    conda:
        "../../environment.yml"
    threads: 4
    params:
        results=lambda wildcards, output: results_of_diagnostics_dir(
            os.path.dirname(output[0])
        ),
        out=lambda wildcards, output: os.path.dirname(output[0]),
        pairs=diagnose_pairs_arg,
        n_splits=CFG["n_splits"],
    shell:
        "tabbench diagnose --results {params.results:q} --out {params.out:q}"
        " --pairs {params.pairs} --n-splits {params.n_splits} --jobs {threads} > {log:q} 2>&1"


rule plot_diagnostics:
    input:
        diagnostic_tables(),
    output:
        diagnostic_figure_outputs(),
    log:
        RESULTS_LAYOUT.log("plot_diagnostics"),
    conda:
        "../../environment.yml"
    params:
        tables=lambda wildcards, input: os.path.dirname(input[0]),
        out=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "tabbench diagnostics-figures --tables {params.tables:q} --out {params.out:q}"
        " > {log:q} 2>&1"


rule diagnostics:
    input:
        rules.plot_diagnostics.output,
