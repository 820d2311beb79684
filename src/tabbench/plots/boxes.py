"""Box plots of relative differences (paper Fig. 5, G.2, G.3, G.4) and best epochs (Fig. G.5).

Boxes show the quartiles and median, whiskers the 10%/90% quantiles (not 1.5 IQR: the paper's
choice), every dataset is a point on top, one colour per model. The functions return what they
drew, read back from the matplotlib artists, so a test can compare the figure with the summary
tables instead of trusting that the right numbers were passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402  (after style sets the backend)
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tabbench.metrics.registry import get_stopping_metrics
from tabbench.models.registry import epoch_name
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
from tabbench.summary.comparisons import N_MIN, describe
from tabbench.summary.methods import BASELINE, FIG5_METHODS, method_names

REGIME_TITLES = {"default": "Default hyperparameters", "tuned": "Tuned hyperparameters"}
METRIC_LABELS = {
    "logloss": "test logloss",
    "error": "test classification error",
    "auroc": "test 1 − AUROC",
    "brier": "test Brier score",
    "ece": "test ECE",
}
_JITTER = 0.28  # fraction of a box's width over which its points are spread
#: fewer points than this get no box, only the points and their median: quartiles interpolated
#: between two or three values would draw a spread that is not there (the tests' threshold)
MIN_BOX_POINTS = N_MIN


def _read_box(bp: dict, i: int) -> dict[str, float]:
    """Box statistics back from the artists of box ``i`` of ``ax.boxplot``."""
    ys = bp["boxes"][i].get_path().vertices[:, 1]
    low, high = bp["whiskers"][2 * i], bp["whiskers"][2 * i + 1]
    return {
        "median": float(bp["medians"][i].get_ydata()[0]),
        "q25": float(ys.min()),
        "q75": float(ys.max()),
        "q10": float(np.min(low.get_ydata())),
        "q90": float(np.max(high.get_ydata())),
    }


def box_panel(ax, groups: Sequence[str], models: Sequence[str], all_models: Sequence[str],
              data: pd.DataFrame, columns: tuple[str, str], seed: int = 0,
              colour: Callable[[str], str] | None = None) -> list[dict]:
    """One box per (group, model) present in ``data``, whose ``columns`` are the group's and
    the value's (the model's is ``model``); points overlaid. Returns per box: the
    group, model, plotted point values (from the scatter's offsets, in dataset order) and the
    box statistics (from the box artists). ``colour`` (name -> colour) replaces the model
    palette, e.g. when the boxes are not models. With fewer than :data:`MIN_BOX_POINTS` values
    only the points and a median mark are drawn (``box`` False, quantiles NaN)."""
    group_col, value_col = columns
    rng = np.random.default_rng(seed)
    n_models = max(1, len(models))
    width = 0.8 / n_models
    drawn = []
    for gi, group in enumerate(groups):
        for mi, model in enumerate(models):
            sub = data[(data[group_col] == group) & (data["model"] == model)]
            if sub.empty:
                continue
            sub = sub.sort_values("dataset")
            values = sub[value_col].to_numpy(dtype=float)
            pos = gi + (mi - (n_models - 1) / 2) * width
            colour_ = (colour(model) if colour is not None
                       else model_colour(model, list(all_models)))
            st = describe(values)
            boxed = int(np.isfinite(values).sum()) >= MIN_BOX_POINTS
            if boxed:
                # ax.bxp with our own statistics: ax.boxplot(whis=(10, 90)) would end each
                # whisker at the most extreme *data point* inside the quantile, not at it
                bp = ax.bxp([{"med": st["median"], "q1": st["q25"], "q3": st["q75"],
                              "whislo": st["q10"], "whishi": st["q90"], "fliers": []}],
                            positions=[pos], widths=width * 0.8, showfliers=False,
                            patch_artist=True, manage_ticks=False,
                            boxprops={"facecolor": colour_, "alpha": 0.35,
                                      "edgecolor": colour_},
                            medianprops={"color": "black", "linewidth": 1.4, "zorder": 4},
                            whiskerprops={"color": colour_}, capprops={"color": colour_})
                stats = _read_box(bp, 0)
            else:
                half = width * 0.4
                (line,) = ax.plot([pos - half, pos + half], [st["median"]] * 2, color="black",
                                  linewidth=1.4, zorder=4)
                stats = {"median": float(line.get_ydata()[0]),
                         **{q: float("nan") for q in ("q25", "q75", "q10", "q90")}}
            x = pos + rng.uniform(-_JITTER, _JITTER, len(values)) * width
            sc = ax.scatter(x, values, s=5 if boxed else 12, color=colour_, alpha=0.75 if boxed
                            else 0.9, linewidths=0, zorder=3)
            drawn.append({
                group_col: group,
                "model": model,
                "datasets": sub["dataset"].tolist(),
                "values": sc.get_offsets()[:, 1].astype(float).tolist(),
                "box": boxed,
                **stats,
            })
    ax.set_xticks(range(len(groups)))
    ax.set_xlim(-0.6, len(groups) - 0.4)
    return drawn


def model_legend(fig, models: Sequence[str], all_models: Sequence[str],
                  counts: dict[str, int] | None = None) -> None:
    """The models' colours and the median mark, below the panels. ``counts`` (model -> number
    of datasets) is written beside each model when the models do not all have the same number,
    so a reader does not take one panel-wide n for every box."""
    show = counts is not None and len({counts.get(m) for m in models}) > 1

    def label(m: str) -> str:
        return f"{model_label(m)} (n = {counts[m]})" if show and counts else model_label(m)

    handles = [Patch(facecolor=model_colour(m, list(all_models)), alpha=0.6,
                     edgecolor=model_colour(m, list(all_models)), label=label(m))
               for m in models]
    handles.append(Line2D([], [], color="black", lw=1.2, label="median"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, -0.01))


def _n_datasets(df: pd.DataFrame) -> int:
    return int(df["dataset"].nunique()) if len(df) else 0


def _n_text(df: pd.DataFrame) -> str:
    """A panel's dataset count for its title: ``"6"``, or ``"5–6"`` when its models have
    different numbers of datasets (a study whose networks lag its boosters)."""
    per_model = df.groupby("model")["dataset"].nunique() if len(df) else pd.Series(dtype=int)
    lo, hi = (int(per_model.min()), int(per_model.max())) if len(per_model) else (0, 0)
    return str(hi) if lo == hi else f"{lo}–{hi}"


def relative_boxes(summary: dict, out_dir: str | Path, stem: str, metric: str,
                   methods: Sequence[str], large_only: bool, what: str) -> dict:
    """Box plots of the relative difference of ``metric`` per method, default and tuned panels.

    ``large_only`` restricts to datasets with ≥ meta['large_rows'] rows (paper Fig. 5)."""
    rel: pd.DataFrame = summary["relative"]
    meta = summary["meta"]
    large_rows = int(meta["large_rows"])
    baseline = meta.get("baseline") or BASELINE
    sub = rel[(rel["metric"] == metric) & rel["method"].isin(methods)]
    if large_only:
        sub = sub[sub["large"].astype(bool)]
    methods = list(dict.fromkeys(methods))  # the order asked for (Fig. 5: the paper's)
    models = order_models(rel["model"].unique()) if len(rel) else []  # their colours
    drawn_models = [m for m in models if (sub["model"] == m).any()]  # boxes and legend
    regimes = ["default", "tuned"]
    many = len(methods) > 5
    with figure_style():
        if many:
            fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.4), sharey=False)
        else:
            fig, axes = plt.subplots(1, 2, figsize=(WIDTH, 3.0), sharey=True)
        subset_txt = (f"datasets with ≥ {large_rows:,} rows" if large_only else "all datasets")
        n = _n_datasets(sub)
        few = " — few datasets, read with care" if 0 < n < 10 else ""
        fig.suptitle(f"{what}: {METRIC_LABELS.get(metric, metric)} relative to {baseline}, "
                     f"{subset_txt} (n = {n}){few}")
        drawn = []
        omitted: dict[str, list[str]] = {}
        for ax, regime in zip(axes, regimes, strict=False):
            data = sub[sub["regime"] == regime]
            title = f"{REGIME_TITLES[regime]} (n = {_n_text(data)} datasets)"
            # a model of the figure with no pair in this regime (e.g. a network trained at
            # its default config only): the panel says it is left out, not silently absent
            omitted[regime] = [m for m in drawn_models if not (data["model"] == m).any()]
            if omitted[regime] and not data.empty:
                names = ", ".join(model_label(m) for m in omitted[regime])
                title += f"\nnot drawn: {names} (no {regime} results)"
            ax.set_title(title)
            if data.empty:
                reason = (f"No dataset with ≥ {large_rows:,} rows in these results"
                          if large_only and len(rel) else "No selected results for this regime")
                empty_panel(ax, reason)
                continue
            boxes = box_panel(ax, methods, drawn_models, models, data, ("method", "rel_diff"))
            for b in boxes:
                b["regime"] = regime
            drawn += boxes
            # side by side the panels share their y axis: its limits must cover both panels'
            # data (the last panel's limits would apply to the first too)
            symlog_percent_axis(ax, data["rel_diff"] if many else sub["rel_diff"])
            ax.axhline(0, color="0.5", lw=0.8, ls="--", zorder=0)
            if many:
                ax.set_xticklabels(methods, rotation=25, ha="right")
            else:  # two lines ("TS-Ref." / "+TS") so four groups fit side by side
                ax.set_xticklabels([m.replace("+TS", "\n+TS") for m in methods])
            ax.set_ylabel(lower_is_better(f"Rel. diff. in {METRIC_LABELS.get(metric, metric)}"
                                          " (%)"))
            ax.yaxis.set_tick_params(labelleft=True)
            ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)
        if drawn_models:
            counts = {m: _n_datasets(sub[sub["model"] == m]) for m in drawn_models}
            model_legend(fig, drawn_models, models, counts)
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        ylims = {regime: tuple(ax.get_ylim()) for ax, regime in zip(axes, regimes, strict=False)}
        files = save(fig, out_dir, stem)
    return {"files": files, "boxes": drawn, "n_datasets": n, "ylims": ylims,
            "omitted": {r: m for r, m in omitted.items() if m}}


def fig5(summary: dict, out_dir: str | Path) -> dict:
    """The paper's Fig. 5, or the methods of config ``figures_methods`` relative to
    ``figures_baseline`` (recorded in ``meta.json``: :mod:`tabbench.summary.view`)."""
    meta = summary["meta"]
    methods = meta.get("figures_methods") or FIG5_METHODS
    paper = tuple(methods) == FIG5_METHODS and (meta.get("baseline") or BASELINE) == BASELINE
    return relative_boxes(summary, out_dir, "fig5_logloss_large", "logloss", methods,
                          large_only=True, what="Fig. 5" if paper else "Fig. 5 (your methods)")


def fig_g2(summary: dict, out_dir: str | Path) -> dict:
    return relative_boxes(summary, out_dir, "figG2_logloss_all_methods", "logloss",
                          method_names(), large_only=True, what="Fig. G.2")


def fig_g3(summary: dict, out_dir: str | Path) -> dict:
    return relative_boxes(summary, out_dir, "figG3_error", "error", method_names(),
                          large_only=True, what="Fig. G.3")


def fig_g4(summary: dict, out_dir: str | Path) -> dict:
    return relative_boxes(summary, out_dir, "figG4_auroc", "auroc", method_names(),
                          large_only=True, what="Fig. G.4")


def fig_g5(summary: dict, out_dir: str | Path) -> dict:
    """Best epoch per registered stopping metric, default hyperparameters, one panel per
    model."""
    table: pd.DataFrame = summary["best_epochs"]
    models = order_models(table["model"].unique()) if len(table) else []
    labels = {m.id: m.label for m in get_stopping_metrics().values()}
    stoppings = [s for s in labels if s in set(table["stopping"])]
    with figure_style():
        ncols = max(1, len(models))
        fig, axes = plt.subplots(1, ncols, figsize=(WIDTH, 3.0), squeeze=False)
        n = _n_datasets(table)
        fig.suptitle(f"Fig. G.5: best epoch per stopping metric, default hyperparameters, "
                     f"mean over splits (n = {n} datasets)")
        drawn = []
        if not models:
            empty_panel(axes[0, 0], "No selected results")
        for ax, model in zip(axes[0], models, strict=False):
            data = table[table["model"] == model]
            boxes = box_panel(ax, stoppings, [model], models, data, ("stopping", "epoch"))
            drawn += boxes
            ax.set_xticklabels([labels[s] for s in stoppings], rotation=45, ha="right")
            ax.set_title(f"{model_label(model)} (n = {_n_datasets(data)})")
            ax.set_ylim(bottom=0)
            ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)
            ax.set_ylabel(f"Best {epoch_name(model)}")
        fig.tight_layout()
        files = save(fig, out_dir, "figG5_best_epoch")
    return {"files": files, "boxes": drawn, "n_datasets": n}
