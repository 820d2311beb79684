"""The checked claims as text: ``claims.md`` and ``claims.html`` (the verdict rule, a count of
verdicts, a row per claim, model and regime) and the reproduction page's one-table summary
(:func:`reproduction_table`)."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import numpy as np
import pandas as pd

from tabbench.core.markdown import MISSING, cell, markdown_table
from tabbench.models.registry import model_label, order_models
from tabbench.summary import comparisons as cmp
from tabbench.summary.claims.judge import (
    BORDERLINE,
    DECIDES,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    VERDICT_LEGEND,
    VERDICT_RULE,
    VERDICTS,
)

#: the claims table's columns (Markdown and HTML alike)
TABLE_HEADER = ("figure", "claim (paper)", "model", "regime", "metric", "method vs", "subset",
                "n", "median %", "95 % CI", "q10–q90 %", "W/T/L", "p", "P(<) / P(≈) / P(>)",
                "MC s.e. (draws)", "verdict")
#: how each posterior probability is written in a table
_PROB_LABELS = {"p_better": "P(<)", "p_equivalent": "P(≈)", "p_worse": "P(>)"}


def _failures_sentence(failures: dict | None) -> str:
    if not failures or not failures.get("configs"):
        return ""
    n_pairs = len(failures.get("by", []))
    return (f" {failures['configs']} configs failed in {n_pairs} (model, dataset) pairs and are "
            "left out (summary.md lists them with their reasons).")


def _preamble(large_rows: int, rope: float, failures: dict | None = None) -> list[str]:
    return [f"Relative differences in % of the method to the comparison, per dataset (mean over "
            f"splits first; per (dataset, split) where the paper plots splits), clipped to "
            f"[−100, 100]; lower = the method's test metric (or chosen epoch, Fig. G.5) is "
            f"lower. \"large\" = datasets with ≥ {large_rows:,} rows. W/T/L = datasets where "
            f"the method is lower / equal / higher. 95 % CI: bootstrap interval of the median "
            f"(datasets resampled, their splits inside). p: the claim's frequentist test "
            f"(Wilcoxon signed-rank, the paper's; Mann–Whitney for large vs small; Friedman "
            f"for ranks). P(<) / P(≈) / P(>): Bayesian signed-rank test (baycomp) that the "
            f"method is lower by more than the ROPE of {rope:g} %, within it, or higher; MC s.e.: "
            f"their Monte Carlo standard errors √(p(1 − p)/draws) and the posterior samples "
            f"drawn ({cmp.BAYES_SAMPLES:,}, more where the verdict's probability is near a "
            f"threshold)."
            + _failures_sentence(failures),
            f"Verdict rule (`tabbench.summary.claims.verdict`): {VERDICT_RULE}"]


def study_sentence(meta: Mapping[str, Any]) -> str | None:
    """Which preset a summary's claims come from and, for a reduced-scale run, that they
    cannot judge the paper (``meta``'s ``preset`` and ``scale_note``, from the folder's
    settings: :func:`tabbench.settings.presets.scale_note`), so that a demo's "not reproduced"
    does not read as a finding; None for a summary that does not say (one made from selected
    files alone, without their folder)."""
    if "preset" not in meta:
        return None
    preset = meta["preset"] or "not recorded (the folder has no run_config.yaml)"
    note = meta.get("scale_note")
    if note:
        return f"Preset: {preset}. Not a test of the paper: {note}."
    return f"Preset: {preset}."


def _verdict_counts(claims: pd.DataFrame) -> str:
    counts = claims["verdict"].value_counts()
    return ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)


def _number(x: float, fmt: str) -> str:
    return cell(x, fmt)


def _cells(r) -> list[str]:
    """One claims row as the table's cells (text; the verdict last)."""
    subset = r.subset if r.unit == "dataset" else f"{r.subset}, per split"
    median = _number(r.median, "+.2f")
    if r.subset == "large_vs_small":
        subset = f"large vs small (n = {r.n}/{r.n_other})"
        median = f"{_number(r.median, '+.2f')} vs {_number(r.median_other, '+.2f')}"
    if r.kind == "best_ranked":
        median = (f"mean ranks {_number(r.mean_rank, '.2f')}, {_number(r.mean_rank_other, '.2f')}"
                  f" (best other {_number(r.best_other_rank, '.2f')}, CD {_number(r.cd, '.2f')})")
    interval = ("–" if not np.isfinite(r.median_lo)
                else f"[{r.median_lo:+.2f}, {r.median_hi:+.2f}]")
    probs = ("–" if not np.isfinite(r.p_better)
             else f"{r.p_better:.2f} / {r.p_equivalent:.2f} / {r.p_worse:.2f}")
    errors = ("–" if not np.isfinite(r.p_better) else
              f"{r.se_better:.2g} / {r.se_equivalent:.2g} / {r.se_worse:.2g} ({int(r.draws):,})")
    wtl = f"{r.wins}/{r.ties}/{r.losses}"
    if r.kind == "hit_rate":  # a rule's hit rate against ignoring validation (cells, not %)
        median = f"hit {_number(r.median, '.0f')} % vs {_number(r.median_other, '.0f')} %"
        subset = f"{r.subset}, {r.n_datasets} datasets, left out one at a time" + (
            f"; val_gain unknown on {r.n_other} more cells" if r.n_other else "")
    if r.kind == "sometimes_better":
        wtl += f" ({r.wins_beyond_rope} beyond ROPE)"
    quantiles = "–" if not np.isfinite(r.q10) else f"{r.q10:+.1f} – {r.q90:+.1f}"
    return [r.figure, r.statement, r.model, r.regime, r.metric, f"{r.method} vs {r.versus}",
            subset, str(r.n), median, interval, quantiles, wtl, _number(r.p_wilcoxon, ".2g"),
            probs, errors, r.verdict]


