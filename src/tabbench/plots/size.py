"""Fig. G.1: relative difference TS-Ref.+TS vs Logloss+TS against dataset size.

The paper's point: refinement-based stopping helps most on large datasets, where the validation
set is big enough for a reliable TS fit; on small ones the two are close or noisy.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd

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
from tabbench.summary.methods import BASELINE

METHOD = "TS-Ref.+TS"


def fig_g1(summary: dict, out_dir: str | Path, method: str = METHOD) -> dict:
    rel: pd.DataFrame = summary["relative"]
    large_rows = int(summary["meta"]["large_rows"])
    sub = rel[(rel["metric"] == "logloss") & (rel["method"] == method)]
    models = order_models(sub["model"].unique()) if len(sub) else []
    drawn = []
    with figure_style():
        fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 3.0), sharey=True)
        n = int(sub["dataset"].nunique())
        baseline = summary["meta"].get("baseline") or BASELINE
        fig.suptitle(f"Fig. G.1: test logloss of {method} relative to {baseline} "
                     f"vs dataset size (n = {n} datasets)")
        for ax, regime in zip(axes, ("default", "tuned"), strict=False):
            data = sub[sub["regime"] == regime]
            ax.set_title(f"{REGIME_TITLES[regime]} (n = {data['dataset'].nunique()})")
            if data.empty:
                empty_panel(ax, "No selected results for this regime")
                continue
            for model in models:
                d = data[data["model"] == model].sort_values("dataset")
                if d.empty:
                    continue
                sc = ax.scatter(d["n_rows"], d["rel_diff"], s=9, alpha=0.75, linewidths=0,
                                color=model_colour(model, models), label=model_label(model))
                off = sc.get_offsets()
                drawn.append({"regime": regime, "model": model, "datasets": d["dataset"].tolist(),
                              "n_rows": off[:, 0].astype(float).tolist(),
                              "values": off[:, 1].astype(float).tolist()})
            ax.set_xscale("log")
            symlog_percent_axis(ax, sub["rel_diff"])
            ax.axhline(0, color="0.5", lw=0.8, ls="--", zorder=0)
            ax.axvline(large_rows, color="0.6", lw=0.8, ls=":", zorder=0)
            ax.set_xlabel("Dataset size (rows, log scale)")
            ax.yaxis.set_tick_params(labelleft=True)
            ax.grid(color="0.93", lw=0.6, zorder=0)
        axes[0].set_ylabel(lower_is_better("Rel. diff. in test logloss (%)"))
        if drawn:
            handles, labels = axes[0].get_legend_handles_labels()
            if not handles:
                handles, labels = axes[1].get_legend_handles_labels()
            fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False,
                       bbox_to_anchor=(0.5, -0.01), markerscale=1.6)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        files = save(fig, out_dir, "figG1_logloss_vs_size")
    return {"files": files, "points": drawn, "n_datasets": n}
