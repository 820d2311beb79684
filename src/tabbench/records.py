"""Column contract of the per-epoch records (DESIGN.md §6) shared by the recorder and selection.

One row per (config, epoch) in ``results/runs/{model}/{dataset}/split{i}.parquet``.

Deliberate addition to DESIGN.md §6: ``n_train, n_val, n_test, n_classes`` are stored on every
row (constant per file, compressed away by parquet) so that selection, aggregation and figures
(e.g. "datasets with ≥ 10K rows", Fig. G.1's size axis) need nothing outside ``results/``.
"""

from __future__ import annotations

#: Validation stopping metrics (DESIGN.md §4), all "lower is better"; stored as ``val_<id>``.
STOPPING_METRIC_IDS: tuple[str, ...] = (
    "logloss",
    "brier",
    "error",
    "auroc",
    "ts_ref",
    "ts_ref_brier",
    "ts_ref_cv5",
    "ir_ref",
)

#: Test metrics (DESIGN.md §4); stored as ``test_<m>`` (raw) and ``test_<m>_ts`` (after TS fit on
#: the validation logits of the same epoch, with Laplace smoothing).
TEST_METRIC_IDS: tuple[str, ...] = ("logloss", "brier", "error", "auroc", "ece")

KEY_COLUMNS: tuple[str, ...] = ("model", "dataset", "split", "config", "epoch")
INFO_COLUMNS: tuple[str, ...] = (
    "params",  # JSON of the config
    "fit_seconds",  # cumulative training wall time at the end of the epoch
    "beta",  # TS inverse temperature fit on val at that epoch
    "n_train",
    "n_val",
    "n_test",
    "n_classes",
)


def val_column(metric_id: str) -> str:
    return f"val_{metric_id}"


def test_column(metric_id: str, ts: bool = False) -> str:
    return f"test_{metric_id}_ts" if ts else f"test_{metric_id}"


def record_columns() -> list[str]:
    """All columns of a per-epoch record, in file order."""
    cols = list(KEY_COLUMNS) + list(INFO_COLUMNS)
    cols += [val_column(m) for m in STOPPING_METRIC_IDS]
    for m in TEST_METRIC_IDS:
        cols += [test_column(m), test_column(m, ts=True)]
    return cols
