"""Source ``talent`` on generated folders in TALENT's exact layout."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.lib import format as npy_format

from tabbench.data.errors import DataError, SourceUnavailable
from tabbench.data.filtering import FilterParams, filter_dataset
from tabbench.data.sources import SourceOptions, fetch, plain_npy, talent


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


# --- what a .npy file may hold: plain values only, nothing run -----------------------------

class _Payload:
    """Unpickling it runs ``code`` (what a crafted object array would do)."""

    def __init__(self, code: str) -> None:
        self.code = code

    def __reduce__(self):
        return (exec, (self.code,))


def _object_npy(path: Path, pickled: bytes, shape: tuple[int, ...]) -> None:
    """An ``.npy`` file whose header announces an object array and whose body is ``pickled``."""
    with path.open("wb") as fh:
        npy_format.write_array_header_1_0(
            fh, {"descr": "|O", "fortran_order": False, "shape": shape})
        fh.write(pickled)


def _refused(tmp_path: Path, name: str) -> str:
    """The one-line reason the dataset is unavailable (nothing loaded)."""
    result = fetch(name, ["talent"], SourceOptions(talent_dir=tmp_path))
    assert result.raw is None
    reason = result.attempts[0]["reason"]
    assert "\n" not in reason and "C_train.npy is not loaded" in reason
    return reason


def test_a_pickled_payload_instead_of_an_array_runs_nothing(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path, "evil")
    marker = tmp_path / "payload-ran"
    payload = _Payload(f"open({str(marker)!r}, 'w').close()")
    _object_npy(folder / "C_train.npy", pickle.dumps(payload), (640, 2))
    reason = _refused(tmp_path, "evil")
    assert "builtins.exec" in reason
    assert not marker.exists()


def test_a_payload_hidden_among_strings_in_a_real_object_array_runs_nothing(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path, "evil")
    marker = tmp_path / "payload-ran"
    C = np.load(folder / "C_train.npy", allow_pickle=True)
    C[5, 1] = _Payload(f"open({str(marker)!r}, 'w').close()")
    np.save(folder / "C_train.npy", C, allow_pickle=True)
    _refused(tmp_path, "evil")
    assert not marker.exists()


def test_an_object_array_of_other_than_plain_values_is_refused(fx, tmp_path):
    folder = fx.make_talent_folder(tmp_path, "odd")
    C = np.load(folder / "C_train.npy", allow_pickle=True)
    C[0, 0] = {"a": 1}  # built by the pickle's own opcodes, no name needed
    np.save(folder / "C_train.npy", C, allow_pickle=True)
    assert "dict" in _refused(tmp_path, "odd")


def test_string_categoricals_load_with_every_row_as_numpy_1_and_2_write_them(fx, tmp_path):
    """TALENT's categorical files are object arrays of strings with NaN or None for missing;
    written by numpy 2 (np.save) and as numpy 1 writes them (protocol 3, module
    numpy.core.multiarray), they load whole."""
    folder = fx.make_talent_folder(tmp_path, "cats", n_num=2, n_cat=3, cat_missing=0.1, seed=5)
    C_val = np.load(folder / "C_val.npy", allow_pickle=True)
    C_val[0, 0], C_val[1, 1] = None, "a string with ümlauts"
    np.save(folder / "C_val.npy", C_val, allow_pickle=True)
    C_test = np.load(folder / "C_test.npy", allow_pickle=True)
    numpy1 = pickle.dumps(C_test, protocol=3).replace(b"cnumpy._core.multiarray\n",
                                                      b"cnumpy.core.multiarray\n")
    assert b"cnumpy.core.multiarray\n_reconstruct" in numpy1
    _object_npy(folder / "C_test.npy", numpy1, C_test.shape)
    raw = talent.load("cats", SourceOptions(talent_dir=tmp_path))
    assert raw.n_rows == 1000 and raw.cat_columns == ["C0", "C1", "C2"]
    expected = np.concatenate([np.load(folder / "C_train.npy", allow_pickle=True), C_val,
                               C_test])
    for j, column in enumerate(raw.cat_columns):
        got = raw.features[column].astype(object)
        missing = pd.isna(expected[:, j].astype(object))
        assert got.isna().tolist() == missing.tolist()
        assert got[~missing].astype(str).tolist() == expected[~missing, j].astype(str).tolist()
    assert raw.features["C1"].astype(object)[640 + 1] == "a string with ümlauts"


def test_numerical_and_label_arrays_are_read_without_pickle(fx, tmp_path, monkeypatch):
    fx.make_talent_folder(tmp_path, "num", n_num=3, n_cat=0)

    def no_unpickling(*args, **kwargs):
        raise AssertionError("a numeric array was unpickled")

    monkeypatch.setattr(pickle, "load", no_unpickling)
    monkeypatch.setattr(plain_npy, "PlainUnpickler", no_unpickling)
    assert talent.load("num", SourceOptions(talent_dir=tmp_path)).n_rows == 1000
