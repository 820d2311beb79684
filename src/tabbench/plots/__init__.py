"""The paper's figures (docs/design.md §8) from the summary tables of
:mod:`tabbench.summary.aggregate`.

Plots read only the summary folder, never ``data/`` or the per-epoch records, so regenerating
them is cheap and independent of training. Each figure function returns the numbers it drew
(read back from the artists) so tests can check them against the tables.

Importing this package does not import matplotlib (the Snakemake rule files import
:data:`FIGURE_STEMS` at parse time); :func:`make_figures` does.

Layer 8 of docs/design.md §2: it may import the layers below (``core`` to ``diagnostics``),
and draws from their tables only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from tabbench.core.extras import require_extra
from tabbench.metrics.registry import get_stopping_metrics

require_extra("pipeline", __name__)

#: figure stem (file name without extension) -> "module:function" drawing it
FIGURES: dict[str, str] = {
    "fig5_logloss_large": "boxes:fig5",
    "figG2_logloss_all_methods": "boxes:fig_g2",
    "figG2_stopping_ranks": "ranks:cd_diagrams",
    "figG1_logloss_vs_size": "size:fig_g1",
    "figG3_error": "boxes:fig_g3",
    "figG4_auroc": "boxes:fig_g4",
    "figG5_best_epoch": "boxes:fig_g5",
    "fig1_curves": "curves:fig1",
    "figD_declared_comparisons": "declared:fig_declared",
    "figR_compute_quality": "rules:fig_compute_quality",
    "figR_regret_by_rule": "rules:fig_regret",
    "figH_refining_gain": "heterogeneity:fig_refining_gain",
}
FIGURE_STEMS: tuple[str, ...] = tuple(FIGURES)


def figure_function(stem: str) -> Callable[[dict, str | Path], dict]:
    module, name = FIGURES[stem].split(":")
    return getattr(importlib.import_module(f"tabbench.plots.{module}"), name)


def figure_files(out_dir: str | Path) -> list[Path]:
    """Every file :func:`make_figures` writes (PDF and PNG per figure)."""
    return [Path(out_dir) / f"{stem}.{ext}" for stem in FIGURES for ext in ("pdf", "png")]


def stopping_metric_legend() -> str:
    """The registered stopping metrics as caption text (reStructuredText): ``*<label>*:
    <description>`` joined by semicolons, in registry order. The report's captions show it, so
    that they list exactly the methods the figures draw."""

    def rst(text: str) -> str:
        return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")

    return "; ".join(
        f"*{rst(m.label)}*: {rst(m.description)}" if m.description else f"*{rst(m.label)}*"
        for m in get_stopping_metrics().values()
    )


def make_figures(summary: dict, out_dir: str | Path) -> dict[str, dict]:
    """Draw every figure into ``out_dir``; returns stem -> what was drawn."""
    return {stem: figure_function(stem)(summary, out_dir) for stem in FIGURES}


__all__ = ["FIGURES", "FIGURE_STEMS", "figure_files", "figure_function", "make_figures",
           "stopping_metric_legend"]
