"""Failed configs are counted where a reader looks (meta.json, summary.md, the claims page), per
(model, dataset) with their reasons, and a split whose every config failed is named."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from tabbench.core.failures import failures_markdown, read_failures
from tabbench.core.layout import ResultsLayout
from tabbench.summary.aggregate import folder_failures
from tabbench.summary.claims import claims_markdown


def _sidecar(layout: ResultsLayout, model: str, dataset: str, split: int, failures: list) -> None:
    runs = Path(layout.runs(model, dataset, split))
    runs.parent.mkdir(parents=True, exist_ok=True)
    runs.touch()
    Path(layout.failures(model, dataset, split)).write_text(json.dumps(failures))


def _failure(config: int, error: str, message: str = "boom") -> dict:
    return {"config": config, "params": {}, "n_epochs": 3, "epochs_done": 0,
            "error_type": error, "message": message, "traceback": "..."}


def test_failures_are_counted_per_model_and_dataset_with_reasons(tmp_path):
    layout = ResultsLayout(tmp_path)
    _sidecar(layout, "mlp", "adult", 0, [_failure(2, "FloatingPointError"),
                                         _failure(5, "OutOfMemoryError", "CUDA out of memory")])
    _sidecar(layout, "mlp", "adult", 1, [])
    _sidecar(layout, "mlp", "adult", 2, [_failure(0, "FloatingPointError"),
                                         _failure(1, "FloatingPointError")])  # all configs
    _sidecar(layout, "xgboost", "adult", 0, [])
    (Path(layout.failures("mlp", "adult", 1))).write_text("not json")  # unreadable: no count
    selected = pd.DataFrame({"model": ["mlp", "mlp", "xgboost"], "dataset": ["adult"] * 3,
                             "split": [0, 1, 0]})  # split 2 of the MLP has no selection
    counts = folder_failures(selected, layout.runs_dir)
    assert counts["configs"] == 4
    (row,) = counts["by"]
    assert (row["model"], row["dataset"], row["n_configs"]) == ("mlp", "adult", 4)
    assert row["splits"] == [0, 2] and row["splits_without_records"] == [2]
    assert row["reasons"] == {"FloatingPointError": 3, "OutOfMemoryError": 1}
    text = "\n".join(failures_markdown(counts))
    assert "4 configs failed" in text and "FloatingPointError × 3, OutOfMemoryError × 1" in text
    assert "| mlp | adult | 4 | 0, 2 | 2 |" in text
    md = claims_markdown(pd.DataFrame(), 10_000, failures=counts)
    assert "4 configs failed in 1 (model, dataset) pairs" in md
    assert folder_failures(selected, None) == {"configs": 0, "by": []}
    assert failures_markdown({"configs": 0, "by": []}) == []
    assert len(read_failures(layout.runs_dir, [("mlp", "adult", 0), ("mlp", "nope", 0)])) == 2
