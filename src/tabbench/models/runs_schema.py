"""Column contract of the runs files (docs/design.md §6): what the recorder writes and selection
reads. (:mod:`tabbench.models.recorder` is the code that fills these columns.)

One row per (config, epoch) in ``results/runs/{model}/{dataset}/split{i}.parquet``.

Deliberate addition to docs/design.md §6: ``n_train, n_val, n_test, n_classes`` are stored on every
row (constant per file, compressed away by parquet) so that selection, aggregation and figures
(e.g. "datasets with ≥ 10K rows", Fig. G.1's size axis) need nothing outside ``results/``.

The validation columns are ``val_<id>`` for every registered stopping metric
(:func:`tabbench.metrics.registry.stopping_metric_ids`, built-ins first in their fixed order),
so installing a package that registers a metric adds its column to every runs file written
from then on.
"""

from __future__ import annotations

# TEST_METRIC_IDS: the test metrics (docs/design.md §4, defined beside their definitions in
# tabbench.metrics.losses); stored as ``test_<m>`` (raw) and ``test_<m>_ts`` (after TS fit on
# the validation logits of the same epoch, with Laplace smoothing).
from tabbench.metrics.losses import TEST_METRIC_IDS
from tabbench.metrics.registry import stopping_metric_ids

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

VAL_PREFIX = "val_"


def val_column(metric_id: str) -> str:
    return f"{VAL_PREFIX}{metric_id}"


def column_on_test(metric_id: str, ts: bool = False) -> str:
    return f"test_{metric_id}_ts" if ts else f"test_{metric_id}"


def val_columns() -> list[str]:
    """``val_<id>`` of every registered stopping metric, in registry order."""
    return [val_column(m) for m in stopping_metric_ids()]


def columns_on_test() -> list[str]:
    """``test_<m>`` and ``test_<m>_ts`` of every test metric."""
    return [column_on_test(m, ts) for m in TEST_METRIC_IDS for ts in (False, True)]


def record_columns() -> list[str]:
    """All columns of a per-epoch record, in file order."""
    return list(KEY_COLUMNS) + list(INFO_COLUMNS) + val_columns() + columns_on_test()
