"""Figures of the diagnostics (docs/diagnostics.md) from the diagnostic tables only.

* ``diag_reliability``: reliability diagrams of the chosen models, raw and after TS, one panel
  per (model, stopping metric), pooled over datasets with equal weight per dataset, with a
  95% Clopper–Pearson band per bin and the histogram of confidences; the legend gives ECE
  and smooth ECE;
* ``diag_reliability_example``: the same for one dataset (all its splits);
* ``diag_calibrators``: test log loss, Brier score, ECE and smooth ECE of isotonic regression,
  Platt/vector scaling and no calibration relative to TS, per stopping metric (boxes as in
  Fig. G.2);
* ``diag_winners_curse``: mean optimism (test − validation) of the selected model against the
  number of configs searched;
* ``diag_regret``: regret in test log loss after TS relative to the test oracle, per stopping
  metric.

Like :mod:`tabbench.plots.boxes`, every function returns what it drew (read back from the
artists where it matters) so tests can compare figures with tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from tabbench.diagnostics.calibrators import CALIBRATOR_LABELS, CALIBRATORS, REFERENCE
from tabbench.diagnostics.paths import DIAGNOSTIC_FIGURE_STEMS
from tabbench.diagnostics.selection_bias import MAIN_TARGET, pairs
from tabbench.diagnostics.summaries import POOLED
from tabbench.metrics.registry import get_stopping_metrics
from tabbench.plots.boxes import REGIME_TITLES, box_panel
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

CALIBRATOR_COLOURS = {"none": "#999999", "isotonic": "#CC79A7", "platt_vector": "#56B4E9",
                      "ts": "#000000"}
METRIC_TITLES = {"logloss": "test log loss", "brier": "test Brier score", "ece": "test ECE",
                 "smece": "test smooth ECE"}
RAW_TS_STYLE = {"raw": {"color": "#D55E00", "marker": "o", "label": "raw"},
                "ts": {"color": "#0072B2", "marker": "s", "label": "after TS"}}
TEST_LABELS = {"test_logloss": "test logloss", "test_brier": "test Brier",
               "test_error": "test error", "test_auroc": "test 1−AUROC",
               "test_logloss_ts": "test logloss+TS", "test_brier_ts": "test Brier+TS"}


def _labels() -> dict[str, str]:
    """Registered stopping metric id -> its label, in registration order."""

    return {m.id: m.label for m in get_stopping_metrics().values()}


def _stoppings(present) -> list[str]:
    return [s for s in _labels() if s in set(present)]


def _regime_of(table: pd.DataFrame, model: str) -> str:
    """The regime shown for a model: tuned where it has tuned configs, else default."""
    regimes = set(table.loc[table["model"] == model, "regime"])
    return "tuned" if "tuned" in regimes else "default"


def reliability(tables: dict, out_dir: str | Path, scope: str | None = None,
                stem: str = "diag_reliability") -> dict:
    """Reliability diagrams (module docstring); ``scope`` None = pooled over datasets."""
    diag: pd.DataFrame = tables["reliability"]
    ece: pd.DataFrame = tables["reliability_ece"]
    meta = tables["meta"]
    scope = POOLED if scope is None else scope
    d = diag[diag["scope"] == scope] if len(diag) else diag
    e = ece[ece["scope"] == scope] if len(ece) else ece
    models = order_models(d["model"].unique()) if len(d) else []
    stoppings = _stoppings(d["stopping"].unique()) if len(d) else []
    ncols = 4
    rows_per_model = max(1, int(np.ceil(len(stoppings) / ncols)))
    nrows = max(1, len(models) * rows_per_model)
    drawn = []
    with figure_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, 1.75 * nrows + 0.7),
                                 squeeze=False, sharex=True, sharey=True)
        n_ds = int(d["n_datasets"].max()) if len(d) else 0
        what = (f"pooled over {n_ds} datasets (equal weight each)" if scope == POOLED
                else f"example dataset {scope} (all its splits)")
        fig.suptitle(f"Reliability of the chosen models, raw and after TS — {what}\n"
                     "legend: mean per-dataset test ECE / smooth ECE; bars: 95% "
                     "Clopper–Pearson band per bin\nbottom: histogram of confidences "
                     "(marker area ∝ share of test samples)")
        for ax in axes.ravel():
            ax.set_visible(False)
        if not models:
            axes[0, 0].set_visible(True)
            reason = ("No replay files: run `snakemake replay` (or `diagnostics`) first"
                      if not meta.get("replay", {}).get("used") else "Nothing to draw")
            empty_panel(axes[0, 0], reason)
        for mi, model in enumerate(models):
            regime = _regime_of(d, model)
            for si, stopping in enumerate(stoppings):
                ax = axes[mi * rows_per_model + si // ncols, si % ncols]
                ax.set_visible(True)
                ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--", zorder=1)
                sub = d[(d["model"] == model) & (d["regime"] == regime)
                        & (d["stopping"] == stopping)]
                for calib, style in RAW_TS_STYLE.items():
                    c = sub[(sub["calibration"] == calib) & (sub["weight"] > 0)]
                    c = c.sort_values("bin")
                    er = e[(e["model"] == model) & (e["regime"] == regime)
                           & (e["stopping"] == stopping) & (e["calibration"] == calib)]
                    mean_ece = float(er["ece_mean"].iloc[0]) if len(er) else np.nan
                    mean_smece = float(er["smece_mean"].iloc[0]) \
                        if len(er) and "smece_mean" in er else np.nan
                    label = (f"{style['label']}: ECE {100 * mean_ece:.1f}% / "
                             f"smECE {100 * mean_smece:.1f}%")
                    ax.plot(c["confidence"], c["accuracy"], color=style["color"], lw=1.0,
                            zorder=2, label=label)
                    ax.scatter(c["confidence"], c["accuracy"], s=4 + 60 * c["weight"],
                               color=style["color"], marker=style["marker"], zorder=3,
                               linewidths=0)
                    band = _band(ax, c, style["color"])
                    hist = _confidence_histogram(ax, c, style["color"])
                    drawn.append({"model": model, "regime": regime, "stopping": stopping,
                                  "calibration": calib, "ece_mean": mean_ece,
                                  "smece_mean": mean_smece,
                                  "confidence": c["confidence"].tolist(),
                                  "accuracy": c["accuracy"].tolist(), **band, **hist})
                ax.set_xlim(0, 1.02)
                ax.set_ylim(0, 1.02)
                ax.set_aspect("equal", adjustable="box")
                ax.set_title(f"{model_label(model)} ({regime}) — {_labels()[stopping]}",
                             fontsize=7.5)
                # upper left: empty unless a model is underconfident at low confidence (the
                # histogram fills the bottom)
                ax.legend(loc="upper left", fontsize=5.5, frameon=False, handlelength=1.0,
                          borderaxespad=0.2)
                if si % ncols == 0:
                    ax.set_ylabel("accuracy")
                if mi == len(models) - 1 and si // ncols == rows_per_model - 1:
                    ax.set_xlabel("top-label confidence")
                ax.tick_params(labelbottom=True, labelleft=True)
                ax.grid(color="0.93", lw=0.5, zorder=0)
        fig.tight_layout()
        files = save(fig, out_dir, stem)
    return {"files": files, "panels": drawn, "scope": scope}


#: the confidence histogram fills at most this fraction of a reliability panel's height
HIST_HEIGHT = 0.22


def _band(ax, c: pd.DataFrame, colour: str) -> dict:
    """Per-bin Clopper–Pearson band of the accuracy (tables without its columns draw
    none)."""
    if "acc_lo" not in c or c.empty:
        return {"acc_lo": [], "acc_hi": []}
    lo, hi = c["acc_lo"].to_numpy(), c["acc_hi"].to_numpy()
    acc = c["accuracy"].to_numpy()
    ax.errorbar(c["confidence"], acc, yerr=[acc - lo, hi - acc], fmt="none", ecolor=colour,
                elinewidth=0.7, capsize=1.2, alpha=0.7, zorder=2)
    return {"acc_lo": lo.tolist(), "acc_hi": hi.tolist()}


def _confidence_histogram(ax, c: pd.DataFrame, colour: str) -> dict:
    """The share of test samples per confidence bin, as steps along the bottom of the panel
    (scaled so the fullest bin reaches :data:`HIST_HEIGHT`)."""
    if c.empty:
        return {"hist_lo": [], "hist_weight": []}
    heights = HIST_HEIGHT * c["weight"].to_numpy() / c["weight"].max()
    ax.bar(c["lo"], heights, width=c["hi"] - c["lo"], align="edge", bottom=0,
           color=colour, alpha=0.18, edgecolor=colour, linewidth=0.6, zorder=1)
    return {"hist_lo": c["lo"].tolist(), "hist_weight": c["weight"].tolist()}


def reliability_example(tables: dict, out_dir: str | Path) -> dict:
    example = tables["meta"].get("example_dataset")
    return reliability(tables, out_dir, scope=example or "(none)",
                       stem="diag_reliability_example")


def _legend(fig, entries: list[tuple[str, str]], extra: list | None = None) -> None:
    handles = [Patch(facecolor=c, alpha=0.6, edgecolor=c, label=lab) for lab, c in entries]
    handles += extra or []
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, -0.01))


def calibrators(tables: dict, out_dir: str | Path) -> dict:
    """Relative difference to TS (%) of each calibrator's test score, per stopping metric."""
    rel: pd.DataFrame = tables["calibrators_relative"]
    others = [c for c in CALIBRATORS if c != REFERENCE]
    sub = rel[rel["calibrator"].isin(others)] if len(rel) else rel
    metrics = [m for m in METRIC_TITLES if not len(rel) or m in set(rel["metric"])]
    regimes = ["default", "tuned"]
    drawn = []
    with figure_style():
        fig, axes = plt.subplots(len(metrics), len(regimes),
                                 figsize=(WIDTH, 2.5 * len(metrics) + 0.1), squeeze=False)
        n_pairs = int(sub[["model", "dataset"]].drop_duplicates().shape[0]) if len(sub) else 0
        models = ", ".join(model_label(m) for m in order_models(sub["model"].unique())) \
            if len(sub) else "–"
        fig.suptitle("Post-hoc calibrators of the chosen models vs TS (fit on validation, "
                     f"scored on test)\nrelative difference to TS, n = {n_pairs} (model, "
                     f"dataset) pairs ({models}); below 0 = better than TS")
        for i, metric in enumerate(metrics):
            for j, regime in enumerate(regimes):
                ax = axes[i, j]
                data = sub[(sub["metric"] == metric) & (sub["regime"] == regime)] \
                    if len(sub) else sub
                if data.empty:
                    empty_panel(ax, "No replay files: run `snakemake replay` first"
                                if rel.empty else f"No {regime} selections")
                    continue
                stoppings = _stoppings(data["stopping"].unique())
                # box_panel draws and colours one box per value of its "model" column: here
                # the calibrator
                boxes = box_panel(ax, stoppings, others, others,
                                  data.rename(columns={"model": "nn_model"})
                                  .rename(columns={"calibrator": "model"}),
                                  ("stopping", "rel_diff"), colour=CALIBRATOR_COLOURS.get)
                for b in boxes:
                    b.update(metric=metric, regime=regime, calibrator=b.pop("model"))
                drawn += boxes
                symlog_percent_axis(ax, data["rel_diff"])
                ax.axhline(0, color="0.3", lw=0.8, ls="--", zorder=0)
                ax.set_xticklabels([_labels()[s] for s in stoppings], rotation=30,
                                   ha="right")
                nd = data[["model", "dataset"]].drop_duplicates().shape[0]
                ax.set_title(f"{METRIC_TITLES[metric]} — {REGIME_TITLES[regime]} (n = {nd})")
                ax.set_ylabel(lower_is_better("rel. diff. to TS (%)"))
                ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)
        _legend(fig, [(CALIBRATOR_LABELS[c], CALIBRATOR_COLOURS[c]) for c in others],
                [Line2D([], [], color="0.3", ls="--", label="TS (= 0)")])
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        files = save(fig, out_dir, "diag_calibrators")
    return {"files": files, "boxes": drawn, "n_pairs": n_pairs}


