from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from tabbench.io import atomic_path, write_json_atomic, write_parquet_atomic


def test_failed_write_leaves_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    write_json_atomic({"a": 1}, target)
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("partial")
            raise RuntimeError("crash mid-write")
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_parquet_roundtrip_creates_parent_dirs(tmp_path: Path) -> None:
    df = pd.DataFrame({"x": [1.0, 2.0], "c": pd.Categorical(["a", None])})
    target = tmp_path / "deep" / "dir" / "f.parquet"
    write_parquet_atomic(df, target)
    back = pd.read_parquet(target)
    pd.testing.assert_frame_equal(back, df)