def claims_markdown(claims: pd.DataFrame, large_rows: int,
                    rope: float = cmp.ROPE_PERCENT, failures: dict | None = None,
                    study: str | None = None) -> str:
    """``claims.md``: the run's preset (``study``: :func:`study_sentence`, in bold where the run
    cannot judge the paper), the verdict rule, a count of verdicts, and one table row per
    claim, model and regime with the paper's statement beside our numbers (and how many
    configs failed, from ``meta.json``'s ``failures``)."""
    intro, rule = _preamble(large_rows, rope, failures)
    lines = ["# The paper's tabular claims, checked on these results", ""]
    if study:
        lines += [f"**{study}**" if "Not a test of the paper" in study else study, ""]
    lines += [intro, "", rule, ""]
    if claims.empty:
        return "\n".join(lines + ["No claim could be checked: no selected results.", ""])
    rows = []
    for r in claims.itertuples():
        cells = _cells(r)
        cells[-1] = f"**{cells[-1]}**"
        rows.append(cells)
    lines += [_verdict_counts(claims), "",
              markdown_table(TABLE_HEADER, rows, align="l" * 7 + "r" * 8 + "l")]
    return "\n".join(lines + [""])


#: background of a verdict cell in the HTML table
_VERDICT_COLOURS = {REPRODUCED: "#d9f0d3", NOT_REPRODUCED: "#f4cccc", INCONCLUSIVE: "#eeeeee",
                    BORDERLINE: "#fff2cc"}