def winners_curse(tables: dict, out_dir: str | Path) -> dict:
    """Mean optimism of the selected model vs the number of configs searched (tuned)."""
    cs: pd.DataFrame = tables["curve_summary"]
    stoppings = _stoppings(cs["stopping"].unique()) if len(cs) else []
    models = order_models(cs["model"].unique()) if len(cs) else []
    ncols = 4
    nrows = max(1, int(np.ceil(len(stoppings) / ncols)))
    drawn = []
    with figure_style():
        fig, axes = plt.subplots(nrows, ncols, figsize=(WIDTH, 2.3 * nrows + 0.9),
                                 squeeze=False)
        n_ds = int(cs["n"].max()) if len(cs) else 0
        med = float(cs["median_configs"].median()) if len(cs) else 0
        fig.suptitle("Winner's curse: optimism (test − validation metric) of the selected "
                     f"model vs configs searched\ntuned regime, mean ± s.e. over {n_ds} "
                     f"datasets; sizes capped at the configs available (median {med:g})")
        for ax in axes.ravel()[len(stoppings):]:
            ax.set_visible(False)
        if not stoppings:
            axes[0, 0].set_visible(True)
            empty_panel(axes[0, 0], "No tuned configs in these results (n_configs = 0)")
        for si, stopping in enumerate(stoppings):
            ax = axes[si // ncols, si % ncols]
            pair = pairs()[stopping]
            for model in models:
                g = cs[(cs["model"] == model) & (cs["stopping"] == stopping)].sort_values("k")
                if g.empty:
                    continue
                col = model_colour(model, models)
                ls = "-" if pair.same_estimator else "--"
                (line,) = ax.plot(g["k"], g["mean"], color=col, marker="o", ms=3, lw=1.2,
                                  ls=ls)
                sem = g["sem"].fillna(0).to_numpy()
                ax.fill_between(g["k"], g["mean"] - sem, g["mean"] + sem, color=col,
                                alpha=0.18, lw=0)
                drawn.append({"model": model, "stopping": stopping,
                              "k": line.get_xdata().tolist(), "mean": line.get_ydata().tolist()})
            ax.set_xscale("log", base=2)
            ks = sorted(cs["k"].unique())
            ax.set_xticks(ks)
            ax.set_xticklabels([str(k) for k in ks])
            ax.axhline(0, color="0.5", lw=0.7, ls=":")
            note = "" if pair.same_estimator else " (isotonic vs TS)"
            ax.set_title(f"{_labels()[stopping]}: {pair.val} →\n"
                         f"{TEST_LABELS.get(pair.test, pair.test)}{note}", fontsize=7)
            ax.set_xlabel("configs searched")
            if si % ncols == 0:
                ax.set_ylabel("optimism = test − val")
            ax.grid(color="0.93", lw=0.5)
        handles = [Line2D([], [], color=model_colour(m, models), marker="o", ms=3,
                          label=model_label(m)) for m in models]
        if handles:
            fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False,
                       bbox_to_anchor=(0.5, -0.01))
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        files = save(fig, out_dir, "diag_winners_curse")
    return {"files": files, "lines": drawn}


