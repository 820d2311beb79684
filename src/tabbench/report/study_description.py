"""The page the HTML report opens on: what a results folder's study is.

``snakemake --report`` lands on the workflow's global description (Snakemake's ``report:``
statement, workflow/rules/report.smk), which would otherwise be a bare graph of rule names. The
description must come from the folder itself — the settings it was produced with
(``run_config.yaml``), what it holds, the claims checked on it — so the regenerate job
(:func:`tabbench.report.redraw.regenerate`) writes it as reStructuredText into the summary
folder (:data:`DESCRIPTION_FILE`), and the report points at that file:

- what ran: preset, models, the datasets with results, splits, each model's configs and their
  epochs, seed, who wrote the settings and when (and, for a reduced-scale run such as the
  demo's, that it cannot judge the paper);
- at which scale: datasets (how many "large"), their rows, runs files, failed configs;
- the headline claims table (:func:`tabbench.summary.claims.reproduction_table`, as an RST
list-table);
- where each figure is: the report's categories and each figure's entry and files.

The report's category names are defined here (:data:`FIGURES_CATEGORY` ...) and used by the rule
files' ``report()`` flags, so the links of the page and the entries they point at cannot drift.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tabbench.core.io import write_text_atomic
from tabbench.core.layout import ResultsLayout
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.models.registry import model_label, order_models
from tabbench.plots import FIGURE_STEMS
from tabbench.settings.folder import ModelRun, ResultsFolder
from tabbench.summary.claims import reproduction_table
from tabbench.summary.rule_summary import paper_claims

#: the report categories the rules put the results in
#: (:meth:`tabbench.jobs.drawing.DrawingJobs.captioned_outputs`)
FIGURES_CATEGORY = "Figures"
DIAGNOSTICS_CATEGORY = "Diagnostics"
CLAIMS_CATEGORY = "Claims"

#: the page's file in the summary folder (``ResultsLayout.summary(DESCRIPTION_FILE)``)
DESCRIPTION_FILE = "study.rst"

#: the page's title (its first heading)
TITLE = "The study in this results folder"

#: how many dataset names the page lists before it gives only their number
MAX_LISTED_DATASETS = 40


def _rst(text: object) -> str:
    """Plain text as reStructuredText: no markup, reference or substitution read into it."""
    out = str(text)
    for ch in ("\\", "*", "`", "|", "_"):
        out = out.replace(ch, "\\" + ch)
    return out


def _literal(text: object) -> str:
    """``text`` as an inline literal (where a backslash is no escape)."""
    return f"``{text}``" if "``" not in str(text) else _rst(text)


def _list(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "none"


def _starts_a_list(cell: str) -> bool:
    """Whether RST would read ``cell`` as a list or an option list rather than text: a sign
    (``-3.2 %``, ``+0.5 %``), ``#``, or a ``*`` bullet (``**strong**`` is markup, kept)."""
    return cell[:1] in ("-", "+", "#") or cell[:2] in ("* ", "*")


def markdown_table_rst(table: str) -> str:
    """A Markdown pipe table (header, ``|---|`` separator, rows) as an RST ``list-table``; any
    other text (e.g. "No claim could be checked: ...") as it is, a paragraph. Cells keep their
    inline markup (``*em*`` and ``**strong**`` read the same in both, even at a cell's start); a
    cell that would start a list (``-3.2 %``, ``+0.5 %``) gets its first character escaped. Lines
    after the table's last row (a legend) follow it as a paragraph."""
    lines = [ln.strip() for ln in table.strip().splitlines() if ln.strip()]
    if len(lines) < 2 or not lines[0].startswith("|") or not lines[1].startswith("|-"):
        return table.strip()
    n_rows = next((i for i, ln in enumerate(lines[2:], 2) if not ln.startswith("|")), len(lines))
    rows = [[c.strip() for c in ln.strip("|").split(" | ")]
            for ln in [lines[0], *lines[2:n_rows]]]
    out = [".. list-table::", "   :header-rows: 1", "   :stub-columns: 1", ""]
    for row in rows:
        for i, cell in enumerate(row):
            text = "\\" + cell if _starts_a_list(cell) else (cell or "\\ ")
            out.append(("   * - " if i == 0 else "     - ") + text)
    # what follows the table (its legend) is a paragraph after it
    after = "\n".join(lines[n_rows:])
    return "\n".join(out) + (f"\n\n{after}" if after else "")


def _count(n: int, name: str) -> str:
    return f"{n:,} {name}" + ("" if n == 1 else "s")


