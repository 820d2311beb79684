"""The declared comparisons (config ``comparisons``, :mod:`tabbench.summary.view`) in the style
of Fig. 5: one panel per comparison, a box per (regime, model) of the relative differences the
claim row was judged on (``summary/declared.parquet``, written by the same code as the claim),
the verdicts in the panel's title, wrapped to the panel's width, and the models' colours in a
legend below the panels. Without a declared comparison the figure says how to declare one.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402  (after style sets the backend)
import pandas as pd

from tabbench.plots.boxes import METRIC_LABELS, box_panel, model_legend
from tabbench.plots.style import (
    WIDTH,
    empty_panel,
    figure_style,
    lower_is_better,
    model_label,
    order_models,
    save,
    symlog_percent_axis,
)

STEM = "figD_declared_comparisons"
REGIMES = ("default", "tuned")


def _groups(data: pd.DataFrame, subset: str) -> tuple[pd.DataFrame, list[str]]:
    """The panel's x groups: the regimes, split into large and small datasets for a
    large-vs-small comparison; rows outside the comparison's subset dropped."""
    data = data.copy()
    if subset == "large":
        data = data[data["large"].astype(bool)]
        data["group"] = data["regime"]
    elif subset == "large_vs_small":
        data["group"] = data["regime"] + "\n" + data["large"].map(
            {True: "large", False: "small"})
    else:
        data["group"] = data["regime"]
    order = [g for r in REGIMES for g in (r, f"{r}\nlarge", f"{r}\nsmall")]
    return data, [g for g in order if g in set(data["group"])]


def _verdicts(claims: pd.DataFrame, claim: str) -> str:
    """The verdicts of one comparison, a model at a time: "XGBoost: default reproduced, tuned
    inconclusive; MLP: ..."."""
    rows = claims[claims["claim"] == claim] if len(claims) else claims
    per_model: dict[str, list[str]] = {}
    for r in rows.itertuples():
        per_model.setdefault(r.model, []).append(f"{r.regime} {r.verdict}")
    return "; ".join(f"{model_label(m)}: {', '.join(per_model[m])}"
                     for m in order_models(per_model)) or "no verdict"


def _fit_title(ax, lines: list[str], fontsize: float) -> None:
    """``ax``'s title from ``lines``, each wrapped at spaces until the title is no wider than
    the panel (a long list of verdicts otherwise runs past the figure's edges)."""
    renderer = ax.figure.canvas.get_renderer()
    width = ax.get_window_extent(renderer).width
    longest = max(map(len, lines))
    for chars in range(longest, 19, -4):
        text = "\n".join(textwrap.fill(line, chars) for line in lines)
        title = ax.set_title(text, fontsize=fontsize)
        if title.get_window_extent(renderer).width <= width:
            return


def fig_declared(summary: dict, out_dir: str | Path) -> dict:
    """Draw every declared comparison; returns the boxes drawn (read back from the artists)."""
    declared: pd.DataFrame = summary.get("declared", pd.DataFrame())
    claims: pd.DataFrame = summary["claims"]
    specs = summary["meta"].get("comparisons") or []
    large_rows = int(summary["meta"]["large_rows"])
    drawn, titled, legend_models = [], [], []
    # every panel colours a model alike: by its place among all the figure's models
    palette = order_models(declared["model"].unique()) if len(declared) else []
    with figure_style():
        rows = max(1, len(specs))
        fig, axes = plt.subplots(rows, 1, figsize=(WIDTH, 1.0 + 2.6 * rows), squeeze=False)
        fig.suptitle(f"Declared comparisons (config 'comparisons'; large = ≥ {large_rows:,} "
                     "rows)")
        if not specs:
            empty_panel(axes[0, 0], "No comparison declared. Declare one with config key "
                        "'comparisons', e.g.\n[{method: 'My-Gap+TS', versus: 'TS-Ref.+TS'}]; "
                        "its claim rows join claims.md")
        for ax, spec in zip(axes[:, 0], specs, strict=False):
            mine = declared[declared["claim"] == spec["id"]] if len(declared) else declared
            metric = METRIC_LABELS.get(spec["metric"], spec["metric"])
            head = (f"{spec['statement']} ({metric}, {spec['subset']}"
                    f"{', per split' if spec['unit'] == 'split' else ''})")
            titled.append((ax, [head, _verdicts(claims, spec["id"])]))
            data, groups = _groups(mine, spec["subset"]) if len(mine) else (mine, [])
            if not groups:
                empty_panel(ax, "No dataset has both methods in these results")
                continue
            models = order_models(data["model"].unique())
            legend_models = order_models({*legend_models, *models})
            boxes = box_panel(ax, groups, models, palette, data, ("group", "rel_diff"))
            for b in boxes:
                b["claim"] = spec["id"]
            drawn += boxes
            ax.set_xticklabels(groups)
            symlog_percent_axis(ax, data["rel_diff"])
            ax.axhline(0, color="0.5", lw=0.8, ls="--", zorder=0)
            ax.set_ylabel(lower_is_better(f"{spec['method']} vs\n{spec['versus']} (%)"))
            ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)
        # the models' colours below the panels
        legend = 0.0
        if legend_models:
            model_legend(fig, legend_models, palette)
            legend = 0.4 / fig.get_figheight()
        fig.tight_layout(rect=(0, legend, 1, 1))
        for ax, lines in titled:
            _fit_title(ax, lines, fontsize=8)
        fig.tight_layout(rect=(0, legend, 1, 1))
        renderer = fig.canvas.get_renderer()
        widths = [(ax.title.get_window_extent(renderer).width,
                   ax.get_window_extent(renderer).width) for ax, _ in titled]
        labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
        files = save(fig, out_dir, STEM)
    return {"files": files, "boxes": drawn, "n_comparisons": len(specs),
            "title_widths": widths, "legend": labels}
