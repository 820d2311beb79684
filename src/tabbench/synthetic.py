"""Synthetic per-epoch records in the exact schema of DESIGN.md §6.

Why: selection, aggregation and figures must be built and tested before (and independently of)
the trainers, and the figures' timing must be measured on a results folder the size of the full
study (196 datasets × 3 models × 5 splits × 31 configs × up to 1000 epochs), which nobody wants
to train for a test. The curves mimic the paper's observation (Berta et al. 2025, Fig. 1 and
Sec. 4): the validation logloss is U-shaped and reaches its minimum *earlier* than
TS-refinement, because the calibration error (logloss − TS-refinement) starts growing before
the refinement error stops improving. So "TS-Ref.+TS" selection wins a few percent of test
logloss over "Logloss+TS", as in the paper — but the numbers mean nothing beyond that.

The columns follow the registries: ``val_<id>`` for every registered stopping metric and the
paper epochs of every registered model. The two curves the paper's claim is about are modelled
as such — validation logloss = refinement + calibration gap, TS-refinement = refinement alone —
and every other stopping metric gets its own fixed mixture of the two (weights drawn from its
id), quantised to steps of 1/N_val as a mean over the validation samples would be for the error
(so ties happen, as in real records).

Everything is vectorised over (config, epoch); a full-study folder takes minutes, not hours.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.signal import lfilter

from tabbench.io import write_parquet_atomic
from tabbench.layout import ResultsLayout
from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.registry import get_models
from tabbench.runs_schema import record_columns, test_column, val_column

#: the stopping metrics of the paper's claim (module docstring)
_LOGLOSS, _TS_REFINEMENT = "logloss", "ts_ref"
#: epochs of a model the registry does not know
_UNKNOWN_MODEL_EPOCHS = (256, 256)


def paper_epochs() -> dict[str, tuple[int, int]]:
    """(default config, tuned configs) epochs of every registered model under the paper's
    protocol (DESIGN.md §5)."""
    return {name: (spec.paper_epochs[spec.epochs_key(0)], spec.paper_epochs[spec.epochs_key(1)])
            for name, spec in get_models().items()}


@dataclass(frozen=True)
class SyntheticDataset:
    name: str
    n_rows: int
    n_classes: int

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(n_train, n_val, n_test) of a 64/16/20 split (DESIGN.md §3)."""
        n_test = int(round(0.2 * self.n_rows))
        n_val = int(round(0.2 * (self.n_rows - n_test)))
        return self.n_rows - n_val - n_test, n_val, n_test


#: the bundled demo suite's datasets with their real sizes (DESIGN.md §3), for demo-like folders
DEMO_DATASETS: tuple[SyntheticDataset, ...] = (
    SyntheticDataset("adult", 48_842, 2),
    SyntheticDataset("letter", 20_000, 26),
    SyntheticDataset("MagicTelescope", 19_020, 2),
    SyntheticDataset("pendigits", 10_992, 10),
    SyntheticDataset("satimage", 6_435, 6),
    SyntheticDataset("phoneme", 5_404, 2),
    SyntheticDataset("spambase", 4_597, 2),
    SyntheticDataset("kr-vs-kp", 3_196, 2),
    SyntheticDataset("segment", 2_310, 7),
    SyntheticDataset("kc1", 2_109, 2),
    SyntheticDataset("cmc", 1_473, 3),
    SyntheticDataset("credit-g", 1_000, 2),
)


def full_study_datasets(n: int = 196, n_large: int = 65, seed: int = 0) -> list[SyntheticDataset]:
    """``n`` datasets, ``n_large`` of them with ≥ 10K rows (the paper's counts), sizes log-uniform
    in [1K, 10K) and [10K, 100K], classes mostly binary."""
    rng = np.random.default_rng(seed)
    small = np.exp(rng.uniform(np.log(1_000), np.log(9_999), n - n_large))
    large = np.exp(rng.uniform(np.log(10_000), np.log(100_000), n_large))
    rows = np.concatenate([small, large]).astype(int)
    classes = rng.choice([2, 2, 2, 3, 5, 10, 26], size=n)
    return [SyntheticDataset(f"ds{i:03d}", int(r), int(k))
            for i, (r, k) in enumerate(zip(rows, classes, strict=True))]


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode())


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, int], sigma: float) -> np.ndarray:
    """AR(1) noise along epochs (ρ = 0.8): consecutive epochs are scored on the same validation
    set, so their fluctuations are correlated, not independent."""
    rho = 0.8
    white = rng.normal(0.0, sigma * np.sqrt(1 - rho**2), size=shape)
    return lfilter([1.0], [1.0, -rho], white, axis=1)


