"""tabbench.study.cost_model: the train log parser reads what a train job writes, and the log-linear
fit recovers known costs (shared by tabbench status and benchmarks/study_cost.py)."""

import io

import numpy as np
import pandas as pd
import pytest
from fixtures.data_fixtures import write_processed_toy
from fixtures.jobs import train_job

from tabbench.study import cost_model


def test_parse_hms():
    assert cost_model.parse_hms("41.1s") == pytest.approx(41.1)
    assert cost_model.parse_hms("1:02:03") == 3723


def test_config_walls_from_progress_lines(tmp_path):
    log = tmp_path / "split0.log"
    log.write_text(
        "[m/d/split0] 2 configs, n_train=10\n"
        "[m/d/split0] config 0 (1/2) epoch 5/10 elapsed 2.0s eta 2.0s\n"
        "[m/d/split0] config 0 (1/2) epoch 10/10 elapsed 4.5s eta 0.0s\n"
        "[m/d/split0] config 1 (2/2) epoch 10/10 elapsed 0:01:04 eta 0.0s\n"
        "[m/d/split0] done: 2 configs recorded, 0 failed -> x\n")
    assert cost_model.config_walls(log) == {0: 4.5, 1: 59.5}
    log.write_text(log.read_text().replace("epoch 5/10", "already done (part file) epoch 5/10"))
    assert cost_model.config_walls(log) is None  # a resumed job's elapsed restarts


def test_config_walls_read_a_real_train_log(tmp_path):
    """The parser and the writer (tabbench.study.train_job's progress lines) agree: every config of
    a finished job has a wall, and they add up to the job's last "elapsed"."""
    processed, splits = write_processed_toy(tmp_path / "data", n=900, n_classes=2)
    log = io.StringIO()
    train_job("xgboost", "toy", 0, processed, splits, tmp_path / "split0.parquet",
              n_configs=2, epochs={"xgboost_default": 20, "xgboost_tuned": 30}, seed=0,
              progress=log)
    path = tmp_path / "split0.log"
    path.write_text(log.getvalue())
    walls = cost_model.config_walls(path)
    assert sorted(walls) == [0, 1, 2] and min(walls.values()) >= 0
    last = [line for line in log.getvalue().splitlines() if " elapsed " in line][-1]
    total = cost_model.parse_hms(last.split(" elapsed ")[1].split()[0])
    assert sum(walls.values()) == pytest.approx(total)


def test_fit_recovers_a_known_power_law():
    rng = np.random.default_rng(0)
    rows = []
    for i in range(12):
        n, f = int(rng.integers(1_000, 50_000)), int(rng.integers(3, 60))
        k = int(rng.integers(2, 20))
        keff = 1 if k == 2 else k
        s_epoch = 1e-4 * n**0.9 * f**0.3 * keff**0.8
        rows.append({"model": "xgboost", "regime": "tuned", "dataset": f"d{i}", "split": 0,
                     "epochs": 1000, "wall": s_epoch * 1000, "n_train": n, "n_features": f,
                     "n_classes": k})
    coefs = cost_model.fit_costs(pd.DataFrame(rows))[("xgboost", "tuned")]
    np.testing.assert_allclose(coefs, [np.log(1e-4), 0.9, 0.3, 0.8], atol=1e-8)
    s = cost_model.seconds_per_epoch(coefs, 10_000, 8, 3)[0]
    assert s == pytest.approx(1e-4 * 10_000**0.9 * 8**0.3 * 3**0.8)


def test_a_job_too_fast_for_the_log_is_left_out_of_the_fit():
    """A job whose configs took 0.0 s in the log's 0.1 s steps has no logarithm: it is not a
    point of the fit (it made the coefficients NaN)."""
    rows = [{"model": "m", "regime": "default", "dataset": f"d{i}", "split": 0, "epochs": 10,
             "wall": wall, "n_train": n, "n_features": 4, "n_classes": 2}
            for i, (n, wall) in enumerate([(1_000, 1.0), (2_000, 2.0), (500, 0.0)])]
    points = cost_model.fit_points(pd.DataFrame(rows))
    assert sorted(points["dataset"]) == ["d0", "d1"]
    coefs = cost_model.fit_costs(pd.DataFrame(rows))[("m", "default")]
    np.testing.assert_allclose(coefs[:2], [np.log(1e-4), 1.0], atol=1e-9)
