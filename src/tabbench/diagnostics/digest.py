"""``diagnostics.md``: the Markdown digest of the diagnostic tables, one section per table.

Rendered from the tables alone (:func:`markdown`), so a published copy of a folder, which keeps
the tables but no runs files, renders the same digest.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from tabbench.core.markdown import cell, markdown_table
from tabbench.diagnostics import calibrators as cal
from tabbench.diagnostics.selection_bias import MAIN_TARGET


def _pct(x: float) -> str:
    return cell(x, lambda v: f"{100 * v:.1f}%")


def _fmt(x: float, spec: str = "+.3f") -> str:
    return cell(x, spec)


def _section(title: str, notes: Sequence[str], header: Sequence[str], n_text: int,
             rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown section: title, notes, then a table whose first ``n_text`` columns are text
    (left-aligned) and the others numbers (right-aligned)."""
    lines = [f"## {title}", ""]
    for note in notes:
        lines += [note, ""]
    lines.append(markdown_table(header, rows, align="l" * n_text + "r" * (len(header) - n_text)))
    return lines + [""]


def markdown(t: dict[str, Any]) -> str:
    """``diagnostics.md``: the replay counts, then one table per diagnostic (those present)."""
    meta = t["meta"]
    lines = ["# Diagnostics of the chosen models (docs/diagnostics.md)", "",
             f"{meta['n_datasets']} datasets, {meta['n_splits']} splits, models "
             f"{', '.join(meta['models']) or '–'}. Replay files used: {meta['replay']['used']},"
             f" stale (older than the records, left out): {meta['replay']['stale']}, "
             f"missing: {meta['replay']['missing']}.", ""]
    cs = t["cost_summary"]
    if len(cs):
        lines += _section(
            "Replay cost (fraction of the study's training)",
            ["Measured: the replay's wall time; CPU: its process CPU time; from records: the "
             "study's own recorded time up to the replayed epochs (same machine and load as the "
             "study). All divided by the study's recorded training time."],
            ["model", "splits", "replay s", "study training s", "measured", "CPU",
             "from records"], 1,
            ([r.model, str(r.n_splits), f"{r.replay_seconds:.1f}",
              f"{r.study_train_seconds:.1f}", _pct(r.fraction_measured), _pct(r.fraction_cpu),
              _pct(r.fraction_recorded)] for r in cs.itertuples()))
    opt = t["optimism"]
    if len(opt):
        lines += _section(
            "Optimism of the selection (test − validation, paired metric)",
            ["Mean over datasets of the per-dataset mean over splits."],
            ["model", "regime", "stopping", "n", "mean", "median", "q25", "q75"], 3,
            ([r.model, r.regime, r.stopping, str(r.n), _fmt(r.mean), _fmt(r.median),
              _fmt(r.q25), _fmt(r.q75)] for r in opt.itertuples()))
    curve = t["curve_summary"]
    if len(curve):
        ks = sorted(curve["k"].unique())
        lines += _section(
            "Winner's curse: mean optimism vs configs searched (tuned)", [],
            ["model", "stopping", *(f"k={k}" for k in ks)], 2,
            ([model, stopping, *(_fmt(g.set_index("k")["mean"].get(k, np.nan)) for k in ks)]
             for (model, stopping), g in curve.groupby(["model", "stopping"], sort=True)))
    rg = t["regret"]
    if len(rg):
        sub = rg[(rg["target"] == MAIN_TARGET) & (rg["kind"] == "rel_regret")]
        lines += _section(
            f"Regret in test {MAIN_TARGET} (% of the oracle)", [],
            ["model", "regime", "stopping", "n", "mean", "median", "q75"], 3,
            ([r.model, r.regime, r.stopping, str(r.n), _fmt(r.mean, ".2f"),
              _fmt(r.median, ".2f"), _fmt(r.q75, ".2f")] for r in sub.itertuples()))
    cb = t["calibrators_summary"]
    if len(cb):
        lines += _section(
            "Calibrators vs TS: median relative difference (%) of the test score", [],
            ["model", "regime", "metric", "stopping", "calibrator", "n", "median",
             "W/L vs TS"], 5,
            ([r.model, r.regime, r.metric, r.stopping, r.calibrator, str(r.n),
              _fmt(r.median, "+.2f"), f"{r.wins}/{r.losses}"]
             for r in cb[cb["calibrator"] != cal.REFERENCE].itertuples()))
    ece = t["reliability_ece"]
    if len(ece):
        lines += _section(
            "Test ECE of the chosen models, raw and after TS",
            ["ECE: 15 equal-width bins of the top-label confidence; smECE: top-label smooth "
             "ECE (relplot). Mean per dataset = mean over datasets of the mean over splits; "
             "pooled = the ECE of the bins pooled with equal weight per dataset."],
            ["scope", "model", "regime", "stopping", "calibration", "ECE mean per dataset",
             "ECE pooled", "smECE mean per dataset"], 5,
            ([r.scope, r.model, r.regime, r.stopping, r.calibration, _fmt(r.ece_mean, ".4f"),
              _fmt(r.ece_pooled, ".4f"), _fmt(r.smece_mean, ".4f")] for r in ece.itertuples()))
    return "\n".join(lines)
