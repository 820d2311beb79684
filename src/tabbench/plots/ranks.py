"""Critical-difference diagrams of the stopping methods (Demšar 2006): one panel per (subset,
model, regime) of the summary's ranks table (:func:`tabbench.summary.tables.rank_table`).

Each panel places the stopping methods (each +TS) on their mean rank over datasets (1 = lowest
test logloss after TS); methods joined by a thick bar are not significantly different by
Nemenyi's test, and the CD segment above shows that critical difference. The drawing is
``autorank``'s own (``plot_stats``), fed with the ranks the summary holds, so the figure
regenerates from ``results/summary/`` alone like every other one.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from autorank import plot_stats
from autorank._util import RankResult

from tabbench.plots.style import (
    WIDTH,
    empty_panel,
    figure_style,
    model_label,
    order_models,
    save,
    tight_layout_below,
)

STEM = "figG2_stopping_ranks"
_SUBSET_TITLES = {"all": "all datasets", "large": "large datasets"}


def _rank_result(panel: pd.DataFrame):
    """autorank's result for one panel, rebuilt from the ranks table (what its CD drawing
    reads: the mean ranks, sorted, and the critical difference)."""
    ranks = panel.set_index("method")["mean_rank"].sort_values()
    first = panel.iloc[0]
    fields = dict.fromkeys(RankResult._fields)
    fields.update(rankdf=pd.DataFrame({"meanrank": ranks}), pvalue=float(first["p_friedman"]),
                  cd=float(first["cd"]), omnibus="friedman", posthoc="nemenyi",
                  alpha=float(first["alpha"]), num_samples=int(first["n"]))
    return RankResult(**fields)


def cd_diagrams(summary: dict, out_dir: str | Path) -> dict:
    """One CD diagram per (subset, model, regime) of the ranks table; returns the mean ranks
    and critical difference drawn per panel."""
    ranks: pd.DataFrame = summary.get("ranks", pd.DataFrame())
    keys = ([] if ranks is None or ranks.empty else
            list(ranks[["subset", "model", "regime"]].drop_duplicates().itertuples(
                index=False, name=None)))
    # the models in the order of every other figure (the table's order is the groupby's)
    rank_of = {m: i for i, m in enumerate(order_models(list({k[1] for k in keys})))}
    keys.sort(key=lambda k: (k[0], rank_of[k[1]], k[2]))
    drawn: dict[str, dict] = {}
    with figure_style():
        n = max(1, len(keys))
        fig, axes = plt.subplots(n, 1, figsize=(WIDTH, 1.9 * n), squeeze=False)
        title = fig.suptitle("Mean ranks of the stopping methods (test logloss after TS; "
                             "1 = best), with Nemenyi's critical difference (CD)")
        if not keys:
            empty_panel(axes[0, 0], "No (model, regime) with 5 datasets holding every method")
        for ax, (subset, model, regime) in zip(axes[:, 0], keys, strict=False):
            panel = ranks[(ranks["subset"] == subset) & (ranks["model"] == model)
                          & (ranks["regime"] == regime)]
            result = _rank_result(panel)
            plot_stats(result, allow_insignificant=True, ax=ax)
            first = panel.iloc[0]
            ax.set_title(f"{model_label(model)}, {regime}, {_SUBSET_TITLES.get(subset, subset)}"
                         f" (n = {int(first['n'])}, Friedman p = {first['p_friedman']:.2g}, "
                         f"CD = {first['cd']:.2f})", fontsize=8)
            drawn[f"{subset}/{model}/{regime}"] = {
                "mean_ranks": result.rankdf["meanrank"].to_dict(), "cd": result.cd}
        tight_layout_below(fig, title)
        files = save(fig, out_dir, STEM)
    return {"files": files, "panels": drawn}