def claims_html(claims: pd.DataFrame, large_rows: int, rope: float = cmp.ROPE_PERCENT,
                failures: dict | None = None, study: str | None = None) -> str:
    """``claims.html``: the same page as :func:`claims_markdown`, as a self-contained HTML page
    (the HTML report embeds it; verdicts coloured)."""

    intro, rule = _preamble(large_rows, rope, failures)
    rule = rule.replace("`", "")
    head = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\">"
            "<title>The paper's tabular claims</title><style>"
            "body{font-family:sans-serif;font-size:13px;margin:1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:3px 6px;"
            "vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;"
            "white-space:nowrap}</style></head><body>")
    parts = [head, "<h2>The paper's tabular claims, checked on these results</h2>"]
    if study:
        parts.append(f"<p><b>{escape(study)}</b></p>" if "Not a test of the paper" in study
                     else f"<p>{escape(study)}</p>")
    parts += [f"<p>{escape(intro)}</p>", f"<p>{escape(rule)}</p>"]
    if claims.empty:
        parts.append("<p>No claim could be checked: no selected results.</p>")
    else:
        parts.append(f"<p><b>{escape(_verdict_counts(claims))}</b></p><table><tr>"
                     + "".join(f"<th>{escape(h)}</th>" for h in TABLE_HEADER) + "</tr>")
        numeric = {TABLE_HEADER.index(h) for h in ("n", "median %", "95 % CI", "q10–q90 %",
                                                    "W/T/L", "p", "P(<) / P(≈) / P(>)",
                                                    "MC s.e. (draws)")}
        for r in claims.itertuples():
            cells = _cells(r)
            row = "".join(f"<td class=\"num\">{escape(c)}</td>" if i in numeric
                          else f"<td>{escape(c)}</td>" for i, c in enumerate(cells[:-1]))
            colour = _VERDICT_COLOURS.get(r.verdict, "#ffffff")
            row += f"<td style=\"background:{colour}\"><b>{escape(r.verdict)}</b></td>"
            parts.append(f"<tr>{row}</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _short_cell(r) -> str:
    """One (claim, model, regime) in a few numbers and the verdict; a cell without the datasets
    its numbers need says so instead of a row of dashes and zeros."""
    if r.kind == "best_ranked" and not np.isfinite(r.mean_rank):
        return f"too few datasets to rank: **{r.verdict}**"
    if r.subset != "large_vs_small" and not int(r.n) > 0:
        return f"no datasets: **{r.verdict}**"
    if r.kind == "best_ranked":
        core = (f"ranks {_number(r.mean_rank, '.1f')}, {_number(r.mean_rank_other, '.1f')} "
                f"(best other {_number(r.best_other_rank, '.1f')}, CD {_number(r.cd, '.1f')})")
    elif r.subset == "large_vs_small":
        core = (f"{_number(r.median, '+.2f')} vs {_number(r.median_other, '+.2f')} %, "
                f"p {_number(r.p_wilcoxon, '.2g')}")
    else:
        core = f"{_number(r.median, '+.2f')} %"
        if np.isfinite(r.median_lo):
            core += f" [{r.median_lo:+.1f}, {r.median_hi:+.1f}]"
        core += f", {r.wins}/{r.ties}/{r.losses}"
        if np.isfinite(r.p_better):
            core += f", P {r.p_better:.2f}/{r.p_equivalent:.2f}/{r.p_worse:.2f}"
            core += _drawn_more(r)
        if r.unit == "split":  # the points are splits: say how many datasets they come from
            core += f", {int(r.n_datasets)} datasets"
    return f"{core}: **{r.verdict}**"


def _drawn_more(r) -> str:
    """Where the test drew more than its first samples (the probability the verdict rests on
    was near a threshold): that probability to four decimals with its Monte Carlo standard
    error and the samples drawn, which two decimals cannot show; else nothing."""
    if r.kind not in DECIDES or not int(r.draws) > cmp.BAYES_SAMPLES:
        return ""
    name = DECIDES[r.kind]
    p, se = getattr(r, name), getattr(r, name.replace("p_", "se_"))
    return f" ({_PROB_LABELS[name]} {p:.4f} ± {se:.4f}, {int(r.draws):,} draws)"


def reproduction_table(claims: pd.DataFrame) -> str:
    """The claims as one Markdown table, a row per claim and a column per (model, regime)
    present: median relative difference with its bootstrap interval, W/T/L, P(<)/P(≈)/P(>) (the
    deciding one with its Monte Carlo error where the test drew more) and the verdict, and the
    verdicts' legend under it. What docs/reproduction.md embeds as its generated table ``claims``
    (:mod:`tabbench.report.page_tables`; a test regenerates it from the shipped results and
    compares)."""

    if claims.empty:
        return "No claim could be checked: no selected results."
    models = order_models(claims["model"].unique())
    cols = [(m, reg) for m in models for reg in ("default", "tuned")
            if ((claims["model"] == m) & (claims["regime"] == reg)).any()]
    head = ["paper (figure): claim"] + [f"{model_label(m)} {reg}" for m, reg in cols]
    table = []
    for claim in dict.fromkeys(claims["claim"]):
        rows = claims[claims["claim"] == claim]
        first = rows.iloc[0]
        where = "all datasets" if first["subset"] == "all" else (
            "large vs small" if first["subset"] == "large_vs_small" else "large datasets")
        if first["unit"] == "split":
            where += ", per split"
        lo, hi = int(rows["n"].min()), int(rows["n"].max())
        label = (f"{first['figure']}: {first['statement']} (*{first['metric']}*, {where}, "
                 f"n = {lo if lo == hi else f'{lo}–{hi}'})")
        cells = []
        for m, reg in cols:
            hit = rows[(rows["model"] == m) & (rows["regime"] == reg)]
            cells.append(MISSING if hit.empty else _short_cell(next(hit.itertuples())))
        table.append([label, *cells])
    return markdown_table(head, table) + "\n\n" + VERDICT_LEGEND