def regret(tables: dict, out_dir: str | Path) -> dict:
    """Relative regret in the paper's target metric, per stopping metric and model."""
    per_ds: pd.DataFrame = tables["selection_datasets"]
    col = f"rel_regret_{MAIN_TARGET}"
    regimes = ["default", "tuned"]
    drawn = []
    with figure_style():
        fig, axes = plt.subplots(len(regimes), 1, figsize=(WIDTH, 5.6), squeeze=False)
        n = int(per_ds["dataset"].nunique()) if len(per_ds) else 0
        fig.suptitle("Regret of each stopping metric: test log loss after TS of the selection "
                     "vs the best (config, epoch) on test\n100·(selected − oracle)/oracle, "
                     f"mean over splits, n = {n} datasets")
        models = order_models(per_ds["model"].unique()) if len(per_ds) else []
        for ax, regime in zip(axes[:, 0], regimes, strict=True):
            data = per_ds[per_ds["regime"] == regime] if len(per_ds) else per_ds
            if data.empty or col not in data:
                empty_panel(ax, f"No {regime} selections in these results")
                continue
            stoppings = _stoppings(data["stopping"].unique())
            boxes = box_panel(ax, stoppings, models, models, data, ("stopping", col))
            for b in boxes:
                b["regime"] = regime
            drawn += boxes
            symlog_percent_axis(ax, data[col])
            ax.set_ylim(bottom=-0.5)
            ax.set_xticklabels([_labels()[s] for s in stoppings])
            ax.set_title(f"{REGIME_TITLES[regime]} (n = {data['dataset'].nunique()} datasets)")
            ax.set_ylabel(lower_is_better("regret (% of oracle)"))
            ax.grid(axis="y", color="0.92", lw=0.6, zorder=0)
        if models:
            _legend(fig, [(model_label(m), model_colour(m, models)) for m in models],
                    [Line2D([], [], color="black", lw=1.2, label="median")])
        fig.tight_layout(rect=(0, 0.05, 1, 1))
        files = save(fig, out_dir, "diag_regret")
    return {"files": files, "boxes": drawn}


#: figure stem -> function drawing it from the diagnostic tables
DIAGNOSTIC_FIGURES: dict[str, Callable[[dict, str | Path], dict]] = {
    "diag_reliability": reliability,
    "diag_reliability_example": reliability_example,
    "diag_calibrators": calibrators,
    "diag_winners_curse": winners_curse,
    "diag_regret": regret,
}


if tuple(DIAGNOSTIC_FIGURES) != DIAGNOSTIC_FIGURE_STEMS:  # pragma: no cover - import contract
    raise RuntimeError("DIAGNOSTIC_FIGURES differ from paths.DIAGNOSTIC_FIGURE_STEMS")


def make_diagnostic_figures(tables: dict, out_dir: str | Path) -> dict[str, dict]:
    """Draw every diagnostic figure into ``out_dir``; stem -> what was drawn."""
    return {stem: fn(tables, out_dir) for stem, fn in DIAGNOSTIC_FIGURES.items()}
