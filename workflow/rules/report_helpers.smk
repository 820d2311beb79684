# Helpers of workflow/rules/report.smk (kept apart from the rules, as Snakemake's linter asks).
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import yaml
from snakemake.exceptions import IncompleteCheckpointException

from tabbench.aggregate import LARGE_ROWS, SUMMARY_FILES
from tabbench.plots import FIGURE_STEMS, stopping_metric_legend

SUMMARY_DIR = f"{RESULTS}/summary"
FIGURES_DIR = f"{RESULTS}/figures"
# datasets with at least this many rows are "large" (paper Fig. 5: 10K)
FIGURES_LARGE_ROWS = int(CFG.get("figures_large_rows") or LARGE_ROWS)
# the registered stopping metrics, for the figure captions (a param of the plot rule)
STOPPING_LEGEND = stopping_metric_legend()


def cached_selected():
    """Selected files for every (model, dataset) results/ holds already."""
    pairs = set()
    for path in glob.glob(f"{RESULTS}/selected/*/*.parquet"):
        pairs.add(
            (
                os.path.basename(os.path.dirname(path)),
                os.path.basename(path)[: -len(".parquet")],
            )
        )
    for folder in glob.glob(f"{RESULTS}/runs/*/*/"):
        model, dataset = os.path.normpath(folder).split(os.sep)[-2:]
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


# Snakemake's report() flag under another name: its parser reads `report` at the start of a line
# as a keyword, and formatters like to put a long call on its own line.
report_flag = report


def figure_outputs():
    out = []
    for stem in FIGURE_STEMS:
        out.append(f"{FIGURES_DIR}/{stem}.pdf")
        png = f"{FIGURES_DIR}/{stem}.png"
        out.append(
            report_flag(
                png,
                caption=f"../report/{stem}.rst",
                category="Figures",
                labels={"figure": stem},
            )
        )
    return out


# The Fig. 1 curve is read from results/runs/{model}/{dataset}/split0.parquet of one pair chosen
# among the selected ones (tabbench.aggregate.choose_curve_run); it is not declared as an input
# because which pair is chosen depends on the selected files' contents. Any change to that file
# also changes its selected file (an input), so the summary never goes stale because of it.
TARGET_FUNCTIONS.append(lambda wildcards: [f"{RESULTS}/report.html"])


def build_report(html_out, log_path, cfg):
    """Run `snakemake --report` on this workflow (target `figures`) into ``html_out``.

    A separate Snakemake invocation on the same workflow; it only reads metadata, hence
    --nolock. The configuration of this run is handed over as a config file so that --config
    overrides are kept; the HTML is written next to the target and renamed (atomic)."""
    out_dir = os.path.dirname(os.path.abspath(html_out))
    with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
        cfg_file = os.path.join(tmp, "config.yaml")
        with open(cfg_file, "w") as fh:
            yaml.safe_dump(cfg, fh)
        html = os.path.join(tmp, "report.html")
        cmd = [
            sys.executable,
            "-m",
            "snakemake",
            "--snakefile",
            workflow.main_snakefile,
            "--directory",
            os.getcwd(),
            "--configfile",
            cfg_file,
            "--nolock",
            "--report",
            html,
            "figures",
        ]
        with open(log_path, "w") as fh:
            subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
        shutil.move(html, html_out)
