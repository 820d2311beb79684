"""Source ``talent`` on generated folders in TALENT's exact layout."""

from __future__ import annotations

import numpy as np
import pytest

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.sources import SourceOptions, talent


def test_concatenates_parts_numerical_categorical_missing(fx, tmp_path):
    folder = fx.make_talent_folder(
        tmp_path,
        "toy",
        sizes=(640, 160, 200),
        n_num=3,
        n_cat=2,
        num_missing=0.02,
        cat_missing=0.1,
        seed=3,
    )
    raw = talent.load("toy", SourceOptions(talent_dir=tmp_path))
    assert raw.n_rows == 1000
    assert raw.num_columns == ["N0", "N1", "N2"] and raw.cat_columns == ["C0", "C1"]
    # train, val, test in that order: the first rows are N_train's
    n_train = np.load(folder / "N_train.npy")
    np.testing.assert_array_equal(raw.features["N0"].to_numpy()[:640], n_train[:, 0])
    n_test = np.load(folder / "N_test.npy")
    np.testing.assert_array_equal(raw.features["N2"].to_numpy()[800:], n_test[:, 2])
    assert raw.features["C0"].dtype == "category"
    assert raw.features["C0"].isna().any() and raw.features["N0"].isna().any()
    assert raw.origin["talent_sizes"] == {"train": 640, "val": 160, "test": 200}
    out = filter_dataset(raw, FilterParams(min_rows=10), "toy")
    assert out.kept
    assert out.report["steps"][1]["rows_after"] < 1000  # numerical NaN rows dropped
    assert out.frame["C0"].isna().any()  # categorical NaN kept as missing


def test_numerical_only_and_categorical_only(fx, tmp_path):
    fx.make_talent_folder(tmp_path, "num", n_num=2, n_cat=0)
    fx.make_talent_folder(tmp_path, "cat", n_num=0, n_cat=2)
    opts = SourceOptions(talent_dir=tmp_path)
    assert talent.load("num", opts).cat_columns == []
    assert talent.load("cat", opts).num_columns == []


def test_unzipped_data_subfolder_is_found(fx, tmp_path):
    fx.make_talent_folder(tmp_path / "data", "toy")
    assert talent.load("toy", SourceOptions(talent_dir=tmp_path)).n_rows == 1000


def test_string_labels(fx, tmp_path):
    fx.make_talent_folder(tmp_path, "s", n_classes=3, labels_as_strings=True)
    raw = talent.load("s", SourceOptions(talent_dir=tmp_path))
    out = filter_dataset(raw, FilterParams(), "s")
    assert out.report["class_names"] == ["class_0", "class_1", "class_2"]


def test_missing_folder_and_no_dir_are_unavailable(tmp_path):
    with pytest.raises(SourceUnavailable, match="no talent_dir"):
        talent.load("x", SourceOptions())
    with pytest.raises(SourceUnavailable, match="no folder 'x'"):
        talent.load("x", SourceOptions(talent_dir=tmp_path))


def test_regression_task_is_a_clear_error(fx, tmp_path):
    fx.make_talent_folder(tmp_path, "r", task_type="regression")
    with pytest.raises(DataError, match="not a classification task"):
        talent.load("r", SourceOptions(talent_dir=tmp_path))


def test_empty_npy_file_is_a_clear_error(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path, "e")
    (folder / "y_val.npy").write_bytes(b"")
    with pytest.raises(DataError, match="cannot read .*y_val.npy"):
        talent.load("e", SourceOptions(talent_dir=tmp_path))


def test_missing_part_is_a_clear_error(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path, "p")
    (folder / "C_test.npy").unlink()
    with pytest.raises(DataError, match="lacks \\['C_test.npy'\\]"):
        talent.load("p", SourceOptions(talent_dir=tmp_path))
