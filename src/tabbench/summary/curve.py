"""The Fig. 1 analogue's data: which run it shows, and its validation logloss, TS-refinement and
their gap over epochs (the calibration error the paper's Fig. 1 draws)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from tabbench.core.io import read_parquet
from tabbench.core.layout import runs_file
from tabbench.models.registry import get_models
from tabbench.models.runs_schema import val_column


def curve_model_preference() -> tuple[str, ...]:
    """Models in the order preferred for the Fig. 1 analogue: the registered neural networks
    first (a network shows the U shape), then the other registered models."""

    models = get_models()
    return (tuple(n for n, m in models.items() if m.network)
            + tuple(n for n, m in models.items() if not m.network))


def choose_curve_run(selected: pd.DataFrame, runs_dir: str | Path | None) -> Path | None:
    """The run shown in the Fig. 1 analogue: split 0 of the largest dataset for the first model
    of :func:`curve_model_preference` present (larger validation sets give smoother curves);
    ``None`` if no such runs file exists (e.g. a results folder holding only ``selected/``)."""
    if runs_dir is None or selected.empty:
        return None
    sizes = selected.groupby(["model", "dataset"])["n_rows"].max().reset_index()
    rank = {m: i for i, m in enumerate(curve_model_preference())}
    sizes["_r"] = sizes["model"].map(rank).fillna(len(rank))
    sizes = sizes.sort_values(["_r", "n_rows", "dataset"], ascending=[True, False, True])
    for model, dataset in zip(sizes["model"], sizes["dataset"], strict=False):
        path = Path(runs_file(runs_dir, model, dataset, 0))
        if path.exists():
            return path
    return None


CURVE_COLUMNS = ["model", "dataset", "split", "config", "epoch", "val_logloss", "val_ts_ref",
                 "calibration_gap"]


def extract_curve(runs_file: str | Path | None, config: int = 0) -> pd.DataFrame:
    """Val logloss, TS-refinement and their gap (the calibration error the paper's Fig. 1
    shows) over epochs for one config of one run. Empty frame when ``runs_file`` is None."""
    if runs_file is None:
        return pd.DataFrame({c: [] for c in CURVE_COLUMNS})
    cols = ["model", "dataset", "split", "config", "epoch", val_column("logloss"),
            val_column("ts_ref")]
    df = read_parquet(runs_file, columns=cols, filters=[("config", "==", config)])
    df = df.sort_values("epoch", ignore_index=True)
    df["calibration_gap"] = df[val_column("logloss")] - df[val_column("ts_ref")]
    return df[CURVE_COLUMNS]
