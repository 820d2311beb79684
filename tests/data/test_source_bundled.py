"""Source ``bundled``: data/demo parquet + MANIFEST.csv with sha256 verification."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.sources import SourceOptions, bundled


def test_loads_with_manifest_target_and_dtypes(fx, tmp_path):
    df = fx.synthetic_frame(500, n_num=2, n_cat=1, n_classes=3, cat_missing=0.1)
    fx.make_demo_dir(tmp_path, {"toy": df})
    raw = bundled.load("toy", SourceOptions(demo_dir=tmp_path))
    assert raw.num_columns == ["x0", "x1"] and raw.cat_columns == ["c0"]
    assert raw.labels.tolist() == df["class"].tolist()
    assert raw.origin["sha256"] == fx.sha256_file(tmp_path / "toy.parquet")


def test_corrupted_file_detected_by_sha256(fx, tmp_path):
    fx.make_demo_dir(tmp_path, {"toy": fx.synthetic_frame(100)})
    path = tmp_path / "toy.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match="corrupted"):
        bundled.load("toy", SourceOptions(demo_dir=tmp_path))


def test_empty_file_detected(fx, tmp_path):
    fx.make_demo_dir(tmp_path, {"toy": fx.synthetic_frame(100)})
    (tmp_path / "toy.parquet").write_bytes(b"")
    with pytest.raises(DataError, match="corrupted"):
        bundled.load("toy", SourceOptions(demo_dir=tmp_path))


def test_not_in_manifest_or_no_manifest(fx, tmp_path):
    with pytest.raises(SourceUnavailable, match="no manifest"):
        bundled.load("toy", SourceOptions(demo_dir=tmp_path))
    fx.make_demo_dir(tmp_path, {"toy": fx.synthetic_frame(100)})
    with pytest.raises(SourceUnavailable, match="not among the bundled"):
        bundled.load("other", SourceOptions(demo_dir=tmp_path))


def test_duplicated_column_names_are_a_clear_error(fx, tmp_path):
    fx.make_demo_dir(tmp_path, {"toy": fx.synthetic_frame(100)})
    path = tmp_path / "toy.parquet"
    table = pa.table(
        [pa.array([1.0, 2.0]), pa.array([3.0, 4.0]), pa.array(["a", "b"])],
        names=["x", "x", "class"],
    )
    pq.write_table(table, path)
    manifest = (tmp_path / "MANIFEST.csv").read_text()
    old = manifest.strip().split(",")[-1]
    (tmp_path / "MANIFEST.csv").write_text(manifest.replace(old, fx.sha256_file(path)))
    with pytest.raises(DataError, match="duplicated column names"):
        bundled.load("toy", SourceOptions(demo_dir=tmp_path))
