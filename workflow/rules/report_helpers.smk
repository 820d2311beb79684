# Helpers of workflow/rules/report.smk (kept apart from the rules, as Snakemake's linter asks).
# Paths: tabbench.layout (RESULTS_LAYOUT); which cached results are complete:
# tabbench.layout.complete_results (the one rule, shared with `tabbench figures --results`).
import functools
import os
import shutil
import subprocess
import sys
import tempfile

import yaml
from snakemake.exceptions import WorkflowError

from tabbench.aggregate import LARGE_ROWS, SUMMARY_FILES
from tabbench.comparisons import ROPE_PERCENT as DEFAULT_ROPE_PERCENT
from tabbench.layout import complete_results, folder_n_splits
from tabbench.plots import FIGURE_STEMS, stopping_metric_legend

SUMMARY_OUTPUTS = [RESULTS_LAYOUT.summary(name) for name in SUMMARY_FILES.values()]
# datasets with at least this many rows are "large" (paper Fig. 5: 10K); the folder's own
# setting (run_config.yaml, or the last summary's for an older folder: tabbench.run_config)
FIGURES_LARGE_ROWS = int(CFG.get("figures_large_rows") or LARGE_ROWS)
# the Bayesian tests' region of practical equivalence (%), a redraw setting like the above
ROPE_PERCENT = float(CFG.get("rope_percent") or DEFAULT_ROPE_PERCENT)
# the registered stopping metrics, for the figure captions (a param of the plot rule)
STOPPING_LEGEND = stopping_metric_legend()


@functools.cache
def cache_n_splits():
    """Splits a cached (model, dataset) must have to be complete: the folder's n_splits
    (run_config.yaml), else the most any pair of the folder has, else the configured number.
    Read once per invocation (every select job asks).
    """
    return folder_n_splits(RESULTS) or CFG["n_splits"]


@functools.cache
def cached_results():
    """The complete (model, dataset) results of the folder (tabbench.layout.complete_results),
    listed once per invocation: the summary and the diagnostics both ask, several times. Under
    a figures target no training is planned, so the list cannot grow during the run."""
    return complete_results(RESULTS, cache_n_splits())


def cached_selected():
    """Selected files of every complete (model, dataset) of the results folder."""
    return [selected_path(r.model, r.dataset) for r in cached_results()]


_SAID = set()


def summary_inputs(wildcards):
    """What the summary is built from. Under a figures/report target (reads_cache_only): the
    complete results the folder holds, and nothing upstream of results/ is planned (train_input
    sees to it). Otherwise (the study, `all`): every model × kept dataset, so a fresh
    `snakemake` orders the figures after all training (and the checkpoint runs first).
    """
    if not reads_cache_only():
        return study_selected()
    cached = cached_selected()
    if not cached:
        raise WorkflowError(
            f"{RESULTS}/ holds no complete results to draw figures from. Run the study first "
            "(e.g. `snakemake --cores 2 --config preset=demo`), or point results_dir at a "
            "results folder."
        )
    if "cache" not in _SAID:
        _SAID.add("cache")
        print(
            f"tabbench: figures from the {len(cached)} complete (model, dataset) results in "
            f"{RESULTS}/ (cached results only: nothing is trained)",
            file=sys.stderr,
        )
    return cached


# Snakemake's report() flag under another name: its parser reads `report` at the start of a line
# as a keyword, and formatters like to put a long call on its own line.
report_flag = report


def summary_outputs():
    """The summary files as the aggregate rule's outputs: claims.html goes into the HTML report
    (the paper's claims, checked; tabbench.claims), the others are plain files. Rules that
    read the summary take SUMMARY_OUTPUTS (a report() flag belongs to outputs only)."""
    claims = RESULTS_LAYOUT.summary(SUMMARY_FILES["claims_html"])
    return [
        (
            report_flag(
                path,
                caption="../report/claims.rst",
                category="Claims",
                labels={"table": "claims"},
            )
            if path == claims
            else path
        )
        for path in SUMMARY_OUTPUTS
    ]


def figure_outputs(stems=FIGURE_STEMS, category="Figures"):
    """The pdf and png of each figure stem; the png goes into the HTML report with the caption
    workflow/report/{stem}.rst."""
    out = []
    for stem in stems:
        out.append(RESULTS_LAYOUT.figure(stem, "pdf"))
        png = RESULTS_LAYOUT.figure(stem, "png")
        out.append(
            report_flag(
                png,
                caption=f"../report/{stem}.rst",
                category=category,
                labels={"figure": stem},
            )
        )
    return out


# The Fig. 1 curve is read from results/runs/{model}/{dataset}/split0.parquet of one pair chosen
# among the selected ones (tabbench.curve.choose_curve_run); it is not declared as an input
# because which pair is chosen depends on the selected files' contents. Any change to that file
# also changes its selected file (an input), so the summary never goes stale because of it.
TARGET_FUNCTIONS.append(lambda wildcards: [RESULTS_LAYOUT.report])


def build_report(html_out, log_path, cfg):
    """Run `snakemake --report` on this workflow (target `figures`) into ``html_out``.

    A separate Snakemake invocation on the same workflow; it only reads metadata, hence
    --nolock. ``cfg`` is this invocation's own --config/--configfile values, handed over as a
    config file: the inner invocation then settles the same configuration (the folder's
    run_config.yaml and these overrides) and builds the same DAG. The HTML is written next to
    the target and renamed (atomic)."""
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
