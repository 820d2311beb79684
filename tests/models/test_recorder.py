"""Recorder bookkeeping, checked with a transparent stand-in for the metrics (the real metrics
are tested in tests/metrics and end to end in tests/study/test_train_job.py)."""

import types

import numpy as np
import pandas as pd
import pytest

from tabbench.metrics.registry import stopping_metric_ids
from tabbench.models.base import EpochChunk
from tabbench.models.recorder import (
    EpochRecorder,
    Labels,
    RunKey,
    check_records,
    chunk_length,
    empty_records,
)
from tabbench.models.runs_schema import TEST_METRIC_IDS, record_columns


def _tagging_metrics(calls):
    """Every metric of epoch e = the mean of epoch e's logits (+ a per-metric offset), so each
    value says which epoch's logits it came from."""

    def stopping(z, y, beta0=None):
        calls.append(("stop", z.shape, beta0))
        assert np.isfinite(z).all()
        tag = z.mean(axis=(1, 2))
        out = {m: tag + i for i, m in enumerate(stopping_metric_ids())}
        out["beta"] = tag * 10
        return out

    def test(z, y, beta, n_fit):
        calls.append(("test", z.shape, n_fit))
        np.testing.assert_allclose(beta, z.mean(axis=(1, 2)) * 10)  # val tag == test tag here
        tag = z.mean(axis=(1, 2))
        out = {}
        for i, m in enumerate(TEST_METRIC_IDS):
            out[m], out[m + "_ts"] = tag + 100 + i, tag + 200 + i
        return out

    return types.SimpleNamespace(stopping_metrics_batched=stopping, metrics_on_test_batched=test)


def _chunk(first, E, n_val=4, n_test=5, K=3, bad=()):
    tags = np.arange(first, first + E, dtype=np.float64)
    val = np.broadcast_to(tags[:, None, None], (E, n_val, K)).copy()
    test = np.broadcast_to(tags[:, None, None], (E, n_test, K)).copy()
    for e in bad:
        val[e - first, 0, 0] = np.inf if e % 2 else np.nan
    return EpochChunk(first, val, test, np.cumsum(np.full(E, 0.5)) + first)


def _recorder(n_epochs, calls, K=3):
    return EpochRecorder(RunKey("mlp", "toy", 2, 4), {"lr": 0.1, "b": [1]},
                         Labels(np.arange(4) % K, np.arange(5) % K, n_train=17, n_classes=K),
                         n_epochs, metrics=_tagging_metrics(calls))


def test_rows_follow_the_epochs_of_each_chunk():
    calls = []
    rec = _recorder(7, calls)
    rec.add(_chunk(1, 3))
    rec.add(_chunk(4, 4))
    df = rec.frame()
    assert list(df.columns) == record_columns()
    assert df["epoch"].tolist() == list(range(1, 8))
    np.testing.assert_allclose(df["val_logloss"], df["epoch"])
    ir_ref = stopping_metric_ids().index("ir_ref")
    np.testing.assert_allclose(df["val_ir_ref"], df["epoch"] + ir_ref)
    np.testing.assert_allclose(df["beta"], df["epoch"] * 10)
    np.testing.assert_allclose(df["test_ece_ts"], df["epoch"] + 200 + 4)
    assert (df[["model", "dataset", "split", "config"]].drop_duplicates().values.tolist()
            == [["mlp", "toy", 2, 4]])
    assert set(df["params"]) == {'{"b": [1], "lr": 0.1}'}
    assert (df[["n_train", "n_val", "n_test", "n_classes"]].iloc[0].tolist() == [17, 4, 5, 3])
    assert [c[0] for c in calls] == ["stop", "test", "stop", "test"]  # one call per chunk
    assert calls[1][2] == 4  # n_fit = size of the validation set
    # TS warm start: the second chunk's fits start at the first chunk's last β (= tag 3 · 10)
    assert calls[0][2] is None and calls[2][2] == pytest.approx(30.0)
    check_records(df, {4: 7})


def test_non_finite_epochs_get_nan_metrics_and_never_reach_the_metrics():
    calls = []
    rec = _recorder(5, calls)
    rec.add(_chunk(1, 5, bad=(2, 5)))
    df = rec.frame()
    metric_cols = [c for c in record_columns() if c.startswith(("val_", "test_"))] + ["beta"]
    assert df.loc[df["epoch"].isin([2, 5]), metric_cols].isna().all().all()
    assert df.loc[~df["epoch"].isin([2, 5]), metric_cols].notna().all().all()
    np.testing.assert_allclose(df.loc[df["epoch"] == 3, "val_logloss"], 3)
    assert calls[0][1][0] == 3


def test_all_epochs_non_finite():
    calls = []
    rec = _recorder(2, calls)
    rec.add(_chunk(1, 2, bad=(1, 2)))
    assert rec.frame()["val_logloss"].isna().all() and calls == []


def test_chunk_validation():
    rec = _recorder(4, [])
    with pytest.raises(ValueError, match="starts at epoch 2"):
        rec.add(_chunk(2, 1))
    with pytest.raises(ValueError, match="do not match"):
        rec.add(_chunk(1, 2, K=2))
    with pytest.raises(ValueError, match="past the last epoch"):
        rec.add(_chunk(1, 5))
    rec.add(_chunk(1, 3))
    with pytest.raises(RuntimeError, match="yielded 3 epochs, expected 4"):
        rec.frame()


def _good():
    rec = _recorder(3, [])
    rec.add(_chunk(1, 3))
    return rec.frame()


def test_check_records_rejects_bad_frames():
    df = _good()
    check_records(df)
    with pytest.raises(ValueError, match="columns differ"):
        check_records(df.drop(columns=["val_ts_ref"]))
    with pytest.raises(ValueError, match="columns differ"):
        check_records(df[record_columns()[::-1]])
    with pytest.raises(ValueError, match="not 1..3"):
        check_records(df.iloc[[0, 2, 1]])
    with pytest.raises(ValueError, match="dtype"):
        check_records(df.astype({"epoch": float}))
    with pytest.raises(ValueError, match="expected"):
        check_records(df, {4: 4})
    bad = df.copy()
    bad.loc[1, "fit_seconds"] = 0.0
    with pytest.raises(ValueError, match="cumulative"):
        check_records(bad)
    two = pd.concat([df, df.assign(dataset="other")])
    with pytest.raises(ValueError, match="several values"):
        check_records(two)


def test_empty_records_and_parquet_round_trip(tmp_path):
    check_records(empty_records())
    df = _good()
    df.to_parquet(tmp_path / "r.parquet")
    back = pd.read_parquet(tmp_path / "r.parquet")
    check_records(back)
    pd.testing.assert_frame_equal(back, df, check_dtype=False)


def test_chunk_length():
    assert chunk_length(100, 10) == 100
    assert chunk_length(100, 10, max_bytes=250) == 25
    assert chunk_length(100, 10**12) == 1


def test_params_json_is_canonical():
    from tabbench.models.recorder import params_json

    assert params_json({"b": np.float64(0.5), "a": np.int64(3)}) == '{"a": 3, "b": 0.5}'
    with pytest.raises(TypeError, match="not JSON-serialisable"):
        params_json({"a": object()})