def _curves(rng: np.random.Generator, n_cfg: int, n_epochs: int, ds: SyntheticDataset,
            spread: float) -> dict[str, np.ndarray]:
    """All metric columns as (n_cfg, n_epochs) arrays. ``spread`` widens config quality (tuned
    configs vary more than the single default)."""
    _, n_val, n_test = ds.sizes
    k = ds.n_classes
    s = (np.arange(1, n_epochs + 1) / n_epochs)[None, :]
    col = (n_cfg, 1)
    floor = 0.15 + 0.5 * rng.beta(2, 3) * np.log(k) / np.log(2)  # the dataset's difficulty
    r0 = floor * rng.uniform(1.0, 1.0 + spread, col)
    start = np.log(k) * rng.uniform(0.9, 1.1, col)
    speed = rng.uniform(4, 14, col)
    s_ref = rng.uniform(0.45, 0.95, col)  # refinement starts to overfit late ...
    s_cal = s_ref * rng.uniform(0.2, 0.6, col)  # ... calibration error starts growing earlier
    b_ref = rng.uniform(0.05, 0.4, col) * floor
    b_cal = rng.uniform(0.2, 1.2, col) * floor
    ref = r0 + (start - r0) * np.exp(-speed * s) + b_ref * np.clip(s - s_ref, 0, None) ** 2
    gap = b_cal * np.clip(s - s_cal, 0, None) ** 1.5 + 0.02 * floor * np.exp(-speed * s)
    noise_v = 0.6 / np.sqrt(n_val)
    noise_t = 0.6 / np.sqrt(n_test)
    shape = (n_cfg, n_epochs)
    nv = _smooth_noise(rng, shape, noise_v)
    nt = _smooth_noise(rng, shape, noise_t)
    gen_gap = rng.uniform(1.0, 1.06, col)  # test slightly worse than val

    def quantise(x: np.ndarray, n: int) -> np.ndarray:  # accuracy moves in steps of 1/n: ties
        return np.clip(np.round(x * n) / n, 0, 1)

    val_ref = ref + nv
    test_ref = ref * gen_gap + nt
    err = 0.45 * ref / (1 + ref)
    out = {}
    for metric in stopping_metric_ids():
        if metric == _LOGLOSS:
            values = val_ref + gap
        elif metric == _TS_REFINEMENT:
            values = val_ref
        else:  # a fixed mixture per metric (weights from its id), own noise, quantised
            w_ref, w_gap = np.random.default_rng(_seed("weights", metric)).uniform(0.3, 1.0, 2)
            mix = w_ref * (val_ref + w_gap * gap) + _smooth_noise(rng, shape, 0.3 * noise_v)
            values = np.round(mix * n_val) / n_val
        out[val_column(metric)] = values
    out["beta"] = 1.0 / (1.0 + 1.5 * gap / floor)
    residual = 0.01 * floor  # TS fit on val leaves a little miscalibration on test
    for ts in (False, True):
        g = residual if ts else gap + residual
        out[test_column("logloss", ts)] = test_ref + g
        out[test_column("brier", ts)] = 0.55 * (test_ref + 0.8 * g)
        out[test_column("error", ts)] = quantise(err * gen_gap + 0.5 * nt, n_test)
        auroc = np.clip(0.3 * (err * gen_gap) ** 1.2 + 0.3 * nt, 0, 1)
        out[test_column("auroc", ts)] = auroc + (0.0 if ts else 1e-4 * gap)
        out[test_column("ece", ts)] = np.sqrt(g / (1 + g)) * 0.3 + np.abs(nt)
    return out


