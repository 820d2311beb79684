"""Splits (docs/design.md §3): 64/16/20 sizes, disjoint and complete, deterministic, seed i for
split i, optional stratification, and the on-disk contract read by load_split_data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tabbench.data.dataset import LABEL_COLUMN, load_split_data
from tabbench.data.errors import DataError
from tabbench.data.splits import make_splits, one_split, split_sizes


@pytest.mark.parametrize(
    "n,sizes",
    [(1000, (640, 160, 200)), (1213, (776, 194, 243)), (100_000, (64_000, 16_000, 20_000))],
)
def test_sizes_are_64_16_20(n, sizes):
    assert split_sizes(n) == sizes
    parts = one_split(np.zeros(n), seed=0)
    assert tuple(len(parts[r]) for r in ("train", "val", "test")) == sizes


def test_disjoint_and_complete_for_every_split():
    n = 1213
    table = make_splits(np.zeros(n), n_splits=5)
    assert list(table.columns) == ["split", "row", "role"]
    for _, g in table.groupby("split"):
        assert len(g) == n and g["row"].is_unique
        assert set(g["row"]) == set(range(n))


def test_split_i_is_permutation_with_seed_i():
    n = 1000
    table = make_splits(np.zeros(n), n_splits=3)
    for i in range(3):
        perm = np.random.default_rng(i).permutation(n)
        g = table[table["split"] == i]
        assert set(g.loc[g.role == "test", "row"]) == set(perm[:200])
        assert set(g.loc[g.role == "val", "row"]) == set(perm[200:360])
        assert set(g.loc[g.role == "train", "row"]) == set(perm[360:])


def test_deterministic_and_splits_differ():
    y = np.zeros(2000)
    a, b = make_splits(y, 5), make_splits(y, 5)
    pd.testing.assert_frame_equal(a, b)
    tests = [frozenset(a[(a.split == i) & (a.role == "test")]["row"]) for i in range(5)]
    assert len(set(tests)) == 5


def test_global_seed_shifts_the_seeds():
    y = np.zeros(1000)
    shifted = make_splits(y, 2, seed=1)
    plain = make_splits(y, 3, seed=0)
    first = shifted[shifted.split == 0].drop(columns="split").reset_index(drop=True)
    second = plain[plain.split == 1].drop(columns="split").reset_index(drop=True)
    pd.testing.assert_frame_equal(first, second)


def test_stratified_keeps_class_proportions():
    y = np.array([0] * 900 + [1] * 100)
    table = make_splits(y, 3, stratify=True)
    for i in range(3):
        g = table[table.split == i]
        for role, size in (("train", 640), ("val", 160), ("test", 200)):
            rows = g.loc[g.role == role, "row"].to_numpy()
            assert len(rows) == size
            assert abs(y[rows].mean() - 0.1) < 0.011
        assert set(g["row"]) == set(range(1000))


def test_unstratified_is_the_default_and_differs_from_stratified():
    y = np.array([0] * 900 + [1] * 100)
    assert not make_splits(y, 1).equals(make_splits(y, 1, stratify=True))
    pd.testing.assert_frame_equal(make_splits(y, 1), make_splits(y, 1, stratify=False))


def test_stratify_impossible_is_a_clear_error():
    y = np.array([0] * 999 + [1])
    with pytest.raises(DataError, match="cannot stratify"):
        make_splits(y, 1, stratify=True)


def test_too_few_rows():
    with pytest.raises(DataError, match="too few"):
        make_splits(np.zeros(2), 1)


def test_contract_roundtrip_with_load_split_data(tmp_path):
    n = 1000
    rng = np.random.default_rng(0)
    df = pd.DataFrame(
        {
            "x": rng.normal(size=n),
            "c": pd.Categorical(rng.choice(["a", "b"], size=n)),
            LABEL_COLUMN: rng.integers(0, 3, size=n).astype(np.int64),
        }
    )
    df.to_parquet(tmp_path / "p.parquet", index=False)
    make_splits(df[LABEL_COLUMN].to_numpy(), 2).to_parquet(tmp_path / "s.parquet", index=False)
    sd = load_split_data(tmp_path / "p.parquet", tmp_path / "s.parquet", 1)
    assert (len(sd.y_train), len(sd.y_val), len(sd.y_test)) == (640, 160, 200)
    assert sd.n_classes == 3 and sd.cat_columns == ["c"] and sd.num_columns == ["x"]