def _model_run_text(run: ModelRun, rows: pd.DataFrame) -> str:
    """What one model trained per (dataset, split), in words: its default config and its
    random draws, each with its epochs (boosting rounds), from the folder's settings; "not
    recorded" for what they do not say. ``rows``: the model's selected rows, which say on which
    datasets the random draws have a selection (a copy merged from a tuned and a default-only
    folder has them on some datasets only)."""

    def epochs(n: int | None) -> str:
        return "epochs not recorded" if n is None else _count(n, run.epoch_name)

    if run.n_random is None:
        return f"configs not recorded (the default config: {epochs(run.default_epochs)})"
    if run.n_random == 0:
        return f"the default config only ({epochs(run.default_epochs)})"
    text = (f"the default config ({epochs(run.default_epochs)}) and {run.n_random} random "
            f"draws of its search space ({epochs(run.random_epochs)} each)")
    datasets = rows["dataset"].nunique()
    tuned = rows.loc[rows["regime"] == "tuned", "dataset"].nunique()
    if tuned < datasets:
        text += (f", on {tuned} of its {datasets} datasets (the others: the default config "
                 "only)")
    return text


def _what_ran(folder: ResultsFolder | None, selected: pd.DataFrame) -> list[str]:
    """The "What ran" section: the folder's settings (``folder``; None or a folder without
    ``run_config.yaml``: what its results say) for the models it holds results of."""
    models = order_models(selected["model"].unique())
    datasets = sorted(map(str, selected["dataset"].unique()))
    shown = (_list([_rst(d) for d in datasets]) if len(datasets) <= MAX_LISTED_DATASETS
             else f"{len(datasets)} (their list: the data stage's ``datasets.csv``)")
    lines = ["What ran", "--------", ""]
    config = None if folder is None else folder.config
    if config is None:
        lines += ["This folder has no ``run_config.yaml``: what follows is read from its "
                  "results.", ""]
        config = {"n_splits": int(selected["split"].nunique())}
    studied = order_models(config.get("models") or [])
    others = "" if not studied or set(studied) <= set(models) else (
        f" (its settings' study: {_list([_rst(model_label(m)) for m in studied])}; the "
        "others have no results here)")
    runs = ["", *(f"  - {_rst(model_label(m))}: "
                  f"{_model_run_text(folder.model_run(m), selected[selected['model'] == m])}"
                  for m in models), ""] if folder is not None and folder.config else []
    written = None if folder is None else folder.written
    return lines + [
        f"- **Preset**: {_literal(config.get('preset', 'not recorded'))}",
        f"- **Models**: {_list([_rst(model_label(m)) for m in models])}{others}",
        f"- **Datasets** (with results here): {shown}",
        f"- **Splits**: {config.get('n_splits')} per dataset (train/validation/test "
        "64/16/20 %)",
        "- **Configs and epochs** per (model, dataset, split):"
        + ("" if runs else " not recorded"),
        *runs,
        f"- **Seed**: {config.get('seed', 'not recorded')}",
        *([] if written is None else
          [f"- **Settings**: {_literal(Path(folder.settings_file).name)}, written "
           f"{_rst(written['when'])} by tabbench {_rst(written['tabbench'])}"]),
    ]


def _scale(selected: pd.DataFrame, meta: Mapping[str, Any]) -> list[str]:
    rows = selected.groupby("dataset")["n_rows"].first()
    failures = (meta.get("failures") or {}).get("configs", 0)
    lines = ["", "At which scale", "--------------", "",
             f"- **Datasets**: {int(meta.get('n_datasets', 0))}, of which "
             f"{int(meta.get('n_large_datasets', 0))} large (at least "
             f"{int(meta.get('large_rows', 0)):,} rows, setting ``figures_large_rows``)"]
    if len(rows):
        lines.append(f"- **Rows per dataset**: {int(rows.min()):,} to {int(rows.max()):,} "
                     f"(median {int(rows.median()):,})")
    if meta.get("n_runs_files") is not None:
        lines.append("- **Runs files** (one training job each: model × dataset × split): "
                     f"{int(meta['n_runs_files']):,}")
    lines.append(f"- **Failed configs** (left out of every selection): {failures}"
                 + (" (listed in ``summary/summary.md``)" if failures else ""))
    rules = meta.get("stopping_rules") or {}
    if rules:
        lines.append("- **Stopping rules** (setting ``patience``; docs/stopping_rules.md): "
                     + "; ".join(f"{_rst(model_label(m))} {_rst(r)}"
                                 for m, r in rules.items()))
    return lines


