"""The stopping rules' figures (docs/stopping_rules.md), drawn from ``summary/rules.parquet``
(:mod:`tabbench.summary.rule_summary`):

* ``figR_compute_quality`` — per model (rows) and regime (columns): for every stopping metric
  (+TS, one colour) and rule (one marker, named in the legend in each model's unit; the
  metric's rules joined by a line), the median
  fraction of epochs (boosting rounds) trained against the median relative test logloss after
  TS to the baseline under the whole-run rule (all datasets);
* ``figR_regret_by_rule`` — the same panels: per stopping metric and rule, the median regret
  against the test oracle over every (config, epoch) of the regime, in % of the oracle.

A summary without patience rules (selections that hold the ``best`` rule only, e.g. a
published copy's files) draws a panel saying so.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402  (after style sets the backend)
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from tabbench.models.registry import epoch_name
from tabbench.plots.boxes import REGIME_TITLES
from tabbench.plots.style import (
    WIDTH,
    empty_panel,
    figure_style,
    lower_is_better,
    model_label,
    order_models,
    save,
)
from tabbench.summary.methods import BASELINE

COMPUTE_STEM = "figR_compute_quality"
REGRET_STEM = "figR_regret_by_rule"
REGIMES = ("default", "tuned")
#: the subset the figures draw (the table has the large datasets too)
SUBSET = "all"
_MARKERS = ("o", "v", "s", "^", "D", "P", "X", "*")
_NO_RULES = ("No patience rule in these selections (they hold the whole-run rule only, "
             "or config patience: []). A folder with its runs redraws them with "
             "`snakemake figures` (nothing is trained)")


def _table(summary: dict) -> pd.DataFrame:
    rules = summary.get("rules")
    if rules is None or len(rules) == 0:
        return pd.DataFrame(columns=["subset", "model", "regime", "method", "choice"])
    return rules[rules["subset"] == SUBSET]


def _colours(table: pd.DataFrame) -> dict[str, tuple]:
    """method -> colour (tab10, in the table's method order)."""
    cmap = plt.get_cmap("tab10")
    return {m: cmap(i % 10) for i, m in enumerate(dict.fromkeys(table["method"]))}


def _rank(g: pd.DataFrame) -> dict[str, int]:
    """choice -> its position among one model's rules (0 = best, then increasing patience):
    the marker, and the x position of the regret figure."""
    return {c: i for i, c in enumerate(dict.fromkeys(g["choice"]))}


def _rule_label(choice: str, unit: str) -> str:
    """A rule as the legend names it: ``whole run (best epoch)``, or the patience in the
    model's unit's last word (``patience 20 rounds``, ``patience 8 epochs``)."""
    if choice == "best":
        return "whole run (best epoch)"
    if choice.startswith("patience "):
        return f"{choice} {unit.split()[-1]}s"
    return choice


def _joined(labels: dict[str, None]) -> str:
    """The rules one marker stands for across models, ``patience 20 rounds / 8 epochs``."""
    out: list[str] = []
    for label in labels:
        out.append(label.removeprefix("patience ") if out and label.startswith("patience ")
                   and out[0].startswith("patience ") else label)
    return " / ".join(out)


def _legend_handles(colours: dict[str, tuple], markers: dict[int, dict[str, None]]
                    ) -> tuple[list, list]:
    """The legend's two rows: a line per stopping metric (its colour), and a marker per rule
    position with the rules it stands for in each model's unit (``patience 20 rounds / 8
    epochs``: the boosters' and the networks' first patience share a marker)."""
    metrics = [Line2D([], [], color=colours[m], marker="o", lw=0.8, label=m) for m in colours]
    rules = [Line2D([], [], color="0.45", marker=_MARKERS[i % len(_MARKERS)], ls="none",
                    markeredgecolor="black" if i == 0 else "none", markeredgewidth=0.5,
                    label=_joined(markers[i]))
             for i in sorted(markers)]
    return metrics, rules


def _panels(summary: dict, out_dir: str | Path, stem: str, value: str, ylabel: str, title: str,
            x_fraction: bool) -> dict:
    """One panel per (model, regime): a point per (stopping metric, rule) at x = the fraction
    trained (``x_fraction``) or the rule's position, y = ``value`` of the rules table. The
    legend names every colour (stopping metric) and every marker (rule) drawn; returns the
    points and the legend's labels."""
    table = _table(summary)
    models = order_models(table["model"].unique()) if len(table) else []
    colours = _colours(table)
    markers: dict[int, dict[str, None]] = {}  # marker position -> the rules it stands for
    drawn = []
    with figure_style():
        rows = max(1, len(models))
        fig, axes = plt.subplots(rows, 2, figsize=(WIDTH, 0.8 + 2.4 * rows), squeeze=False)
        fig.suptitle(title)
        has_patience = bool(len(table)) and (table["rule"] != "best").any()
        if not has_patience:
            for ax in axes.ravel():
                ax.set_visible(False)
            axes[0, 0].set_visible(True)
            empty_panel(axes[0, 0], _NO_RULES)
        for r, model in enumerate(models if has_patience else []):
            unit = epoch_name(model)
            for c, regime in enumerate(REGIMES):
                ax = axes[r, c]
                g = table[(table["model"] == model) & (table["regime"] == regime)]
                ax.set_title(f"{model_label(model)}, {REGIME_TITLES[regime].lower()}")
                if g.empty:
                    empty_panel(ax, f"No {regime} selections for this model")
                    continue
                rank = _rank(g)
                for method, gm in g.groupby("method", sort=False):
                    xs = (gm["fraction_median"] if x_fraction
                          else gm["choice"].map(rank)).to_numpy(dtype=float)
                    ys = gm[value].to_numpy(dtype=float)
                    order = np.argsort(xs, kind="stable")
                    ax.plot(xs[order], ys[order], "-", color=colours[method], lw=0.8,
                            alpha=0.6, zorder=1)
                    for x, y, choice in zip(xs, ys, gm["choice"], strict=True):
                        markers.setdefault(rank[choice], {})[_rule_label(choice, unit)] = None
                        ax.scatter([x], [y], color=colours[method], s=22, zorder=2,
                                   marker=_MARKERS[rank[choice] % len(_MARKERS)],
                                   edgecolors="black" if choice == "best" else "none",
                                   linewidths=0.5)
                        drawn.append({"model": model, "regime": regime, "method": method,
                                      "choice": choice, "x": float(x), "y": float(y)})
                ax.axhline(0, color="0.5", lw=0.8, ls="--", zorder=0)
                ax.grid(color="0.92", lw=0.6, zorder=0)
                if x_fraction:
                    ax.set_xlabel(f"fraction of {unit}s trained (median)")
                    ax.set_xlim(0, 1.05)
                else:
                    ax.set_xticks(range(len(rank)))
                    ax.set_xticklabels([c.replace("patience ", "p=") for c in rank],
                                       fontsize=7)
                    ax.set_xlabel(f"stopping rule (patience in {unit}s)")
                if c == 0:
                    ax.set_ylabel(lower_is_better(ylabel))
        legend = []
        if has_patience:
            row = 0.2 / fig.get_figheight()  # one legend row at 7 pt, in figure height
            metrics, rules = _legend_handles(colours, markers)
            # a row holds about 110 characters at 7 pt across the figure's width
            n_rows = [max(1, -(-sum(len(h.get_label()) + 6 for h in hs) // 110))
                      for hs in (rules, metrics)]
            bottom = 0.0
            for handles, lines in zip((rules, metrics), n_rows, strict=True):  # rules lowest
                fig.legend(handles=handles, loc="lower center", ncol=-(-len(handles) // lines),
                           frameon=False, fontsize=7, bbox_to_anchor=(0.5, bottom))
                bottom += lines * row
            legend = [h.get_label() for h in (*metrics, *rules)]
            fig.tight_layout(rect=(0, bottom + 0.3 * row, 1, 1))
        else:
            fig.tight_layout()
        files = save(fig, out_dir, stem)
    return {"files": files, "points": drawn, "legend": legend}


def fig_compute_quality(summary: dict, out_dir: str | Path) -> dict:
    """Relative test logloss after TS against the fraction of epochs trained, one point per
    (stopping metric, rule); returns the points drawn."""
    baseline = summary["meta"].get("baseline") or BASELINE
    return _panels(summary, out_dir, COMPUTE_STEM, "rel_median",
                 f"test logloss after TS vs\n{baseline} (best epoch), median %",
                 "Compute vs quality of the stopping rules (all datasets; edged circle: the "
                 "whole run, then increasing patience)", True)


def fig_regret(summary: dict, out_dir: str | Path) -> dict:
    """Median regret (% of the test oracle) per stopping metric and rule; returns the points."""
    return _panels(summary, out_dir, REGRET_STEM, "regret_median",
                 "regret in test logloss\nafter TS, median % of oracle",
                 "Regret of each stopping rule against the test-optimal (config, epoch) "
                 "(all datasets)", False)
