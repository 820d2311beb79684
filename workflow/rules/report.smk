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
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import yaml
from snakemake.exceptions import IncompleteCheckpointException

from tabbench.aggregate import LARGE_ROWS, SUMMARY_FILES
from tabbench.plots import FIGURE_STEMS

SUMMARY_DIR = f"{RESULTS}/summary"
FIGURES_DIR = f"{RESULTS}/figures"
# datasets with at least this many rows are "large" (paper Fig. 5: 10K)
FIGURES_LARGE_ROWS = int(CFG.get("figures_large_rows") or LARGE_ROWS)


def cached_selected():
    """Selected files for every (model, dataset) results/ holds already."""
    pairs = set()
    for path in glob.glob(f"{RESULTS}/selected/*/*.parquet"):
        pairs.add((os.path.basename(os.path.dirname(path)), os.path.basename(path)[: -len(".parquet")]))
    for folder in glob.glob(f"{RESULTS}/runs/*/*/"):
        model, dataset = folder.rstrip("/").split("/")[-2:]
        if all(os.path.exists(p) for p in runs_of(model, dataset)):
            pairs.add((model, dataset))
    return [selected_path(m, d) for m, d in sorted(pairs)]


def summary_inputs(wildcards):
    """Study mode or cache mode (see the top of this file)."""
    try:
        return study_selected()
    except IncompleteCheckpointException:
        cached = cached_selected()
        if cached:
            return cached
        raise  # nothing cached: a fresh study, let Snakemake run the checkpoint first


def figure_outputs():
    out = []
    for stem in FIGURE_STEMS:
        out.append(f"{FIGURES_DIR}/{stem}.pdf")
        # (one line: the Snakemake parser reads `report` at the start of a line as a keyword)
        png = f"{FIGURES_DIR}/{stem}.png"
        out.append(report(png, caption=f"../report/{stem}.rst", category="Figures", labels={"figure": stem}))
    return out


# The Fig. 1 curve is read from results/runs/{model}/{dataset}/split0.parquet of one pair chosen
# among the selected ones (tabbench.aggregate.choose_curve_run); it is not declared as an input
# because which pair is chosen depends on the selected files' contents. Any change to that file
# also changes its selected file (an input), so the summary never goes stale because of it.
rule aggregate:
    input:
        selected=summary_inputs,
    output:
        [f"{SUMMARY_DIR}/{name}" for name in SUMMARY_FILES.values()],
    params:
        out=SUMMARY_DIR,
        runs_dir=f"{RESULTS}/runs",
        large_rows=FIGURES_LARGE_ROWS,
    log:
        f"{RESULTS}/logs/aggregate.log",
    shell:
        "tabbench aggregate --selected {input.selected:q} --out {params.out:q}"
        " --runs-dir {params.runs_dir:q} --large-rows {params.large_rows} > {log:q} 2>&1"


rule plot:
    input:
        [f"{SUMMARY_DIR}/{name}" for name in SUMMARY_FILES.values()],
    output:
        figure_outputs(),
    params:
        summary=SUMMARY_DIR,
        out=FIGURES_DIR,
    log:
        f"{RESULTS}/logs/plot.log",
    shell:
        "tabbench figures --summary {params.summary:q} --out {params.out:q} > {log:q} 2>&1"


rule figures:
    input:
        rules.plot.output,


rule report:
    # `snakemake --report` is a separate Snakemake invocation on the same workflow (target
    # `figures`, whose outputs carry the report() flags and captions); it only reads metadata,
    # hence --nolock. The configuration of this run is handed over as a config file so that
    # --config overrides are kept.
    input:
        rules.plot.output,
    output:
        f"{RESULTS}/report.html",
    log:
        f"{RESULTS}/logs/report.log",
    run:
        out_dir = os.path.dirname(os.path.abspath(output[0]))
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as fh:
                yaml.safe_dump(dict(config), fh)
            html = os.path.join(tmp, "report.html")
            cmd = [sys.executable, "-m", "snakemake", "--snakefile", workflow.main_snakefile,
                   "--directory", os.getcwd(), "--configfile", cfg, "--nolock",
                   "--report", html, "figures"]
            with open(log[0], "w") as fh:
                subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
            shutil.move(html, output[0])


TARGET_FUNCTIONS.append(lambda wildcards: [f"{RESULTS}/report.html"])
