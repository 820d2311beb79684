# Helpers of workflow/rules/report.smk (kept apart from the rules, as Snakemake's linter asks).
# Paths: tabbench.core.layout (RESULTS_LAYOUT); what the regenerate job reads:
# tabbench.report.redraw.regenerate_inputs (the complete results, tabbench.core.layout's one rule).
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

from tabbench.core.io import UnreadableFileError, check_parquet
from tabbench.summary.aggregate import SUMMARY_FILES
from tabbench.core.layout import ResultsLayout
from tabbench.diagnostics.paths import (
    DIAGNOSTIC_FIGURE_STEMS,
    DIAGNOSTIC_OTHER_FILES,
    DIAGNOSTIC_TABLE_FILES,
)
from tabbench.plots import FIGURE_STEMS, stopping_metric_legend
from tabbench.report.redraw import (
    nothing_to_draw,
    regenerate_inputs,
    stale_drawing,
)
from tabbench.settings.table import VIEW_KEYS
from tabbench.summary.patience_words import patience_argument
from tabbench.summary.view import ViewError, view_from_config
from tabbench.report.study_description import (
    CLAIMS_CATEGORY,
    DESCRIPTION_FILE,
    DIAGNOSTICS_CATEGORY,
    FIGURES_CATEGORY,
)

# datasets with at least this many rows are "large" (paper Fig. 5: 10K; 0: every dataset); the
# folder's own setting (run_config.yaml, or the last summary's for an older folder:
# tabbench.settings.run_config), filled by the preset
FIGURES_LARGE_ROWS = int(CFG["figures_large_rows"])
# the Bayesian tests' region of practical equivalence (%), a redraw setting like the above
ROPE_PERCENT = float(CFG["rope_percent"])
# the registered stopping metrics, for the figure captions (a param of the regenerate rule)
STOPPING_LEGEND = stopping_metric_legend()


def _view_flags():
    """What the summary compares (tabbench.summary.view: figures_baseline, figures_methods,
    comparisons), as the folder stores it or this invocation gives it, as the flags of
    `tabbench figures`; empty where the paper's."""
    flags = ""
    for key in VIEW_KEYS:
        value = CFG.get(key)
        if value is None or value == []:
            continue
        flag = "--" + key.replace("_", "-")
        if key == "figures_methods":
            flags += f" {flag} " + " ".join(shlex.quote(str(m)) for m in value)
        elif key == "comparisons":
            flags += f" {flag} {shlex.quote(json.dumps(value))}"
        else:
            flags += f" {flag} {shlex.quote(str(value))}"
    return flags


# A method name the registry does not know (figures_methods, figures_baseline, comparisons)
# stops the run at once, in one line listing the known ones, before any job: not after the
# study, in the regenerate job's log.
try:
    view_from_config(CFG)
except ViewError as e:
    sys.exit(f"tabbench: invalid configuration: {e}")
# the redraw settings of what the summary compares (a param of the regenerate rule)
VIEW_FLAGS = _view_flags()
# the stopping rules' patiences (config patience; a reselect/redraw setting, never a retrain):
# the regenerate job selects again, in memory, the pairs whose selected files hold others
PATIENCE_FLAG = f" {patience_argument(CFG.get('patience'))}"
# the report's opening page (Snakemake's global `report:` description), drawn from the folder
DESCRIPTION = RESULTS_LAYOUT.summary(DESCRIPTION_FILE)

# what a drawing that stops on a damaged input leaves
DRAWN_KEPT = f"the summary, figures and report in {RESULTS}/ are those drawn before"

# Functions (wildcards) -> files of the study that the redraw must wait for besides its runs and
# selected files (diagnostics.smk adds the replay files when the replay is asked for).
REGENERATE_INPUT_FUNCTIONS = []

# Snakemake's report() flag under another name: its parser reads `report` at the start of a line
# as a keyword, and formatters like to put a long call on its own line.
report_flag = report


