"""When refining pays: each (model, large dataset)'s test gain of TS-Ref.+TS over Logloss+TS
against its validation gain (``summary/heterogeneity.parquet``), one panel per regime, with the
ROPE shaded and the validation rule's threshold drawn (:mod:`tabbench.summary.validation_rule`):
points left of the threshold line are where validation promised a gain; points outside the
shaded band are where the test delivered one.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402  (after style sets the backend)
import numpy as np
import pandas as pd
from matplotlib.ticker import FixedLocator, FuncFormatter

from tabbench.plots.boxes import REGIME_TITLES
from tabbench.plots.style import (
    WIDTH,
    empty_panel,
    figure_style,
    lower_is_better,
    model_colour,
    model_label,
    order_models,
    save,
    symlog_percent_axis,
)

STEM = "figH_refining_gain"
#: the validation gain's linear range around 0 on the symlog axis (%)
VAL_LINTHRESH = 0.01


def _val_axis(ax, values) -> None:
    """Symlog x axis of validation gains (all ≤ 0): labelled once per decade."""
    ax.set_xscale("symlog", linthresh=VAL_LINTHRESH)
    v = [float(x) for x in values if np.isfinite(x)] or [0.0]
    decades = int(np.clip(np.ceil(np.log10(max(-min(v), 1.0))), 0, 2))  # −1 … −100 %
    ticks = [0.0] + [-(10.0 ** k) for k in range(-2, decades + 1)]
    ax.xaxis.set_major_locator(FixedLocator(sorted(ticks)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}".replace("-", "−")))
    ax.set_xlim(-(10.0 ** decades) * 1.3, VAL_LINTHRESH)


def fig_refining_gain(summary: dict, out_dir: str | Path) -> dict:
    """Draw the figure; returns the points drawn (read back from the artists), the threshold
    line's position and how many cells had no validation gain."""
    table: pd.DataFrame = summary.get("heterogeneity", pd.DataFrame())
    meta = summary["meta"]
    rule = meta.get("validation_rule") or {}
    rope = float(meta["rope_percent"])
    threshold = rule.get("threshold")
    large = (table[table["large"].astype(bool) & table["test_gain"].notna()]
             if len(table) else table)
    models = order_models(large["model"].unique()) if len(large) else []
    drawn, lines, unknown = [], [], 0
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 3.1), sharey=True)
        head = ("When refining pays: TS-Ref.+TS vs Logloss+TS on test and on validation "
                f"(large datasets, ≥ {int(meta['large_rows']):,} rows)")
        if threshold is not None and rule.get("hit_rate") is not None:
            edge = "0" if threshold == 0 else f"−{threshold:.2g}"
            head += (f"\nrule: validation gain ≥ {edge} % → expect |test gain| ≤ "
                     f"{rope:g} %; right out of sample on {rule['hit_rate']:.0f} % vs "
                     f"{rule['base_rate']:.0f} % ignoring validation ({rule['verdict']})")
        fig.suptitle(head)
        for ax, regime in zip(axes, ("default", "tuned"), strict=True):
            data = large[large["regime"] == regime] if len(large) else large
            known = data[data["val_gain"].notna()] if len(data) else data
            unknown += len(data) - len(known)
            missing = f"; {len(data) - len(known)} unknown" if len(data) > len(known) else ""
            ax.set_title(f"{REGIME_TITLES[regime]} (n = {len(known)}{missing})")
            if known.empty:
                empty_panel(ax, "No large dataset with both gains in this regime")
                continue
            ax.axhspan(-rope, rope, color="0.92", zorder=0, lw=0)
            for model in models:
                d = known[known["model"] == model].sort_values("dataset")
                if d.empty:
                    continue
                sc = ax.scatter(d["val_gain"], d["test_gain"], s=14, alpha=0.8, linewidths=0,
                                color=model_colour(model, models), label=model_label(model),
                                zorder=3)
                off = sc.get_offsets()
                drawn.append({"regime": regime, "model": model,
                              "datasets": d["dataset"].tolist(),
                              "val_gain": off[:, 0].astype(float).tolist(),
                              "test_gain": off[:, 1].astype(float).tolist()})
            _val_axis(ax, known["val_gain"])
            symlog_percent_axis(ax, large["test_gain"])
            ax.axhline(0, color="0.5", lw=0.8, ls="--", zorder=1)
            if threshold is not None:
                line = ax.axvline(-threshold, color="0.2", lw=1.0, ls=":", zorder=2)
                lines.append(float(line.get_xdata()[0]))
            ax.set_xlabel("Validation gain (%; ← larger)")
            ax.yaxis.set_tick_params(labelleft=True)
            ax.grid(color="0.95", lw=0.6, zorder=0)
        axes[0].set_ylabel(lower_is_better("Rel. diff. in test logloss (%)"))
        if drawn:
            handles, labels = [], []
            for ax in axes:
                for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
                    if lab not in labels:
                        handles.append(h)
                        labels.append(lab)
            fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False,
                       bbox_to_anchor=(0.5, -0.01), markerscale=1.4)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        files = save(fig, out_dir, STEM)
    return {"files": files, "points": drawn, "threshold_lines": lines, "unknown": unknown}