def _reduced(meta: Mapping[str, Any]) -> list[str]:
    """For a reduced-scale run (``meta``'s ``scale_note``:
    :func:`tabbench.settings.presets.scale_note`), a paragraph under the title that says it
    cannot judge the paper, so that its verdicts are not read as findings."""
    note = meta.get("scale_note")
    if not note:
        return []
    return ["", f"**Not a test of the paper** (preset {_literal(meta.get('preset'))}): "
                f"{_rst(note)}."]


def _claims(claims: pd.DataFrame) -> list[str]:
    return ["", "Headline claims", "---------------", "",
            "Each claim of the paper checked on this folder, per model and regime: the median "
            "relative difference to the method it is compared with (with its bootstrap "
            "interval), wins/ties/losses over datasets, the Bayesian signed-rank probabilities "
            "better/equivalent/worse, and the verdict. Every number and the verdict rule: "
            f"`{CLAIMS_CATEGORY}`_ (which also re-checks the stopping metrics' comparisons "
            "under each patience stopping rule, figure \"Stopping rules\").", "",
            markdown_table_rst(reproduction_table(paper_claims(claims)))]


def _figures(root: str, figures: str, figure_stems: Sequence[str],
             diagnostic_stems: Sequence[str]) -> list[str]:
    def entries(stems: Sequence[str]) -> list[str]:
        return [f"- `{stem}.png`_ (and {_literal(f'{figures}/{stem}.pdf')})" for stem in stems]

    return ["", "Where each figure is", "--------------------", "",
            f"In this report: `{FIGURES_CATEGORY}`_ (the paper's figures), "
            f"`{DIAGNOSTICS_CATEGORY}`_ (the chosen models' calibration, winner's curse and "
            f"regret) and `{CLAIMS_CATEGORY}`_. As files, PNG and PDF each, in "
            f"{_literal(figures + '/')}; the tables behind them in "
            f"{_literal(root + '/summary/')}.", "",
            "The paper's figures:", "", *entries(figure_stems), "",
            "Diagnostics of the chosen models (from the replayed ones: ``snakemake replay``):",
            "", *entries(diagnostic_stems)]


def describe_study(root: str, figures: str, folder: ResultsFolder | None,
                   selected: pd.DataFrame, frames: Mapping[str, Any],
                   figure_stems: Sequence[str], diagnostic_stems: Sequence[str]) -> str:
    """The report's opening page (module docstring) as reStructuredText. ``root``: the results
    folder as the reader names it (e.g. ``results``), ``figures`` the folder of its figures
    (e.g. ``results/figures``); ``folder``: the results folder opened (its settings: None or
    a folder without ``run_config.yaml`` is described from its results);
    ``selected``/``frames``: what the summary was built from and built
    (:func:`tabbench.summary.aggregate.aggregate_frames`); the figure stems in the order the
    page lists them.

    The links (`` `Figures`_ ``, `` `fig5_logloss_large.png`_ ``) resolve to the report's
    categories and entries, which Snakemake defines when it renders the page; the text is
    wrapped in a Jinja ``raw`` block because Snakemake renders the page as a template first."""
    meta = frames["meta"]
    baseline = _rst(meta.get("baseline", "Logloss+TS"))
    title = TITLE
    body = [title, "=" * len(title), "",
            "A reproduction of the tabular part of *Rethinking Early Stopping: Refine, Then "
            "Calibrate* (Berta et al., ICML 2025) by tabbench: every epoch of every config "
            "recorded, the best epoch and config chosen by each stopping metric, each method "
            f"compared on the test set with the baseline {baseline}. "
            f"Drawn from {_literal(root + '/')} by its regenerate job (``snakemake figures``).",
            *_reduced(meta), "", *_what_ran(folder, selected), *_scale(selected, meta),
            *_claims(frames["claims"]),
            *_figures(root, figures, figure_stems, diagnostic_stems)]
    return "{% raw %}\n" + "\n".join(body) + "\n{% endraw %}\n"


def write_description(results: str | Path, out: str | Path, selected: pd.DataFrame,
                      frames: Mapping[str, Any], figures_dir: str | Path) -> Path:
    """Write :func:`describe_study` of ``results`` (its settings) for the summary ``frames`` of
    ``selected``, whose figures are in ``figures_dir``, to ``out``'s summary folder
    (:data:`DESCRIPTION_FILE`), atomically; returns the path."""
    path = Path(ResultsLayout(out).summary(DESCRIPTION_FILE))
    path.parent.mkdir(parents=True, exist_ok=True)
    text = describe_study(os.path.normpath(out), os.path.normpath(figures_dir),
                          ResultsFolder.open(results), selected, frames, FIGURE_STEMS,
                          DIAGNOSTIC_FIGURE_STEMS)
    write_text_atomic(text, path)
    return path