def _figure_files(stems):
    return [RESULTS_LAYOUT.figure(s, ext) for s in stems for ext in ("pdf", "png")]


# Every file the regenerate job writes (`tabbench figures --results`, tabbench.report.redraw),
# as plain paths: what `figures` and `report` require (a report() flag belongs to the rule's
# outputs only; a flagged *input* would reach the report with an unresolved caption).
REGENERATE_FILES = (
    [RESULTS_LAYOUT.summary(name) for name in SUMMARY_FILES.values()]
    + [
        f"{RESULTS_LAYOUT.diagnostics_dir}/{name}"
        for name in {**DIAGNOSTIC_TABLE_FILES, **DIAGNOSTIC_OTHER_FILES}.values()
    ]
    + _figure_files(FIGURE_STEMS)
    + _figure_files(DIAGNOSTIC_FIGURE_STEMS)
    + [DESCRIPTION]
)


def regenerate_outputs():
    """REGENERATE_FILES but the description (a named output) as the rule's outputs: the HTML
    report shows claims.html (the paper's claims, checked; tabbench.summary.claims) and each figure's
    png, with the caption workflow/report/{stem}.rst, under the categories the opening page
    links to (tabbench.report.study_description); the other files are plain outputs. Every one
    is flagged update (kept_on_failure)."""
    captions = {
        RESULTS_LAYOUT.summary(SUMMARY_FILES["claims_html"]): (
            "claims",
            CLAIMS_CATEGORY,
        )
    }
    for stems, category in (
        (FIGURE_STEMS, FIGURES_CATEGORY),
        (DIAGNOSTIC_FIGURE_STEMS, DIAGNOSTICS_CATEGORY),
    ):
        captions.update({RESULTS_LAYOUT.figure(s, "png"): (s, category) for s in stems})
    out = []
    for path in REGENERATE_FILES[:-1]:  # the description is the last
        if path not in captions:
            out.append(kept_on_failure(path))
            continue
        name, category = captions[path]
        label = {"table": name} if category == CLAIMS_CATEGORY else {"figure": name}
        out.append(
            report_flag(
                kept_on_failure(path),
                caption=f"../report/{name}.rst",
                category=category,
                labels=label,
            )
        )
    return out


def regenerate_command(description):
    """The regenerate job's command (`tabbench figures`, without --jobs and its log
    redirection), for the folder of the description's path (an output): the results folder
    redrawn in place, its figures into its figures folder, with this invocation's redraw
    settings. The regenerate rule and `restop` (restop.smk) run this one command. A param of
    the rule, so that a changed setting redraws (no threads in it: Snakemake compares only
    params it can evaluate before the job runs)."""
    root = os.path.dirname(os.path.dirname(description))
    figures = ResultsLayout(root).figures_dir
    return (
        f"tabbench figures --results {shlex.quote(root)} --out {shlex.quote(root)}"
        f" --figures-dir {shlex.quote(figures)} --large-rows {FIGURES_LARGE_ROWS}"
        f" --rope {ROPE_PERCENT}{VIEW_FLAGS}{PATIENCE_FLAG}"
    )


_SAID = set()


