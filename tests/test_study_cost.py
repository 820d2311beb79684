"""benchmarks/study_cost.py: the log parser and the log-linear fit recover known costs."""

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("study_cost", REPO / "benchmarks" / "study_cost.py")
study_cost = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(study_cost)


def test_parse_hms():
    assert study_cost.parse_hms("41.1s") == pytest.approx(41.1)
    assert study_cost.parse_hms("1:02:03") == 3723


def test_config_walls_from_progress_lines(tmp_path):
    log = tmp_path / "split0.log"
    log.write_text(
        "[m/d/split0] 2 configs, n_train=10\n"
        "[m/d/split0] config 0 (1/2) epoch 5/10 elapsed 2.0s eta 2.0s\n"
        "[m/d/split0] config 0 (1/2) epoch 10/10 elapsed 4.5s eta 0.0s\n"
        "[m/d/split0] config 1 (2/2) epoch 10/10 elapsed 0:01:04 eta 0.0s\n"
        "[m/d/split0] done: 2 configs recorded, 0 failed -> x\n")
    assert study_cost.config_walls(log) == {0: 4.5, 1: 59.5}
    log.write_text(log.read_text().replace("epoch 5/10", "already done (part file) epoch 5/10"))
    assert study_cost.config_walls(log) is None  # a resumed job's elapsed restarts


def test_fit_recovers_a_known_power_law():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        n, f = int(rng.integers(1_000, 50_000)), int(rng.integers(3, 60))
        k = int(rng.integers(2, 20))
        keff = 1 if k == 2 else k
        s_epoch = 1e-4 * n**0.9 * f**0.3 * keff**0.8
        rows.append({"model": "xgboost", "regime": "tuned", "dataset": f"d{i}", "split": "split0",
                     "epochs": 1000, "wall": s_epoch * 1000, "n_train": n, "n_features": f,
                     "n_classes": k})
    coefs = study_cost.fit_costs(pd.DataFrame(rows))[("xgboost", "tuned")]
    np.testing.assert_allclose(coefs, [np.log(1e-4), 0.9, 0.3, 0.8], atol=1e-8)


def test_paper_datasets_drop_what_the_paper_drops():
    data = study_cost.paper_datasets()
    assert len(data) == 195
    assert "Pima_Indians_Diabetes_Database" not in set(data["dataset"])
    assert data["n_train"].max() == int(100_000 * 0.64)


def test_bundled_datasets_are_the_shipped_ones_at_full_size():
    data = study_cost.bundled_datasets()
    manifest = pd.read_csv(REPO / "data" / "demo" / "MANIFEST.csv")
    assert sorted(data["dataset"]) == sorted(manifest["name"])
    adult = data.set_index("dataset").loc["adult"]
    rows = int(manifest.set_index("name").loc["adult", "rows"])
    assert adult["n_train"] == int(min(rows, 100_000) * 0.64)  # no demo cap
    assert (data["n_classes"] >= 2).all() and (data["n_features"] >= 1).all()
