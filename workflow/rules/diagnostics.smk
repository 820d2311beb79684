# Diagnostics of the chosen models (docs/diagnostics.md). Thin rules over
# `tabbench replay`; the tables and figures are drawn by the regenerate job (report.smk).
#
#   replay_split  retrain the selected (config, epoch)s of one split, keep their logits and
#                 check them against the records -> results/replay/{model}/{dataset}/split{i}.npz
#   replay        target: every replay file of the study
#   diagnostics   target: replay, then the regenerate job: tables results/summary/diagnostics/,
#                 figures results/figures/diag_*.{pdf,png} (with the paper's figures)
#
# `figures` (and the report) draw the diagnostics from the replay files results/ holds: they
# never plan a replay (diagnostics_helpers.smk says how). What a replay is given:
# tabbench.jobs.train (TRAIN_JOBS).


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
        model=MODEL_PATTERN,
        split=r"\d+",
    conda:
        "../../environment.yml"
    threads: CFG["train_threads"]
    resources:
        gpu=TRAIN_JOBS.gpus,
    params:
        # none a rerun trigger: a replay is determined by its runs file
        **TRAIN_JOBS.replay_params(),
    shell:
        "tabbench replay --runs {input.runs:q} --processed {input.processed:q}"
        " --splits {input.splits:q} --out {output.npz:q} --threads {threads}{params.flags}"
        " > {log:q} 2>&1"


rule replay:
    input:
        replay_targets,


rule diagnostics:
    input:
        replay_targets,
        REGENERATE_FILES,