def regenerate_input(wildcards):
    """What the regenerate job reads and waits for; the one branch of the workflow on what
    this invocation asked for (drawing, common.smk).

    * Drawn from the cache (`figures`, `report`, their files): the files the folder holds for
      its complete results (tabbench.report.redraw.regenerate_inputs), flagged before_update:
      Snakemake then looks for no job that makes them, so no data, training or selection job
      can be planned whatever preceded (a changed config or rule, data newer than the runs, an
      interrupted run), and it reruns this one job when one of them changed or the set did.
      Runs or selected files asked for beside them (`snakemake results/selected/m/d.parquet
      figures --forcerun train`) are plain inputs: made first, that pair alone.
    * Otherwise (the study, `all`; `diagnostics`): every runs and selected file of the study
      (and what REGENERATE_INPUT_FUNCTIONS add), so the figures come after the last training;
      plus, used as they are, the other files the folder holds. On a finished study both lists
      are the same files, so going from `snakemake` to `snakemake figures` and back reruns
      nothing (Snakemake's input trigger compares the sets).
    """
    cached = [
        f"{RESULTS}/{os.path.relpath(p, RESULTS)}" for p in regenerate_inputs(RESULTS)
    ]
    plan = drawing()
    if plan.from_cache:
        rebuilt = list(plan.rebuilt)
        if not cached and not rebuilt:
            # one line (an exception here would be a dozen of Snakemake's)
            sys.exit(f"tabbench: {nothing_to_draw(RESULTS)}")
        # a damaged file stops the run here, in one line naming it, before the job starts
        # (whose failure would leave the outputs as they were: kept_on_failure, common.smk);
        # not one that this invocation may write again
        try:
            check_parquet(
                p for p in cached if p.endswith(".parquet") and not plan.may_rebuild(p)
            )
        except UnreadableFileError as e:
            sys.exit(f"tabbench: {e}. Nothing was redrawn: {DRAWN_KEPT}")
        if "cache" not in _SAID:
            _SAID.add("cache")
            made = (
                f" after making {', '.join(rebuilt)}"
                if rebuilt
                else " (cached results only: nothing is trained)"
            )
            print(
                f"tabbench: figures from the {len(cached)} files of the complete (model, "
                f"dataset) results in {RESULTS}/{made}. Snakemake redraws only when they "
                "changed; to redraw an up-to-date folder anyway, add --forcerun regenerate",
                file=sys.stderr,
            )
        known = set(rebuilt)
        return rebuilt + [
            before_update(p) for p in cached if os.path.normpath(p) not in known
        ]
    study = train_targets(wildcards) + study_selected(wildcards)
    for fn in REGENERATE_INPUT_FUNCTIONS:
        study += fn(wildcards)
    study = list(dict.fromkeys(study))
    known = set(map(os.path.normpath, study))
    return study + [
        before_update(p) for p in cached if os.path.normpath(p) not in known
    ]


TARGET_FUNCTIONS.append(lambda wildcards: [RESULTS_LAYOUT.report])


def say_when_drawings_are_stale(log, success):
    """End hook: a run that left the folder's summary, claims, figures or report older than
    its results (one pair retrained: `snakemake results/selected/m/d.parquet --forcerun
    train`) says so last, with the command that redraws them
    (tabbench.report.redraw.stale_drawing); a run that drew them says nothing.
    """
    if not success:
        return
    why = stale_drawing(RESULTS)
    if why is not None:
        print(f"tabbench: {why}", file=sys.stderr, flush=True)


END_FUNCTIONS.append(say_when_drawings_are_stale)


# tabbench's stylesheet for the report: every page, the long opening one included, opens at its
# top (the file says why)
# (beside the rule files, wherever the Snakefile that includes them is)
REPORT_STYLESHEET = os.path.abspath(
    workflow.current_basedir.join("../report/report.css").get_path_or_uri(True)
)


def build_report(html_out, log_path, cfg):
    """Run `snakemake --report` on this workflow (target `regenerate`) into ``html_out``.

    A separate Snakemake invocation on the same workflow; it only reads metadata, hence
    --nolock. ``cfg`` is this invocation's own --config/--configfile values, handed over as a
    config file: the inner invocation then settles the same configuration (the folder's
    run_config.yaml and these overrides) and builds the same DAG. The report's stylesheet is
    REPORT_STYLESHEET. The HTML is written next to the target and renamed (atomic)."""
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
            "--report-stylesheet",
            REPORT_STYLESHEET,
            "regenerate",
        ]
        with open(log_path, "w") as fh:
            subprocess.run(cmd, check=True, stdout=fh, stderr=subprocess.STDOUT)
        shutil.move(html, html_out)
