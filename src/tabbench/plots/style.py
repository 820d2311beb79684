"""Shared look of the figures: sizes for a two-column paper page, one colour per model."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")  # figures are files; never open a window (also on headless clusters)

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, SymmetricalLogLocator

from tabbench.core.io import atomic_path  # noqa: E402

# the figures' model labels and order are the registry's; handed on to the plotting modules
from tabbench.models.registry import (  # noqa: E402, F401
    PAPER_MODELS,
    model_label,
    order_models,
)

#: full text width of a two-column paper (inches); fonts below are readable at that size
WIDTH = 7.0
PNG_DPI = 200

#: fixed colours so that a model has the same colour in every figure (colour-blind-safe pairs)
MODEL_COLOURS: dict[str, str] = dict(zip(PAPER_MODELS, ("#0072B2", "#E69F00", "#009E73"),
                                         strict=True))
_EXTRA = ("#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")

RC = {
    "font.size": 8,
    "axes.titlesize": 8.5,
    "axes.labelsize": 8,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 7.5,
    "figure.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "pdf.fonttype": 42,  # embed TrueType: text stays selectable/editable in the PDF
}


def model_colour(model: str, models: list[str]) -> str:
    if model in MODEL_COLOURS:
        return MODEL_COLOURS[model]
    others = [m for m in models if m not in MODEL_COLOURS]
    return _EXTRA[others.index(model) % len(_EXTRA)]


@contextmanager
def figure_style() -> Iterator[None]:
    with plt.rc_context(RC):
        yield


def save(fig: Figure, out_dir: str | Path, stem: str) -> list[Path]:
    """Save ``fig`` as ``stem.pdf`` and ``stem.png`` atomically, then close it."""
    out_dir = Path(out_dir)
    paths = []
    for ext in ("pdf", "png"):
        path = out_dir / f"{stem}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=PNG_DPI, bbox_inches="tight", pad_inches=0.03)
        paths.append(path)
    plt.close(fig)
    return paths


def tight_layout_below(fig: Figure, title, pad_points: float = 4.0) -> None:
    """``fig.tight_layout()``, then the panels lowered until the figure's ``title`` (what
    ``fig.suptitle`` returned) clears the highest of them by ``pad_points``. tight_layout's room
    for a suptitle falls short on a tall stack of panels whose drawing reaches above the axes
    (autorank's CD diagrams: the title landed on the first panel's)."""
    fig.tight_layout()
    renderer = fig.canvas.get_renderer()
    panels_top = max(ax.get_tightbbox(renderer).y1 for ax in fig.axes if ax.get_visible())
    clash = panels_top - title.get_window_extent(renderer).y0 + pad_points * fig.dpi / 72
    if clash > 0:
        fig.tight_layout(rect=(0, 0, 1, 1 - clash / fig.bbox.height))


def empty_panel(ax, message: str) -> None:
    """An explanatory panel instead of a crash or a blank axis."""
    ax.set_xticks([])
    ax.set_yticks([])
    for side in ("left", "bottom"):
        ax.spines[side].set_visible(False)
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, wrap=True,
            fontsize=8, color="0.35")


def lower_is_better(label: str) -> str:
    """A y label with the paper's "lower is better" marker; in the rotated label the arrow
    points down, and it never overlaps the data (unlike a marker inside the axes)."""
    return f"{label}\n← lower is better"


def symlog_percent_axis(ax, values) -> None:
    """Symlog y axis with linear range ±1 % (paper Fig. 5), plain tick labels (−10, −1, 0, 1,
    10 %) instead of matplotlib's 10^k notation, and limits that end on a labelled tick so the
    reader can tell the range."""
    ax.set_yscale("symlog", linthresh=1)
    v = [float(x) for x in values if np.isfinite(x)] or [0.0]
    lo, hi = min(v), max(v)

    def cover(x: float) -> float:  # limit: the first of 1, 2, 5, 10, 20, 50, 100 beyond x
        for t in (1, 2, 5, 10, 20, 50, 100):
            if abs(x) <= t:
                return float(np.sign(x) * t)
        return float(np.sign(x) * 100)

    top = max(cover(hi), 1.0)
    bottom = min(cover(lo), -1.0)
    # labels once per decade only (2 and 5 would crowd 1 and 10 on a log scale); the minor
    # ticks and the limit at the next 1-2-5 step show the rest
    steps = (1, 10, 100)
    ticks = sorted({0.0} | {float(t) for t in steps if t <= top}
                   | {-float(t) for t in steps if -t >= bottom})
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}".replace("-", "−")))
    ax.yaxis.set_minor_locator(SymmetricalLogLocator(linthresh=1, base=10,
                                                     subs=[2, 3, 4, 5, 6, 7, 8, 9]))
    ax.set_ylim(bottom * 1.08, top * 1.08)