def synthetic_run(model: str, ds: SyntheticDataset, split: int, n_configs: int,
                  epochs: tuple[int, int] | None = None, seed: int = 0,
                  diverge_rate: float | None = None) -> pd.DataFrame:
    """The per-epoch record of one (model, dataset, split): config 0 (default) with
    ``epochs[0]`` epochs and configs 1..n_configs with ``epochs[1]`` (default: the registered
    paper epochs of ``model``).

    ``diverge_rate``: probability that a config's metrics become NaN from some epoch on (a
    diverged network); default 3% for the neural networks (and unregistered models), 0 for the
    others. A diverged config may diverge at epoch 1 (an all-NaN config, which selection skips).
    """
    spec = get_models().get(model)
    e_default, e_tuned = epochs or paper_epochs().get(model, _UNKNOWN_MODEL_EPOCHS)
    if diverge_rate is None:
        diverge_rate = 0.03 if spec is None or spec.network else 0.0
    rng = np.random.default_rng(_seed(seed, model, ds.name, split))
    n_train, n_val, n_test = ds.sizes
    blocks = []
    regimes = (([0], e_default, 0.05), (list(range(1, n_configs + 1)), e_tuned, 0.4))
    for cfgs, n_ep, spread in regimes:
        if not cfgs:
            continue
        cols = _curves(rng, len(cfgs), n_ep, ds, spread)
        n_cfg = len(cfgs)
        diverged = rng.random(n_cfg) < diverge_rate
        at = np.where(rng.random(n_cfg) < 0.3, 0, rng.integers(0, n_ep, n_cfg))
        dead = diverged[:, None] & (np.arange(n_ep)[None, :] >= at[:, None])
        per_epoch = 1e-6 * n_train * rng.uniform(0.5, 2.0, (n_cfg, 1))
        block = {
            "config": np.repeat(np.asarray(cfgs, dtype=np.int64), n_ep),
            "epoch": np.tile(np.arange(1, n_ep + 1, dtype=np.int64), n_cfg),
            "fit_seconds": np.cumsum(np.broadcast_to(per_epoch, (n_cfg, n_ep)), axis=1).ravel(),
            "params": np.repeat(
                [json.dumps({"config": c, "model": model}, sort_keys=True) for c in cfgs], n_ep),
        }
        for name, arr in cols.items():
            block[name] = np.where(dead, np.nan, arr).ravel()
        blocks.append(pd.DataFrame(block))
    df = pd.concat(blocks, ignore_index=True)
    n = len(df)
    const = {"model": model, "dataset": ds.name, "split": split, "n_train": n_train,
             "n_val": n_val, "n_test": n_test, "n_classes": ds.n_classes}
    for key, value in const.items():
        df[key] = np.full(n, value, dtype=np.int64) if isinstance(value, int) else value
    df["model"] = df["model"].astype(str)
    df["dataset"] = df["dataset"].astype(str)
    df["params"] = df["params"].astype(str)
    return df[record_columns()]


def run_path(results: Path, model: str, dataset: str, split: int) -> Path:
    return Path(ResultsLayout(results).runs(model, dataset, split))


def write_synthetic_results(results: str | Path, datasets: Iterable[SyntheticDataset],
                            models: Sequence[str] | None = None,
                            n_splits: int = 5, n_configs: int = 30,
                            epochs: Mapping[str, tuple[int, int]] | None = None,
                            seed: int = 0) -> list[Path]:
    """Write ``results/runs/{model}/{dataset}/split{i}.parquet`` for every combination
    (``models``: default every registered model)."""
    models = tuple(get_models()) if models is None else models
    paths = []
    for ds in datasets:
        for model in models:
            ep = (epochs or {}).get(model)
            for split in range(n_splits):
                df = synthetic_run(model, ds, split, n_configs, ep, seed)
                path = run_path(Path(results), model, ds.name, split)
                write_parquet_atomic(df, path)
                paths.append(path)
    return paths


__all__ = [
    "DEMO_DATASETS",
    "SyntheticDataset",
    "full_study_datasets",
    "paper_epochs",
    "run_path",
    "synthetic_run",
    "write_synthetic_results",
]
