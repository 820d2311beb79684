from __future__ import annotations

import contextlib
import json
import os
import pickle
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures.damaged import FOOTER_DAMAGE, damage

from tabbench.core.io import (
    UnreadableFileError,
    atomic_path,
    check_parquet,
    current_umask,
    read_parquet,
    write_json_atomic,
    write_parquet_atomic,
    write_text_atomic,
)


@contextlib.contextmanager
def umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "file_mode", "dir_mode"), [(0o022, 0o644, 0o755),
                                                             (0o077, 0o600, 0o700)])
def test_outputs_get_the_umask_mode_not_mkstemps_0600(tmp_path, mask, file_mode, dir_mode):
    """A colleague must be able to read a results folder written under umask 022."""
    with umask(mask):
        assert current_umask() == mask
        write_json_atomic({"a": 1}, tmp_path / "new" / "a.json")
        write_parquet_atomic(pd.DataFrame({"x": [1]}), tmp_path / "new" / "deeper" / "b.parquet")
        write_text_atomic("x\n", tmp_path / "c.txt")
        write_text_atomic("y\n", tmp_path / "c.txt")  # replacing a file keeps the umask mode
    for f in ("new/a.json", "new/deeper/b.parquet", "c.txt"):
        assert _mode(tmp_path / f) == file_mode, f
    for d in ("new", "new/deeper"):
        assert _mode(tmp_path / d) == dir_mode, d


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


def _sound_parquet(path: Path) -> Path:
    rng = np.random.default_rng(0)
    write_parquet_atomic(pd.DataFrame({"a": np.arange(5000), "b": rng.random(5000)}), path)
    return path


@pytest.mark.parametrize("how", [*FOOTER_DAMAGE, "page"])
def test_a_damaged_parquet_file_is_one_line_naming_it(tmp_path: Path, how: str) -> None:
    path = _sound_parquet(tmp_path / "results" / "selected" / "m" / "d.parquet")
    damage(path, how)
    with pytest.raises(UnreadableFileError) as err:
        read_parquet(path)
    text = str(err.value)
    assert "\n" not in text and text.startswith(f"{path} cannot be read, truncated or corrupt (")
    assert text.endswith(f"--forcerun select --config results_dir={tmp_path / 'results'}`")
    if how in FOOTER_DAMAGE:
        with pytest.raises(UnreadableFileError):
            check_parquet([path])
    else:  # the footer is intact: only reading the data finds the damage
        check_parquet([path])


def test_reading_a_sound_parquet_file_is_pandas_reading_it(tmp_path: Path) -> None:
    path = _sound_parquet(tmp_path / "x.parquet")
    check_parquet([path])
    pd.testing.assert_frame_equal(read_parquet(path, columns=["b"]),
                                  pd.read_parquet(path, columns=["b"]))


def test_a_missing_file_is_not_called_damaged(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_parquet(tmp_path / "absent.parquet")
    with pytest.raises(FileNotFoundError):
        check_parquet([tmp_path / "absent.parquet"])


def test_the_error_survives_a_worker_process() -> None:
    """Selections are recomputed in worker processes; their error is pickled back."""
    err = UnreadableFileError("results/runs/m/d/split0.parquet", "ArrowInvalid: no footer")
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.path == err.path and back.reason == err.reason
