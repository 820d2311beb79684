"""The paper's figures (DESIGN.md §8) from the summary tables of :mod:`tabbench.aggregate`.

Plots read only the summary folder, never ``data/`` or the per-epoch records, so regenerating
them is cheap and independent of training. Each figure function returns the numbers it drew
(read back from the artists) so tests can check them against the tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tabbench.plots.boxes import fig5, fig_g2, fig_g3, fig_g4, fig_g5
from tabbench.plots.curves import fig1
from tabbench.plots.size import fig_g1

#: figure stem -> function(summary, out_dir) -> drawn data; stems are the file names
FIGURES: dict[str, Callable[[dict, str | Path], dict]] = {
    "fig5_logloss_large": fig5,
    "figG2_logloss_all_methods": fig_g2,
    "figG1_logloss_vs_size": fig_g1,
    "figG3_error": fig_g3,
    "figG4_auroc": fig_g4,
    "figG5_best_epoch": fig_g5,
    "fig1_curves": fig1,
}


def figure_files(out_dir: str | Path) -> list[Path]:
    """Every file :func:`make_figures` writes (PDF and PNG per figure)."""
    return [Path(out_dir) / f"{stem}.{ext}" for stem in FIGURES for ext in ("pdf", "png")]


def make_figures(summary: dict, out_dir: str | Path) -> dict[str, dict]:
    """Draw every figure into ``out_dir``; returns stem -> drawn data."""
    return {stem: fn(summary, out_dir) for stem, fn in FIGURES.items()}


__all__ = ["FIGURES", "figure_files", "make_figures"]
