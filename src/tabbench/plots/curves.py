"""Fig. 1 analogue: validation logloss = TS-refinement + calibration error, over epochs.

For one run (default config), the validation logloss is U-shaped and bottoms out *before* the
TS-refinement does, because the calibration error (their gap, the part TS removes) starts growing
first (Berta et al. 2025, Fig. 1). Vertical lines mark the two argmins: the epochs "Logloss" and
"TS-Ref." stopping would pick.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np
import pandas as pd

from tabbench.models.registry import epoch_name
from tabbench.plots.style import WIDTH, empty_panel, figure_style, model_label, save


def _first_argmin(values: np.ndarray) -> int | None:
    v = np.where(np.isfinite(values), values, np.inf)
    return None if not np.isfinite(v).any() else int(np.argmin(v))


def fig1(summary: dict, out_dir: str | Path) -> dict:
    curve: pd.DataFrame = summary["curve"]
    drawn: dict = {}
    with figure_style():
        fig, (ax, ax_gap) = plt.subplots(1, 2, figsize=(WIDTH, 2.8))
        if curve.empty:
            fig.suptitle("Fig. 1 analogue: validation logloss over epochs (no run available)")
            msg = ("No per-epoch record under results/runs/\n"
                   "(this results folder holds only selections)")
            empty_panel(ax, msg)
            empty_panel(ax_gap, msg)
        else:
            model, dataset = curve["model"].iloc[0], curve["dataset"].iloc[0]
            split, config = int(curve["split"].iloc[0]), int(curve["config"].iloc[0])
            unit = epoch_name(model)
            fig.suptitle(f"Fig. 1 analogue: {model_label(model)} on {dataset} "
                         f"(split {split}, default config {config})")
            e = curve["epoch"].to_numpy()
            series = {"Val. logloss": curve["val_logloss"].to_numpy(),
                      "Val. TS-refinement": curve["val_ts_ref"].to_numpy()}
            colours = {"Val. logloss": "#D55E00", "Val. TS-refinement": "#0072B2"}
            for label, y in series.items():
                (line,) = ax.plot(e, y, color=colours[label], lw=1.3, label=label)
                i = _first_argmin(y)
                drawn[label] = {"epoch": line.get_xdata().tolist(),
                                "value": np.asarray(line.get_ydata(), float).tolist(),
                                "argmin_epoch": None if i is None else int(e[i])}
                if i is not None:
                    ax.axvline(e[i], color=colours[label], lw=0.9, ls="--")
            ax.set_xlabel(unit.capitalize())
            ax.set_ylabel("Validation loss")
            ax.set_title("Logloss and TS-refinement (dashed: argmin)")
            fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=2,
                       frameon=False, bbox_to_anchor=(0.5, -0.01))
            (gline,) = ax_gap.plot(e, curve["calibration_gap"].to_numpy(), color="0.25", lw=1.3)
            drawn["Calibration error"] = {"epoch": gline.get_xdata().tolist(),
                                          "value": np.asarray(gline.get_ydata(), float).tolist()}
            ax_gap.axhline(0, color="0.6", lw=0.7, ls=":")
            ax_gap.set_xlabel(unit.capitalize())
            ax_gap.set_ylabel("Logloss − TS-refinement")
            ax_gap.set_title("Calibration error (removed by TS)")
            for a in (ax, ax_gap):
                a.grid(color="0.93", lw=0.6)
        fig.tight_layout(rect=(0, 0.07, 1, 1))
        files = save(fig, out_dir, "fig1_curves")
    return {"files": files, "lines": drawn}
